"""Ranks that stop at different times end the run with one clear error, never a hang.

Each test launches ``mpiexec`` on a small training script in which the ranks fall out of
step the ways users meet: one more ``update()`` on one rank, ``pad=False`` shards of
unequal length, early stopping decided on each rank's own validation, an exception on one
rank without ``abort_on_error``, a rank that computes while the others wait. Each used to
wait forever (``abort_on_error`` included: nothing raised). Now every launch must end
with a nonzero status, within ``HANG`` seconds (a bound on a hang on a loaded 2-core
machine, not a timing: the runs take seconds), printing what went wrong.
"""

from __future__ import annotations

import re
import textwrap

import pytest
from mpi_launch import run

HANG = 60

SCRIPT = """
import sys
import time

import numpy as np

import zerograd_nn.functional as F
from zerograd_distributed import (
    DataParallelOptimizer,
    abort_on_error,
    broadcast_params,
    create_communicator,
    evaluate,
    scatter_dataset,
)
from zerograd_nn import DataLoader
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import SGD
from zerograd_nn.training import EarlyStopping, Trainer

case, guarded = sys.argv[1], sys.argv[2] == "guarded"
timeout = {"timeout": float(sys.argv[3])} if len(sys.argv) > 3 else {}
comm = create_communicator("mpi", **timeout)
x = np.random.default_rng(comm.rank).random((8, 3), dtype=np.float32)
t = (x.sum(axis=1) > 1.5).astype(np.int64)
data = list(zip(np.linspace(0, 1, 27, dtype=np.float32).reshape(9, 3), [0, 1] * 4 + [0]))


def model_and_optimizer():
    model = MLP((4, 2))
    model(np.zeros((1, 3), np.float32))
    broadcast_params(model, comm)
    return model, DataParallelOptimizer(SGD(lr=0.1), comm).setup(model)


def step(model, optimizer, xb, tb):
    loss = F.softmax_cross_entropy(model(xb), tb)
    model.cleargrads()
    loss.backward()
    optimizer.update()


def accuracy(model):
    return evaluate(comm, lambda xb, tb: {"acc": F.accuracy(model(xb), tb)}, [(x, t)])


def extra_update():
    model, optimizer = model_and_optimizer()
    for _ in range(3 + (comm.rank == 0)):  # rank 0 updates once more
        step(model, optimizer, x, t)
    accuracy(model)


def unequal_shards():
    model, optimizer = model_and_optimizer()
    shard = scatter_dataset(data, comm, pad=False)  # 5 examples on rank 0, 4 on rank 1
    for epoch in range(2):
        for xb, tb in DataLoader(shard, batch_size=2):  # 3 batches on rank 0, 2 on rank 1
            step(model, optimizer, xb, tb)


def early_stopping():
    model, optimizer = model_and_optimizer()
    trainer = Trainer(model, optimizer, DataLoader(list(zip(x, t)), batch_size=4), max_epochs=5)
    own = [3.0, 2.0, 1.0, 0.5, 0.2] if comm.rank == 0 else [3.0, 3.5, 4.0, 4.5, 5.0]

    def own_validation(trainer):  # each rank's own validation loss: rank 1's gets worse
        trainer.observation["val/loss"] = own[trainer.epoch - 1]

    trainer.extend(own_validation, trigger=(1, "epoch"), priority=300)
    trainer.extend(EarlyStopping(patience=0))
    trainer.run()
    print(f"rank {comm.rank} trained {trainer.epoch} epochs", flush=True)
    accuracy(model)


def uncaught():
    if comm.rank == 1:
        raise ValueError("boom on rank one")
    comm.barrier()


def absent():
    if comm.rank == 1:
        time.sleep(300)  # computes alone while the others wait
    comm.barrier()


def caught():
    try:
        extra_update()
    except RuntimeError as e:
        print(f"rank {comm.rank} caught: {str(e)[:60]}", flush=True)
    try:
        comm.barrier()
    except RuntimeError as e:
        print(f"rank {comm.rank} again: {e}", flush=True)


def fails_inside_update():
    model, optimizer = model_and_optimizer()
    if comm.rank == 1:  # fails after the ranks agreed to average, before its allreduce

        def no_memory(scale=None):
            raise MemoryError("no memory for the flat gradient buffer")

        optimizer.optimizer.lend_gradients = no_memory
    step(model, optimizer, x, t)


def hook_fails_on_one_rank():
    model, optimizer = model_and_optimizer()
    calls = []

    def flaky(params):  # a hook of the wrapped optimizer: it runs after the averaging
        calls.append(1)
        if comm.rank == 1 and len(calls) == 2:
            raise RuntimeError("flaky hook on rank one")

    optimizer.add_hook(flaky)
    for _ in range(4):
        try:
            step(model, optimizer, x, t)
        except RuntimeError as e:  # skip the step, as a user retrying would
            print(f"rank {comm.rank} skipped a step: {e}", flush=True)
    if comm.rank == 1:
        time.sleep(3)  # let rank 0 print its error before rank 1's end aborts the run
    same = comm.allgather(model.l0.W.data)
    print(f"rank {comm.rank}: ranks equal {all((a == same[0]).all() for a in same)}", flush=True)


CASES = {
    f.__name__: f
    for f in (
        extra_update, unequal_shards, early_stopping, uncaught, absent, caught,
        fails_inside_update, hook_fails_on_one_rank,
    )
}  # fmt: skip
if guarded:
    with abort_on_error(comm):
        CASES[case]()
else:
    CASES[case]()
print(f"rank {comm.rank} finished its script", flush=True)
"""

