"""Creating a communicator: the transports by name, and the one ``"auto"`` picks.

Examples:
    >>> comm = create_communicator("mpi")  # one process: rank 0 of 1
    >>> comm.rank, comm.size
    (0, 1)
"""

from __future__ import annotations

from typing import Any

from .communicator import Communicator
from .mpi import MpiCommunicator
from .nccl import NcclCommunicator, nccl_problem

__all__ = ["create_communicator"]

NAMES = ("mpi", "nccl", "auto")
"""The transport names ``create_communicator`` accepts."""


def create_communicator(
    name: str = "auto", mpi_comm: Any = None, *, timeout: float | None = None
) -> Communicator:
    """Join the processes started by ``mpiexec`` through a transport.

    Args:
        name: ``"mpi"`` (mpi4py; numpy arrays, and CuPy arrays where the MPI is CUDA-aware),
            ``"nccl"`` (CuPy arrays over NCCL, bootstrapped and with host arrays over MPI) or
            ``"auto"`` (NCCL when CuPy, NCCL and a GPU per rank are usable on every rank,
            else MPI).
        mpi_comm: the mpi4py communicator to build on; ``MPI.COMM_WORLD`` when None.
        timeout: seconds a collective waits for every rank before it raises
            ``TimeoutError`` naming the ranks that did not arrive (``math.inf``: forever);
            None reads the environment variable ``ZEROGRAD_DISTRIBUTED_TIMEOUT``, else 600.

    Returns:
        A ``Communicator`` (an ``MpiCommunicator`` or an ``NcclCommunicator``).

    Raises:
        ValueError: for an unknown ``name``, or a ``timeout`` that is not positive.
        TypeError: ``timeout`` is not a number.
        RuntimeError: for ``"nccl"`` where NCCL cannot be used (the message says why).

    Examples:
        >>> comm = create_communicator("mpi")
        >>> comm.allreduce_obj(1)
        1
    """
    if name not in NAMES:
        raise ValueError(
            f"create_communicator(name): name must be one of {', '.join(map(repr, NAMES))}, "
            f"got {name!r}."
        )
    mpi = MpiCommunicator(mpi_comm, timeout=timeout)
    # "auto" is decided by every rank together (they must all pick the same), once
    if name == "mpi" or (name == "auto" and nccl_problem(mpi) is not None):
        return mpi
    return NcclCommunicator(mpi, checked=name == "auto")
