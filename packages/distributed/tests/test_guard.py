"""``python -m zerograd_distributed.guard``: the child's status, signals passed on, the report.

These run the guard as a plain process (no mpiexec; the launch tests with three ranks are in
test_failure.py). Every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from mpi_launch import clean_env

from zerograd_distributed.guard import death_report, rank_of

WAIT = 30


def start(script: Path, env: dict | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "zerograd_distributed.guard", str(script)]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or clean_env()
    )


def wait_for(path: Path) -> str:
    deadline = time.monotonic() + WAIT
    while not path.exists() or not path.read_text().endswith("\n"):
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(0.02)
    return path.read_text().strip()


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")  # a zombie has ended; only its parent has not reaped it


def test_rank_and_size_come_from_the_launchers_variables():
    assert rank_of({"PMI_RANK": "3", "PMI_SIZE": "8"}) == ("3", "8")
    assert rank_of({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}) == ("1", "2")
    assert rank_of({"SLURM_PROCID": "5", "SLURM_NTASKS": "6"}) == ("5", "6")
    assert rank_of({"HOME": "/root"}) == ("?", "?")


def test_the_report_names_rank_signal_and_where_to_look():
    assert death_report("1", "4", 4242, "node1", signal.SIGKILL) == (
        "zerograd_distributed: rank 1 of 4 (pid 4242 on node1) was killed by signal 9 "
        "(SIGKILL) (nothing can catch it: `kill -9`, or the out-of-memory killer, whose "
        "choice the kernel's log records: `dmesg | grep -i 'killed process 4242'`). mpiexec "
        "ends the other ranks; its own report may name one of those, the first it ended."
    )
    line = death_report("?", "?", 7, "h", signal.SIGSEGV)
    assert line.startswith("zerograd_distributed: a process of unknown rank (pid 7 on h) was ")
    assert "signal 11 (SIGSEGV)." in line


def test_the_childs_exit_status_is_the_guards(tmp_path):
    script = tmp_path / "exits.py"
    script.write_text("import sys\nprint('child ran', sys.argv[1:])\nsys.exit(3)\n")
    cmd = [sys.executable, "-m", "zerograd_distributed.guard", str(script), "--flag", "x"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=WAIT, env=clean_env())
    assert done.returncode == 3
    assert done.stdout == "child ran ['--flag', 'x']\n" and done.stderr == ""


def test_without_a_script_it_prints_its_usage():
    cmd = [sys.executable, "-m", "zerograd_distributed.guard"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=WAIT, env=clean_env())
    assert done.returncode == 2
    assert done.stderr.startswith("usage: mpiexec -n N python -m zerograd_distributed.guard")


def test_a_child_killed_from_outside_is_reported_with_its_rank(tmp_path):
    script = tmp_path / "dies.py"
    script.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    env = {**clean_env(), "PMI_RANK": "2", "PMI_SIZE": "4"}
    guard = start(script, env)
    out, err = guard.communicate(timeout=WAIT)
    assert guard.returncode == 128 + signal.SIGKILL
    assert err.startswith("zerograd_distributed: rank 2 of 4 (pid ")
    assert "was killed by signal 9 (SIGKILL)" in err


PATIENT = """
import os, signal, sys, time
from pathlib import Path
def stop(signum, frame):
    print("child got", signal.Signals(signum).name, flush=True)
    time.sleep(0.5)  # a second signal now would run this again
    sys.exit(5)
