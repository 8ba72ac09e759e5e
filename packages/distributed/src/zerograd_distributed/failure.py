"""One failing rank ends the run: abort every rank instead of leaving them waiting forever.

When a rank raises, the others sit in their next collective (an allreduce, a barrier)
waiting for it. ``abort_on_error`` (a context manager) and ``install_excepthook`` print which
rank failed and why, then call ``MPI_Abort``, which ends every rank's process.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .communicator import Communicator
from .mpi import MpiCommunicator

__all__ = ["abort_on_error", "install_excepthook"]


def _default(comm: Communicator | None) -> Communicator:
    if comm is not None:
        return comm
    return MpiCommunicator()


def abort_message(comm: Communicator, exc: BaseException) -> str:
    """Build the line printed before aborting every rank.

    Args:
        comm: the communicator (its rank and size are named).
        exc: the exception that ends the run.

    Returns:
        One line naming the rank, the error and what happens next.
    """
    return (
        f"zerograd_distributed: rank {comm.rank} of {comm.size} raised "
        f"{type(exc).__name__}: {exc}; aborting every rank (MPI_Abort) so that none waits "
        f"forever. The traceback above is rank {comm.rank}'s."
    )


def _abort(comm: Communicator, exc: BaseException) -> None:
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    print(abort_message(comm, exc), file=sys.stderr, flush=True)
    comm.abort(1)


@contextmanager
def abort_on_error(comm: Communicator | None = None) -> Iterator[Communicator]:
    """Abort every rank when the block raises on any one rank (a single rank re-raises).

    ``SystemExit`` with status 0 or None passes through untouched.

    Args:
        comm: the communicator to abort; MPI's world communicator when None.

    Yields:
        The communicator.

    Examples:
        >>> from zerograd_distributed import create_communicator
        >>> with abort_on_error(create_communicator("mpi")) as comm:
        ...     comm.size
        1
    """
    comm = _default(comm)
    try:
        yield comm
    except SystemExit as e:
        if e.code not in (0, None) and comm.size > 1:
            _abort(comm, e)
        raise
    except BaseException as e:
        if comm.size > 1:
            _abort(comm, e)
        raise


def install_excepthook(comm: Communicator | None = None) -> None:
    """Make an uncaught exception on any rank abort every rank (after the usual traceback).

    Args:
        comm: the communicator to abort; MPI's world communicator when None.
    """
    comm = _default(comm)
    previous = sys.excepthook

    def hook(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        if comm.size == 1:
            previous(kind, exc, tb)
            return
        _abort(comm, exc)

    sys.excepthook = hook
