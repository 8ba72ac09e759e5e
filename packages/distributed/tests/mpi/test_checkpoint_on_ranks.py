"""Checkpoints of a data-parallel run: rank 0 writes, every rank resumes the same run."""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np
import pytest

import zerograd_distributed.checkpoint as dist_ckpt
import zerograd_nn.checkpoint as nn_ckpt
import zerograd_nn.functional as F
from zerograd_distributed import DataParallelOptimizer, broadcast_params, scatter_dataset
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import Adam


@pytest.fixture
def shared_dir(comm):
    path = comm.bcast_obj(tempfile.mkdtemp() if comm.rank == 0 else None)
    yield path
    comm.barrier()
    if comm.rank == 0:
        shutil.rmtree(path, ignore_errors=True)


def _setup(comm, seed):
    np.random.seed(seed + comm.rank)  # every rank its own start
    model = MLP((8, 3))
    model(np.zeros((1, 4), np.float32))
    opt = DataParallelOptimizer(Adam(alpha=0.05), comm).setup(model)
    return model, opt


def _train(model, opt, x, t, shard, steps):
    for s in steps:
        idx = shard.indices[s * 3 : (s + 1) * 3]
        loss = F.softmax_cross_entropy(model(x[idx]), t[idx])
        model.cleargrads()
        loss.backward()
        opt.update()


def test_resume_continues_the_same_run_on_every_rank(comm, shared_dir, monkeypatch):
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((60, 4)).astype(np.float32), rng.integers(0, 3, 60)
    shard = scatter_dataset(np.arange(60), comm, seed=2)
    model, opt = _setup(comm, 10)
    broadcast_params(model, comm)
    _train(model, opt, x, t, shard, range(3))

    writes = []
    real = nn_ckpt.save_checkpoint
    spy = lambda *a, **k: writes.append(1) or real(*a, **k)  # noqa: E731
    monkeypatch.setattr(nn_ckpt, "save_checkpoint", spy)
    path = dist_ckpt.save_checkpoint(
        comm, os.path.join(shared_dir, "run"), model=model, optimizer=opt, epoch=1, iteration=3
    )
    assert writes == ([1] if comm.rank == 0 else [])  # only rank 0 wrote
    assert path.endswith("run.npz") and os.path.isfile(path)
    _train(model, opt, x, t, shard, range(3, 6))
    uninterrupted = [p.data.copy() for p in model.params()]

    resumed, ropt = _setup(comm, 99)  # other start values, no broadcast: the file decides
    info = dist_ckpt.load_checkpoint(comm, path, model=resumed, optimizer=ropt)
    assert (info["epoch"], info["iteration"]) == (1, 3)
    _train(resumed, ropt, x, t, shard, range(3, 6))
    for a, b in zip(resumed.params(), uninterrupted):
        np.testing.assert_allclose(a.data, b, rtol=1e-6, atol=1e-7)


def test_a_failed_write_is_reported_on_every_rank(comm, shared_dir):
    model, _ = _setup(comm, 0)
    where = os.path.join(shared_dir, "no", "such", "dir", "ckpt")
    error = FileNotFoundError if comm.rank == 0 else RuntimeError
    with pytest.raises(error, match=r"(rank 0 could not write|dir)"):
        dist_ckpt.save_checkpoint(comm, where, model=model)


def test_a_file_some_rank_cannot_see_changes_nothing(comm, shared_dir):
    model, opt = _setup(comm, 0)
    path = dist_ckpt.save_checkpoint(comm, os.path.join(shared_dir, "a"), model=model)
    before = [p.data.copy() for p in model.params()]
    elsewhere = os.path.join(shared_dir, "elsewhere.npz")  # not there
    if comm.size == 1:
        mine, want = elsewhere, r"ranks \[0\] cannot see"
    else:  # rank 0 sees the file, the others look elsewhere
        mine, want = (path if comm.rank == 0 else elsewhere), r"ranks \[1(, 2)?\] cannot see"
    with pytest.raises(FileNotFoundError, match=want):
        dist_ckpt.load_checkpoint(comm, mine, model=model)
    for p, b in zip(model.params(), before):
        np.testing.assert_array_equal(p.data, b)


def test_a_file_damaged_on_one_rank_changes_nothing_on_any_rank(comm, shared_dir):
    """Each rank reads its own copy (a disk of its own): the last rank's is cut short. No
    rank may take the checkpoint then, or the ranks would train on different parameters."""
    model, opt = _setup(comm, 0)
    broadcast_params(model, comm)
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((60, 4)).astype(np.float32), rng.integers(0, 3, 60)
    _train(model, opt, x, t, scatter_dataset(np.arange(60), comm, seed=2), range(2))
    good = os.path.join(shared_dir, "good")
    path = dist_ckpt.save_checkpoint(comm, good, model=model, optimizer=opt)
    mine = os.path.join(shared_dir, f"copy{comm.rank}.npz")
    with open(path, "rb") as f:
        data = f.read()
    last = comm.rank == comm.size - 1
    with open(mine, "wb") as f:
        f.write(data[: len(data) // 2] if last else data)
    comm.barrier()

    target, topt = _setup(comm, 7 + comm.rank)  # another start on every rank
    before = [p.data.copy() for p in target.params()]
    steps_before = topt.optimizer.t
    if last:
        with pytest.raises(Exception, match=r"copy\d\.npz"):
            dist_ckpt.load_checkpoint(comm, mine, model=target, optimizer=topt)
    else:
        want = rf"rank {comm.size - 1}: .*no rank loaded it, so every rank is as it was"
        with pytest.raises(RuntimeError, match=want):
            dist_ckpt.load_checkpoint(comm, mine, model=target, optimizer=topt)
    for p, b in zip(target.params(), before):
        np.testing.assert_array_equal(p.data, b)
    assert topt.optimizer.t == steps_before