if sys.argv[1] == "handle":
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
Path(sys.argv[2]).write_text(f"{os.getpid()}\\n")
time.sleep(120)
"""


@pytest.mark.parametrize(
    ("mode", "sig", "code", "said"),
    [
        ("handle", signal.SIGTERM, 5, "child got SIGTERM\n"),
        ("handle", signal.SIGINT, 5, "child got SIGINT\n"),
        ("default", signal.SIGTERM, 128 + signal.SIGTERM, ""),
    ],
)
def test_signals_to_the_guard_go_to_the_child_and_are_not_reported(tmp_path, mode, sig, code, said):
    script = tmp_path / "patient.py"
    script.write_text(textwrap.dedent(PATIENT))
    ready = tmp_path / "pid"
    cmd = [sys.executable, "-m", "zerograd_distributed.guard", str(script), mode, str(ready)]
    guard = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(ready)
    guard.send_signal(sig)
    out, err = guard.communicate(timeout=WAIT)
    assert (guard.returncode, out, err) == (code, said, "")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_does_not_outlive_its_killed_guard(tmp_path):
    script = tmp_path / "patient.py"
    script.write_text(textwrap.dedent(PATIENT))
    ready = tmp_path / "pid"
    cmd = [sys.executable, "-m", "zerograd_distributed.guard", str(script), "default", str(ready)]
    guard = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    child = int(wait_for(ready))
    assert alive(child)
    guard.kill()
    guard.wait(timeout=WAIT)
    deadline = time.monotonic() + WAIT
    while alive(child):
        assert time.monotonic() < deadline, "the child outlived its guard"
        time.sleep(0.02)


def read_all(master: int) -> bytes:
    out = b""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 1024)
        except OSError:  # the terminal closed: everything was read
            break
        if not chunk:
            break
        out += chunk
    return out


ASK = "from zerograd_distributed.guard import in_terminal_foreground as f; print(f())"

# What pty.fork() does, done by a fresh interpreter: this process has threads (MPI's, the
# BLAS's), and Python 3.12+ warns that forking it may deadlock the child. In a new session,
# opening the terminal makes it the controlling one; Ctrl-C then needs SIGINT's default.
IN_A_TERMINAL = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "fd = os.open(sys.argv[1], os.O_RDWR); [os.dup2(fd, i) for i in range(3)]; os.close(fd); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


def start_in_a_terminal(cmd: list[str]) -> tuple[subprocess.Popen, int]:
    """Run ``cmd`` as the session leader of a new pseudo-terminal; returns the process and
    the terminal's master end (the keyboard and the screen)."""
    master, slave = os.openpty()
    try:
        name = os.ttyname(slave)
        launch = [sys.executable, "-c", IN_A_TERMINAL, name, *cmd]
        # the child holds the terminal from the start: with no end open, reading fails
        proc = subprocess.Popen(
            launch, stdin=slave, stdout=slave, stderr=slave, start_new_session=True
        )
        return proc, master
    finally:
        os.close(slave)


def test_the_guard_knows_when_the_terminal_signals_the_child_itself():
    """At a terminal, Ctrl-C reaches the whole foreground group, the child too: the guard
    must not send a second SIGINT. Under mpiexec each rank has a session of its own."""
    pytest.importorskip("pty", reason="pseudo-terminals are POSIX's")
    proc, master = start_in_a_terminal([sys.executable, "-c", ASK])
    try:
        out = read_all(master)
        proc.wait(WAIT)
    finally:
        os.close(master)
    assert out.decode().strip() == "True"
    alone = subprocess.run(
        [sys.executable, "-c", ASK], capture_output=True, text=True, start_new_session=True,
        timeout=WAIT, check=True,
    )  # fmt: skip
    assert alone.stdout.strip() == "False"


def test_ctrl_c_at_a_terminal_ends_the_child_through_its_handler(tmp_path):
    pytest.importorskip("pty", reason="pseudo-terminals are POSIX's")
    script = tmp_path / "patient.py"
    script.write_text(textwrap.dedent(PATIENT))
    ready = tmp_path / "pid"
    cmd = [sys.executable, "-m", "zerograd_distributed.guard", str(script), "handle", str(ready)]
    proc, master = start_in_a_terminal(cmd)
    try:
        wait_for(ready)
        os.write(master, b"\x03")  # Ctrl-C, typed at the terminal
        out = read_all(master)
        status = proc.wait(WAIT)
    finally:
        os.close(master)
    assert status == 5
    assert out.decode().count("child got SIGINT") == 1, out


def test_the_guard_never_starts_mpi_itself():
    """If the guard imported mpi4py.MPI it would join the job as the rank, and its child,
    the real rank, could not."""
    probe = "import sys, zerograd_distributed.guard; print('mpi4py' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=WAIT,
        env=clean_env(), check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "False"
