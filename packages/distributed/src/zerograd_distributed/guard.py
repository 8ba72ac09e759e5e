"""Run one rank's script in a child process and say which rank died when a signal kills it.

A rank killed by ``kill -9`` or the out-of-memory killer can print nothing, and ``mpiexec``
names only the process it saw end, by process id (MPICH's report sometimes names a rank its
own clean-up had just ended). Started as ``mpiexec -n 4 python -m zerograd_distributed.guard
train.py --epochs 3``, each rank runs ``python train.py --epochs 3`` as its child and waits
for it. When the child dies of a signal that the guard did not pass on, the guard prints ::

    zerograd_distributed: rank 1 of 4 (pid 4242 on node1) was killed by signal 9 (SIGKILL) ...

and exits with 128 + the signal's number, so that ``mpiexec`` ends the other ranks as before.
Otherwise it exits with the child's status. The rank and size come from the launcher's
environment (MPICH's ``PMI_RANK``, Open MPI's ``OMPI_COMM_WORLD_RANK``, PMIx's ``PMIX_RANK``);
the child inherits every open file, so it joins the job exactly as the guard would have.
``SIGINT``, ``SIGTERM``, ``SIGHUP``, ``SIGUSR1`` and ``SIGUSR2`` sent to the guard go to the
child; on Linux the child is killed if the guard itself is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["death_report", "in_terminal_foreground", "main", "rank_of"]

RANK_VARIABLES = (
    "PMI_RANK",
    "OMPI_COMM_WORLD_RANK",
    "PMIX_RANK",
    "MV2_COMM_WORLD_RANK",
    "SLURM_PROCID",
)
SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS")
PASSED_ON = tuple(  # SIGHUP and SIGUSR1/2 do not exist on Windows
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2")
    if hasattr(signal, name)
)
USAGE = (
    "usage: mpiexec -n N python -m zerograd_distributed.guard SCRIPT [ARGS...]\n"
    "       (or -m MODULE [ARGS...]): runs `python SCRIPT ARGS` on every rank and names the\n"
    "       rank if a signal kills it."
)


def rank_of(env: Mapping[str, str]) -> tuple[str, str]:
    """The rank and the size the launcher gave this process, as text (``'?'`` if unknown).

    Args:
        env: an environment, usually ``os.environ``.

    Returns:
        ``(rank, size)``: ``('?', '?')`` outside a launcher this module knows.
    """
    rank = next((env[k] for k in RANK_VARIABLES if env.get(k)), "?")
    size = next((env[k] for k in SIZE_VARIABLES if env.get(k)), "?")
    return rank, size


def death_report(rank: str, size: str, pid: int, host: str, signum: int) -> str:
    """The line printed when a rank's process died of signal ``signum``.

    Args:
        rank: the rank, as :func:`rank_of` gives it.
        size: the number of ranks.
        pid: the dead process's id.
        host: the host it ran on.
        signum: the signal that ended it.

    Returns:
        One line naming the rank, the signal and the likely cause.
    """
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = "an unnamed signal"
    cause = ""
    if signum == signal.SIGKILL:
        cause = (
            " (nothing can catch it: `kill -9`, or the out-of-memory killer, whose choice "
            f"the kernel's log records: `dmesg | grep -i 'killed process {pid}'`)"
        )
    who = f"rank {rank} of {size}" if rank != "?" else "a process of unknown rank"
    return (
        f"zerograd_distributed: {who} (pid {pid} on {host}) was killed by signal {signum} "
        f"({name}){cause}. mpiexec ends the other ranks; its own report may name one of "
        f"those, the first it ended."
    )


def _die_with_parent() -> Callable[[], None] | None:
    """A child-side hook that makes the child get SIGKILL when the guard dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    pr_set_pdeathsig = 1
    guard = os.getpid()

    def hook() -> None:
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL))
        if os.getppid() != guard:  # the guard died before prctl took effect
            os._exit(1)

    return hook


def in_terminal_foreground() -> bool:
    """Whether this process group (the child's too) gets the terminal's Ctrl-C itself.

    Then the guard does not pass SIGINT on: the child has it already.

    Returns:
        True in the foreground of a terminal; False under ``mpiexec`` (each rank has a
        session of its own and no terminal) and without a terminal.
    """
    try:
        fd = os.open("/dev/tty", os.O_RDONLY)
    except OSError:
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python *argv`` as this rank's child; see the module's documentation.

    Args:
        argv: what follows ``python`` for the child (default: this process's arguments).

    Returns:
        The exit status: the child's, or 128 + the signal that killed it.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr)
        return 2 if not args else 0
    received: list[int] = []
    child = subprocess.Popen(
        [sys.executable, *args], close_fds=False, preexec_fn=_die_with_parent()
    )

    def pass_on(signum: int, frame: Any) -> None:
        received.append(signum)
        if signum == signal.SIGINT and in_terminal_foreground():
            return  # Ctrl-C at the terminal reached the child too: once is enough
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    for s in PASSED_ON:
        signal.signal(s, pass_on)
    code = child.wait()
    if code >= 0:
        return code
    if -code not in received:  # a signal from outside hit the child itself
        rank, size = rank_of(os.environ)
        report = death_report(rank, size, child.pid, socket.gethostname(), -code)
        print(report, file=sys.stderr, flush=True)
    return 128 - code


if __name__ == "__main__":
    sys.exit(main())
