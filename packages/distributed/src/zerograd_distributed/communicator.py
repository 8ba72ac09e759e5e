"""The communicator interface every transport implements, and the factory that picks one.

A communicator joins the processes started by ``mpiexec``: each has a ``rank`` in
``range(size)``. Lowercase methods move Python objects (pickled); the array methods move
arrays through the transport's buffers, without pickling.

>>> comm = create_communicator("mpi")  # one process: rank 0 of 1
>>> comm.rank, comm.size
(0, 1)
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["Communicator", "create_communicator", "OPS"]

#: reduction names accepted by ``allreduce`` and ``allreduce_obj``
OPS = ("sum", "prod", "max", "min", "mean")

NAMES = ("mpi", "nccl", "auto")


class Communicator:
    """Base class: rank, size and the collective operations (subclasses implement them).

    Attributes:
        rank: this process's index, ``0 <= rank < size``.
        size: the number of processes.
        name: the transport (``"mpi"``, ``"nccl"``).
    """

    name = ""

    def __init__(self, rank: int, size: int) -> None:
        self.rank = rank
        self.size = size
        # parameters whose data came from the root already (see broadcast_params)
        self._synced: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} rank {self.rank} of {self.size}>"

    def _check_op(self, method: str, op: str) -> None:
        if op not in OPS:
            raise ValueError(
                f"{type(self).__name__}.{method}: op must be one of {', '.join(OPS)}, got {op!r}."
            )

    def _check_root(self, method: str, root: int) -> None:
        if not isinstance(root, int) or not 0 <= root < self.size:
            raise ValueError(
                f"{type(self).__name__}.{method}: root must be a rank in 0..{self.size - 1}, "
                f"got {root!r}."
            )

    # -- Python objects ------------------------------------------------------------------

    def barrier(self) -> None:
        """Wait until every rank has called ``barrier``."""
        raise NotImplementedError

    def bcast_obj(self, obj: Any, root: int = 0) -> Any:
        """``root``'s ``obj`` on every rank (the others' ``obj`` is ignored)."""
        raise NotImplementedError

    def allreduce_obj(self, obj: Any, op: str = "sum") -> Any:
        """``obj`` (a number or anything ``+``-able for ``"sum"``) reduced over every rank."""
        raise NotImplementedError

    def allgather_obj(self, obj: Any) -> list:
        """Every rank's ``obj``, in rank order, on every rank."""
        raise NotImplementedError

    def scatter_obj(self, objs: Any, root: int = 0) -> Any:
        """Item ``rank`` of ``root``'s sequence ``objs`` (of length ``size``) on each rank."""
        raise NotImplementedError

    # -- arrays --------------------------------------------------------------------------

    def bcast(self, x: Any, root: int = 0) -> Any:
        """``root``'s array ``x`` on every rank (the others may pass ``None``)."""
        raise NotImplementedError

    def allreduce(self, x: Any, op: str = "sum", *, inplace: bool = False) -> Any:
        """The elementwise reduction of every rank's ``x`` (same shape and dtype everywhere).

        With ``inplace=True`` the result is written into ``x`` and ``x`` is returned.
        """
        raise NotImplementedError

    def allgather(self, x: Any) -> Any:
        """Every rank's ``x`` stacked on a new first axis: shape ``(size, *x.shape)``."""
        raise NotImplementedError

    def scatter(self, x: Any, root: int = 0) -> Any:
        """``root``'s array split along its first axis into ``size`` near-equal parts (as
        ``numpy.array_split`` does); each rank gets part ``rank``. The others pass ``None``."""
        raise NotImplementedError

    def abort(self, code: int = 1) -> None:
        """End every rank's process now (used when one rank fails; see ``abort_on_error``)."""
        raise NotImplementedError


def create_communicator(name: str = "auto", mpi_comm: Any = None) -> Communicator:
    """Join the processes started by ``mpiexec`` through a transport.

    Args:
        name: ``"mpi"`` (mpi4py; numpy arrays, and CuPy arrays where the MPI is CUDA-aware),
            ``"nccl"`` (CuPy arrays over NCCL, bootstrapped and with host arrays over MPI) or
            ``"auto"`` (NCCL when CuPy, a GPU and NCCL are usable here, else MPI).
        mpi_comm: the mpi4py communicator to build on; ``MPI.COMM_WORLD`` when None.

    Returns:
        A :class:`Communicator`.

    Raises:
        ValueError: for an unknown ``name``.
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
    from .mpi import MpiCommunicator
    from .nccl import NcclCommunicator, nccl_unavailable_reason

    if name == "auto":
        name = "nccl" if nccl_unavailable_reason() is None else "mpi"
    mpi = MpiCommunicator(mpi_comm)
    if name == "mpi":
        return mpi
    return NcclCommunicator(mpi)
