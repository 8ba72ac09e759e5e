"""A rank that raises ends the whole run instead of hanging, saying which rank and why.

Each test launches ``mpiexec -n 2`` on a small script where rank 1 raises while rank 0
waits in a collective that would otherwise never complete. A run still going after
``HANG`` seconds has hung: the launch's timeout fails the test (the runs take seconds; the
bound is generous for a loaded 2-core machine, and times nothing).
"""

from __future__ import annotations

import os
import re
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from mpi_launch import run

from zerograd_distributed import abort_on_error, create_communicator
from zerograd_distributed.pipes import unread_bytes, wait_until_read

HANG = 60

CONTEXT = """
from zerograd_distributed import abort_on_error, create_communicator
comm = create_communicator("mpi")
with abort_on_error(comm):
    if comm.rank == 1:
        raise ValueError("boom on rank one")
    comm.barrier()  # rank 0 waits here for rank 1, which never comes
print("UNREACHABLE", comm.rank)
"""

HOOK = """
from zerograd_distributed import create_communicator, install_excepthook
comm = create_communicator("mpi")
install_excepthook(comm)
if comm.rank == 1:
    raise KeyError("missing on rank one")
comm.allreduce_obj(1)
print("UNREACHABLE", comm.rank)
"""


@pytest.mark.parametrize(
    "source, message",
    [
        (CONTEXT, "rank 1 of 2 raised ValueError: boom on rank one; aborting every rank"),
        (HOOK, "rank 1 of 2 raised KeyError: 'missing on rank one'; aborting every rank"),
    ],
    ids=["abort_on_error", "install_excepthook"],
)
def test_one_rank_raising_ends_the_run(tmp_path, source, message):
    script = tmp_path / "fails.py"
    script.write_text(textwrap.dedent(source))
    code, out, _ = run(2, script, timeout=HANG)
    assert code != 0
    assert message in out
    assert "UNREACHABLE" not in out


def test_one_rank_reraises_instead_of_aborting():
    comm = create_communicator("mpi")
    with pytest.raises(ValueError, match="alone"):
        with abort_on_error(comm):
            raise ValueError("alone")
    with abort_on_error() as world:
        assert world.size == 1


DIRECT = """
from zerograd_distributed import create_communicator
comm = create_communicator("mpi")
if comm.rank == 1:
    for i in range(2000):
        print(f"line {i} of rank one's report")
    print("last words of rank one")
    comm.abort(3)
comm.barrier()
"""


def test_every_launch_keeps_its_output_under_load(tmp_path):
    """Four launches at once on a small machine. MPI_Abort used to tear the launcher down
    before it had read the failing rank's output. Half the launches go through
    ``install_excepthook``, half print 2,000 lines and call ``comm.abort`` directly; without
    the wait, 4 runs of this test in 4 failed, 1 to 4 launches of 24 losing output."""
    scripts = []
    for name, source, line in [
        ("hook.py", HOOK, "rank 1 of 2 raised KeyError: 'missing on rank one'; aborting every"),
        ("direct.py", DIRECT, "last words of rank one"),
    ]:
        (tmp_path / name).write_text(textwrap.dedent(source))
        scripts.append((tmp_path / name, line))
    jobs = [scripts[i % 2] for i in range(24)]
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda job: run(2, job[0], timeout=HANG), jobs))
    lost = [out for (code, out, _), (_, line) in zip(outs, jobs) if line not in out or code == 0]
    assert not lost, f"{len(lost)} of 24 launches lost their output; first ends {lost[0][-300:]!r}"


def test_the_abort_waits_until_the_pipe_is_read():
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"traceback\n")
        assert unread_bytes(write_end) == 10
        got = []
        reader = threading.Timer(0.2, lambda: got.append(os.read(read_end, 100)))
        t0 = time.monotonic()
        reader.start()
        assert wait_until_read((write_end,), timeout=10)
        assert time.monotonic() - t0 >= 0.15
        assert unread_bytes(write_end) == 0
        reader.join()  # the read has returned; its append may not have run yet
        assert got == [b"traceback\n"]
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_abort_does_not_hang_on_a_pipe_nobody_reads(tmp_path):
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"x")
        t0 = time.monotonic()
        assert wait_until_read((write_end,), timeout=0.1) is False
        assert 0.1 <= time.monotonic() - t0 < 5
    finally:
        os.close(read_end)
        os.close(write_end)
    with open(tmp_path / "log", "w") as f:
        f.write("not a pipe")
        f.flush()
        assert unread_bytes(f.fileno()) == 0
        assert wait_until_read((f.fileno(),), timeout=5)


KILLED = """
import os, signal
from zerograd_distributed import abort_on_error, create_communicator
comm = create_communicator("mpi")
with abort_on_error(comm):
    print(f"rank {comm.rank} is pid {os.getpid()}", flush=True)
    comm.barrier()
    if comm.rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)  # as the out-of-memory killer does
    comm.allreduce_obj(1)  # the other ranks wait here for rank one
print("UNREACHABLE", comm.rank)
"""


def test_under_the_guard_a_killed_rank_is_named_by_its_rank(tmp_path):
    """Eight launches of three ranks, four at once: each names rank 1, and only rank 1.

    Without the guard, MPICH names the first process it saw end; under the guard, that is
    always another rank's guard, ended by its clean-up, while the guard's line is right."""
    script = tmp_path / "killed.py"
    script.write_text(textwrap.dedent(KILLED))
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda _: run(3, script, timeout=HANG, guard=True), range(8)))
    for code, out, _ in outs:
        assert code != 0 and "UNREACHABLE" not in out, out[-2000:]
        pids = dict(re.findall(r"rank (\d) is pid (\d+)", out))
        reports = re.findall(r"zerograd_distributed: rank (\d) of 3 \(pid (\d+) on ", out)
        assert reports == [("1", pids["1"])], out[-2000:]
        assert "was killed by signal 9 (SIGKILL)" in out


def test_a_rank_killed_by_sigkill_ends_the_run(tmp_path):
    """A killed rank can say nothing; mpiexec ends the others and names its process."""
    script = tmp_path / "killed.py"
    script.write_text(textwrap.dedent(KILLED))
    code, out, _ = run(3, script, timeout=HANG)
    assert code != 0 and "UNREACHABLE" not in out
    pids = dict(re.findall(r"rank (\d) is pid (\d+)", out))  # ranks' lines may interleave
    reported = re.search(r"PID (\d+) RUNNING AT", out)
    assert "BAD TERMINATION" in out and reported, out[-2000:]
    # MPICH names the process whose end it noticed first: rank 1's, or (about 1 run in 12
    # on a 2-core machine) a rank its own cleanup had just killed. Either way one of the job.
    assert reported.group(1) in set(pids.values()) and len(pids) == 3, out[-2000:]
    assert "Killed (signal 9)" in out