OUT_OF_STEP = "the ranks are out of step: they reached different collectives ("
UPDATE = r"allgather_obj in DataParallelOptimizer\.update\(\) \(its collective #(\d+)\)"


def _launch(tmp_path, n, case, *args):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    code, out, _ = run(n, script, case, *args, timeout=HANG)
    assert code != 0, out[-3000:]
    return out


@pytest.mark.parametrize("guarded", ["plain", "guarded"])
def test_one_more_update_on_one_rank(tmp_path, guarded):
    out = _launch(tmp_path, 2, "extra_update", guarded)
    found = re.search(
        rf"rank 0: {UPDATE}; rank 1: allgather_obj in mean_over_ranks\(\) \(its collective "
        r"#(\d+)\)\)\. Every rank must call the same collectives in the same order",
        out,
    )
    assert found and found.group(1) == found.group(2), out[-3000:]
    assert "one more update() on one rank" in out  # the advice names the causes
    if guarded == "guarded":  # abort_on_error reports a rank's error, then aborts them all
        assert re.search(r"rank [01] of 2 raised RuntimeError: the ranks are out of step", out)
    assert "finished its script" not in out


def test_training_on_unequal_pad_false_shards(tmp_path):
    out = _launch(tmp_path, 2, "unequal_shards", "plain")
    # rank 1 ran out of batches and ended while rank 0 was averaging its fifth update
    found = re.search(
        rf"rank 0: {UPDATE}; rank 1: the end of the program \(its collective #(\d+)\)", out
    )
    assert found and found.group(1) == found.group(2), out[-3000:]
    assert "rank 0 finished its script" not in out
    assert "scatter_dataset(..., pad=False) shards of unequal length" in out


def test_early_stopping_on_each_ranks_own_validation(tmp_path):
    out = _launch(tmp_path, 2, "early_stopping", "guarded")
    assert "rank 1 trained 2 epochs" in out, out[-3000:]  # rank 1 stopped; rank 0 went on
    found = re.search(rf"rank 0: {UPDATE}; rank 1: allgather_obj in mean_over_ranks\(\)", out)
    assert found, out[-3000:]
    assert "early stopping decided on each rank's own metric" in out
    assert "finished its script" not in out


def test_an_uncaught_error_on_one_rank_without_abort_on_error(tmp_path):
    out = _launch(tmp_path, 2, "uncaught", "plain")
    assert "ValueError: boom on rank one" in out  # rank 1's own traceback
    assert (
        "(rank 0: barrier (its collective #0); rank 1: the end of the program (its collective "
        "#0, after an uncaught ValueError: boom on rank one))"
    ) in out, out[-3000:]
    assert "finished its script" not in out


def test_a_rank_that_never_arrives_is_named_after_the_timeout(tmp_path):
    """Rank 1 computes for 300 s; ranks 0 and 2 wait 2 s in a barrier, then every rank ends."""
    out = _launch(tmp_path, 3, "absent", "plain", "2")
    found = re.search(
        r"barrier \(collective #0 of this communicator\) timed out on rank ([02]) after "
        r"(\d+\.\d) s\. Did not arrive: rank 1 did not answer \(it is still computing, has "
        r"ended, or waits outside this communicator's collectives\)\. Arrived: ranks 0, 2\. ",
        out,
    )
    assert found and float(found.group(2)) >= 2.0, out[-3000:]
    assert "ZEROGRAD_DISTRIBUTED_TIMEOUT" in out  # how to wait longer
    assert "ends every rank (MPI_Abort)" in out
    assert "finished its script" not in out


