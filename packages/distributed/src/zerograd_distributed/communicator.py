"""The communicator interface every transport implements, and the factory that picks one.

A communicator joins the processes started by ``mpiexec``: each has a ``rank`` in
``range(size)``. Lowercase methods move Python objects (pickled); the array methods move
arrays through the transport's buffers, without pickling.

Examples:
    >>> comm = create_communicator("mpi")  # one process: rank 0 of 1
    >>> comm.rank, comm.size
    (0, 1)
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["Communicator", "create_communicator", "OPS"]

OPS = ("sum", "prod", "max", "min", "mean")
"""The reduction names ``allreduce`` and ``allreduce_obj`` accept."""

NAMES = ("mpi", "nccl", "auto")
"""The transport names ``create_communicator`` accepts."""


class Communicator:
    """Base class: rank, size and the collective operations (subclasses implement them).

    Every collective must be called by every rank, in the same order. The methods here
    raise ``NotImplementedError``; ``MpiCommunicator`` and ``NcclCommunicator`` implement
    them.

    Args:
        rank: this process's index.
        size: the number of processes.

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

    def _mean(self, total: Any) -> Any:
        """``total / size``: in place for a float or complex array, a new float one for ints."""
        if total.dtype.kind in "fc":
            total /= self.size
            return total
        return total / self.size  # an integer mean is a float array, never truncated

    # -- Python objects ------------------------------------------------------------------

    def barrier(self) -> None:
        """Wait until every rank has called ``barrier``."""
        raise NotImplementedError

    def bcast_obj(self, obj: Any, root: int = 0) -> Any:
        """Broadcast a Python object from ``root`` (pickled).

        Args:
            obj: the object to send; ignored on the other ranks.
            root: the rank that sends.

        Returns:
            ``root``'s ``obj``, on every rank.

        Raises:
            ValueError: ``root`` is not a rank.
        """
        raise NotImplementedError

    def allreduce_obj(self, obj: Any, op: str = "sum") -> Any:
        """Reduce a Python object over every rank (pickled).

        Args:
            obj: a number, or anything ``+``-able for ``"sum"``.
            op: one of ``OPS``; ``"mean"`` divides the sum by ``size``.

        Returns:
            The reduction, on every rank.

        Raises:
            ValueError: ``op`` is not one of ``OPS``.
        """
        raise NotImplementedError

    def allgather_obj(self, obj: Any) -> list:
        """Gather a Python object from every rank (pickled).

        Args:
            obj: this rank's object.

        Returns:
            Every rank's ``obj`` in rank order, on every rank.
        """
        raise NotImplementedError

    def scatter_obj(self, objs: Any, root: int = 0) -> Any:
        """Send item ``i`` of ``root``'s sequence to rank ``i`` (pickled).

        Args:
            objs: on ``root``, a sequence of ``size`` items; ignored on the other ranks.
            root: the rank that sends.

        Returns:
            Item ``rank`` of ``objs``.

        Raises:
            ValueError: ``root`` is not a rank, or ``objs`` does not hold ``size`` items
                (raised on every rank; nothing is sent).
        """
        raise NotImplementedError

    # -- arrays --------------------------------------------------------------------------

    def bcast(self, x: Any, root: int = 0) -> Any:
        """Broadcast an array from ``root``.

        Args:
            x: the array to send on ``root``; the other ranks may pass ``None``.
            root: the rank that sends.

        Returns:
            ``root``'s array, on every rank (``root`` gets its own ``x`` back).

        Raises:
            ValueError: ``root`` is not a rank.
            TypeError: the transport cannot move ``root``'s array (on every rank).
        """
        raise NotImplementedError

    def allreduce(self, x: Any, op: str = "sum", *, inplace: bool = False) -> Any:
        """Reduce every rank's array elementwise.

        Args:
            x: this rank's array; every rank passes the same shape and dtype.
            op: one of ``OPS``; ``"mean"`` divides the sum by ``size`` (integer arrays give
                a float mean).
            inplace: write the result into ``x`` and return ``x``.

        Returns:
            The reduced array, on every rank.

        Raises:
            ValueError: ``op`` is not one of ``OPS``, or the ranks' shapes or dtypes differ
                (raised on every rank, nothing is sent).
            TypeError: the transport cannot move ``x``.
        """
        raise NotImplementedError

    def allgather(self, x: Any) -> Any:
        """Gather every rank's array, stacked on a new first axis.

        Args:
            x: this rank's array; every rank passes the same shape and dtype.

        Returns:
            An array of shape ``(size, *x.shape)``, on every rank.

        Raises:
            ValueError: the ranks' shapes or dtypes differ (raised on every rank).
            TypeError: the transport cannot move ``x``.
        """
        raise NotImplementedError

    def scatter(self, x: Any, root: int = 0) -> Any:
        """Split ``root``'s array along its first axis and send part ``i`` to rank ``i``.

        The parts have the sizes ``numpy.array_split`` gives.

        Args:
            x: on ``root``, an array with at least one dimension; the others pass ``None``.
            root: the rank that sends.

        Returns:
            This rank's part.

        Raises:
            ValueError: ``root`` is not a rank, or ``root``'s array is 0-d.
            TypeError: the transport cannot move ``root``'s array.
        """
        raise NotImplementedError

    def abort(self, code: int = 1) -> None:
        """End every rank's process now (used when one rank fails; see ``abort_on_error``).

        Args:
            code: the exit status the processes end with.
        """
        raise NotImplementedError


def create_communicator(name: str = "auto", mpi_comm: Any = None) -> Communicator:
    """Join the processes started by ``mpiexec`` through a transport.

    Args:
        name: ``"mpi"`` (mpi4py; numpy arrays, and CuPy arrays where the MPI is CUDA-aware),
            ``"nccl"`` (CuPy arrays over NCCL, bootstrapped and with host arrays over MPI) or
            ``"auto"`` (NCCL when CuPy, NCCL and a GPU per rank are usable on every rank,
            else MPI).
        mpi_comm: the mpi4py communicator to build on; ``MPI.COMM_WORLD`` when None.

    Returns:
        A ``Communicator`` (an ``MpiCommunicator`` or an ``NcclCommunicator``).

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
    from .nccl import NcclCommunicator, nccl_problem

    mpi = MpiCommunicator(mpi_comm)
    if name == "auto":  # decided by every rank together: they must all pick the same
        name = "nccl" if nccl_problem(mpi) is None else "mpi"
    if name == "mpi":
        return mpi
    return NcclCommunicator(mpi)
