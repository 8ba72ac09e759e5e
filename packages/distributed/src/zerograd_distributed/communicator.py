"""The communicator interface every transport implements.

A communicator joins the processes started by ``mpiexec``: each has a ``rank`` in
``range(size)``. Lowercase methods move Python objects (pickled); the array methods move
arrays through the transport's buffers, without pickling. The transports
(:mod:`~zerograd_distributed.mpi`, :mod:`~zerograd_distributed.nccl`) subclass it;
:func:`~zerograd_distributed.create_communicator` picks one.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from zerograd.checks import int_like

from .timeouts import resolve_timeout

__all__ = ["Communicator", "OPS"]

OPS = ("sum", "prod", "max", "min", "mean")
"""The reduction names ``allreduce`` and ``allreduce_obj`` accept."""


def describe(x: Any) -> str:
    """Name ``x``'s type, shape and dtype for an error message.

    Args:
        x: an array (or anything).

    Returns:
        ``'numpy.ndarray of shape (2,) and dtype float32'``, or the type's name alone.
    """
    shape = getattr(x, "shape", None)
    dtype = getattr(x, "dtype", None)
    kind = f"{type(x).__module__}.{type(x).__qualname__}"
    return f"{kind} of shape {tuple(shape)} and dtype {dtype}" if shape is not None else kind


class Communicator:
    """Base class: rank, size and the collective operations (subclasses implement them).

    Every collective must be called by every rank, in the same order. The methods here
    raise ``NotImplementedError``; ``MpiCommunicator`` and ``NcclCommunicator`` implement
    them.

    Besides the errors each method lists, every collective of the MPI transport raises
    ``RuntimeError`` on every rank when the ranks are at different collectives (an extra
    ``update()`` on one rank, one rank at the end of its program), and ``TimeoutError``
    when some rank has not arrived after :attr:`timeout` seconds, naming it. The
    communicator cannot be used after either; the program then ends on every rank with a
    nonzero status (see :mod:`zerograd_distributed.lockstep`).

    Args:
        rank: this process's index.
        size: the number of processes.
        timeout: seconds a collective waits for every rank (see :attr:`timeout`).

    Attributes:
        rank: this process's index, ``0 <= rank < size``.
        size: the number of processes.
        name: the transport (``"mpi"``, ``"nccl"``).
    """

    name = ""

    def __init__(self, rank: int, size: int, *, timeout: float | None = None) -> None:
        self.rank = rank
        self.size = size
        self._timeout = resolve_timeout(type(self).__name__, timeout)
        self._contexts: list[str] = []
        # parameters whose data came from the root already (see broadcast_params)
        self._synced: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} rank {self.rank} of {self.size}>"

    # -- copies: the same link to the same ranks, never a second one -------------------
    def __copy__(self) -> Communicator:
        return self

    def __deepcopy__(self, memo: dict) -> Communicator:
        """``copy.deepcopy`` of anything holding this communicator shares it.

        It is this process's link to the other ranks, not data: a deep copy of a model
        and its ``DataParallelOptimizer`` is trained over the same ranks (on every rank,
        as the original is).
        """
        return self

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Refuse ``pickle``: another process cannot use this process's link to the ranks.

        Raises:
            TypeError: always, naming what to pickle instead.
        """
        raise TypeError(
            f"{type(self).__name__} cannot be pickled: it is this process's link to the "
            f"other ranks, which no other process can use. Pickle what it trains instead "
            f"(the model, and the optimizer a DataParallelOptimizer wraps: pickle.dumps("
            f"(model, optimizer.optimizer))) and wrap that again where it is loaded, with "
            f"that process's communicator (DataParallelOptimizer(opt, create_communicator("
            f"...))); zerograd_distributed.checkpoint saves and resumes a whole run."
        )

    @property
    def timeout(self) -> float:
        """Seconds a collective waits for every rank before it raises ``TimeoutError``.

        The error names the ranks that did not arrive. ``math.inf`` waits forever;
        assigning None restores the default (the environment variable
        ``ZEROGRAD_DISTRIBUTED_TIMEOUT``, else 600 s).
        """
        return self._timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        self._timeout = resolve_timeout(f"{type(self).__name__}.timeout", value)

    @contextmanager
    def during(self, what: str) -> Iterator[Communicator]:
        """Name the collectives called inside the block after ``what``.

        The name goes into the stamp every rank compares before a collective, so ranks
        that are in different steps raise instead of pairing unrelated calls, and into the
        errors (``"allgather_obj in DataParallelOptimizer.update()"``). The innermost
        block names a collective.

        Args:
            what: the step, e.g. ``"validation"``.

        Yields:
            This communicator.
        """
        self._contexts.append(what)
        try:
            yield self
        finally:
            self._contexts.pop()

    def _label(self, method: str) -> str:
        """``method`` and the innermost :meth:`during` block around it."""
        return f"{method} in {self._contexts[-1]}" if self._contexts else method

    # -- parameters known to hold the root's values --------------------------------------

    def mark_synced(self, params: Iterable[Any]) -> None:
        """Record that ``params`` hold the same data on every rank now.

        A broadcast or a checkpoint load did it, so a data-parallel update need not
        broadcast them again.

        Args:
            params: Parameters (held weakly: a parameter that goes is forgotten).
        """
        for p in params:
            self._synced[id(p)] = p

    def is_synced(self, param: Any) -> bool:
        """Whether :meth:`mark_synced` has recorded ``param`` (and it is still alive).

        Args:
            param: a Parameter.

        Returns:
            True when its data came from the root already.
        """
        return self._synced.get(id(param)) is param

    def _check_op(self, method: str, op: str) -> None:
        if op not in OPS:
            raise ValueError(
                f"{type(self).__name__}.{method}: op must be one of {', '.join(OPS)}, got {op!r}."
            )

    def check_root(self, method: str, root: Any) -> None:
        """Refuse a ``root`` that is not a rank of this communicator.

        Args:
            method: the call to name in the error (``"bcast"``, ``"broadcast_params"``).
            root: the rank given.

        Raises:
            TypeError: ``root`` is not an int.
            ValueError: ``root`` is not in ``0..size - 1``.
        """
        if not int_like(root) or not 0 <= root < self.size:
            raise (ValueError if int_like(root) else TypeError)(
                f"{type(self).__name__}.{method}: root must be a rank in 0..{self.size - 1}, "
                f"got {root!r}."
            )

    def _refused(self, seen: list) -> None:
        """Raise on every rank when some rank's array was refused (its text is a str)."""
        bad = [(r, m) for r, m in enumerate(seen) if isinstance(m, str)]
        if bad:
            mine = seen[self.rank]
            raise TypeError(
                mine
                if isinstance(mine, str)
                else "; ".join(f"rank {r}: {m}" for r, m in bad) + " (this rank's was fine)"
            )

    def _agree(self, method: str, what: str, mine: Any) -> list:
        """Every rank's ``mine``, checked to be the same everywhere.

        A TypeError on every rank when one rank's array was refused, a ValueError on every
        rank when they differ (no rank is left waiting).
        """
        with self.during(method):
            seen = self.allgather_obj(mine)
        self._refused(seen)
        if any(s != seen[0] for s in seen):
            listed = "; ".join(f"rank {r}: {s}" for r, s in enumerate(seen))
            raise ValueError(
                f"{type(self).__name__}.{method}: every rank must pass the same {what}, got "
                f"{listed}. Nothing was sent."
            )
        return seen

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
            TypeError: on every rank, when ``root`` cannot pickle ``obj`` (nothing is sent).
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

        Raises:
            TypeError: on every rank, when some rank cannot pickle its ``obj`` (the message
                names the ranks; nothing is gathered).
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
            TypeError: on every rank, when ``root`` cannot pickle an item (nothing is sent).
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

    # -- the data-parallel path: in place, unchecked ------------------------------------

    def transport_problem(self, x: Any) -> str | None:
        """Say why this communicator cannot move arrays like ``x``, or None when it can.

        Args:
            x: an array (only its type and dtype matter).

        Returns:
            None, or the text of the TypeError an array method would raise for ``x``.
        """
        raise NotImplementedError

    def allreduce_sum_inplace(self, buf: Any) -> None:
        """Sum the contiguous array ``buf`` over every rank, in place, unchecked.

        The fast path of gradient averaging: unlike :meth:`allreduce` it sends nothing to
        check the ranks first, so every rank must pass a buffer of one size and dtype that
        :meth:`transport_problem` accepts (the caller has agreed on them), or the ranks hang.

        Args:
            buf: a C-contiguous array of this rank's values; it ends holding the sum.
        """
        raise NotImplementedError

    def bcast_inplace(self, buf: Any, root: int = 0) -> None:
        """Copy ``root``'s contiguous array ``buf`` into every rank's ``buf``, unchecked.

        As :meth:`allreduce_sum_inplace`: every rank passes a buffer of one size and dtype.

        Args:
            buf: a C-contiguous array; ``root``'s values on ``root``, overwritten elsewhere.
            root: the rank that sends.
        """
        raise NotImplementedError

    def abandon(self, reason: str) -> None:
        """Tell every rank that this one will not make the collectives they agreed on.

        For a failure between an agreement and the unchecked collectives that follow it
        (:meth:`allreduce_sum_inplace`): the ranks already waiting there raise, naming this
        rank and ``reason``, instead of pairing their collective with whatever this rank
        calls next. This communicator cannot be used again afterwards (as after a timeout).
        Does nothing on a communicator that already failed; this base class, which has no
        way to reach the other ranks outside a collective, does nothing at all.

        Args:
            reason: what went wrong on this rank, for the other ranks' errors.
        """

    def abort(self, code: int = 1) -> None:
        """End every rank's process now (used when one rank fails; see ``abort_on_error``).

        Args:
            code: the exit status the processes end with.
        """
        raise NotImplementedError