def test_after_a_caught_error_the_communicator_refuses_and_the_run_still_ends(tmp_path):
    out = _launch(tmp_path, 2, "caught", "plain")
    # both ranks catch it; the first to end aborts the other, whose output may be cut
    assert re.search(rf"rank [01] caught: {re.escape(OUT_OF_STEP[:50])}", out), out[-3000:]
    assert re.search(
        r"rank [01] again: barrier: this communicator cannot be used again: an earlier "
        r"collective failed \(the ranks are out of step",
        out,
    )
    # the script ends normally, yet the exit status is not 0: the ranks were out of step
    assert re.search(r"rank [01] finished its script", out)
    assert re.search(r"rank [01] of 2 ends every rank \(MPI_Abort\): its communicator failed", out)


@pytest.mark.parametrize("n", [2, 3])
def test_a_rank_failing_inside_update_after_the_agreement(tmp_path, n):
    """Rank 1 raises inside update() once the ranks agreed to average: the others already
    wait in the gradients' allreduce, which MPI paired with rank 1's next collective (its
    end of the program): they averaged garbage into their weights and went on, or failed
    on a size read from it ("Unable to allocate 6.34 EiB"). Now rank 1 tells them before
    its error leaves update(), and its end aborts the run: each other rank raises, naming
    rank 1's error, unless the abort ends it first."""
    out = _launch(tmp_path, n, "fails_inside_update", "plain", "30")
    assert "MemoryError: no memory for the flat gradient buffer" in out, out[-3000:]
    assert (
        f"rank 1 of {n} ends every rank (MPI_Abort): its communicator failed at collective "
    ) in out, out[-3000:]
    told = re.findall(
        r"RuntimeError: allreduce_sum_inplace in DataParallelOptimizer\.update\(\) "
        r"\(collective #\d+\) stopped on rank (\d): rank 1 gave up on the ranks and "
        r"stopped, so this rank stops too\. Rank 1 said: rank 1 stopped after "
        r"allgather_obj in DataParallelOptimizer\.update\(\) \(collective #\d+\): "
        r"MemoryError: no memory for the flat gradient buffer, raised after the ranks "
        r"agreed to average",
        out,
    )
    assert set(told) <= {str(r) for r in range(n) if r != 1}, out[-3000:]
    assert out.count("RuntimeError") == len(told), out[-3000:]  # no other error
    assert "Unable to allocate" not in out and "EiB" not in out
    assert "finished its script" not in out


def test_a_hook_failing_on_one_rank_stops_every_rank(tmp_path):
    """The wrapped optimizer's update raised on rank 1 alone (a hook), after the ranks
    averaged; rank 0 had updated, rank 1 had not. A script that caught the error and went on
    trained ranks whose weights differed, in silence, to the end. Now rank 1 tells the
    others before its error leaves update(): rank 0 raises at its next collective, quoting
    it, and the run ends with a nonzero status."""
    out = _launch(tmp_path, 2, "hook_fails_on_one_rank", "plain", "30")
    assert "rank 1 skipped a step: flaky hook on rank one" in out, out[-3000:]
    assert re.search(
        r"rank 0 skipped a step: allgather_obj in DataParallelOptimizer\.update\(\) "
        r"\(collective #\d+\) stopped on rank 0: rank 1 gave up on the ranks and stopped, so "
        r"this rank stops too\. Rank 1 said: rank 1 stopped after allreduce_sum_inplace in "
        r"DataParallelOptimizer\.update\(\) \(collective #\d+\): RuntimeError: flaky hook "
        r"on rank one, raised by its optimizer's update\(\) after the ranks averaged the "
        r"gradients \(the ranks that did not raise have updated, so the ranks' parameters "
        r"may differ\)",
        out,
    ), out[-3000:]
    assert "ranks equal" not in out, out[-3000:]
    assert re.search(r"rank [01] of 2 ends every rank \(MPI_Abort\): its communicator failed", out)
