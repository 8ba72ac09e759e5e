"""Data-parallel training: the same model on every rank, gradients averaged before each update.

``broadcast_params`` copies rank 0's parameters to every rank once; ``DataParallelOptimizer``
wraps any zerograd-nn optimizer and, on ``update()``, averages the gradients over the ranks
in the wrapped optimizer's flat gradient buffers (``Optimizer.lend_gradients``; one per
group and dtype, allreduced in place, whole or in buckets of ``bucket_bytes``), then lets
the wrapped optimizer update from them. Every rank then holds the same parameters.
"""

from __future__ import annotations

import copy
import itertools
import operator
import sys
import warnings
import zlib
from typing import Any

import numpy as np

from zerograd import Parameter, Variable
from zerograd.backends import get_array_module
from zerograd.checks import flag, positive_int
from zerograd_nn.finite import all_finite

from .communicator import Communicator

__all__ = ["DataParallelOptimizer", "broadcast_params", "create_multi_node_optimizer"]


def _params_of(target: Any, where: str) -> list[Parameter]:
    if hasattr(target, "params"):
        return list(target.params())
    try:
        params = list(target)
    except TypeError:
        raise TypeError(
            f"{where}: expected a Layer/Model (with params()) or an iterable of Parameters, got "
            f"{type(target).__name__}."
        ) from None
    return params


_dtype_names: dict = {}  # dtype -> str(dtype): numpy writes the name in Python, slowly


def _name(dtype: Any) -> str:
    """``str(dtype)``, remembered: every update names each parameter's dtypes."""
    try:
        name = _dtype_names.get(dtype)
    except TypeError:  # a library whose dtypes do not hash
        return str(dtype)
    if name is None:
        if len(_dtype_names) >= 256:
            _dtype_names.clear()
        name = _dtype_names[dtype] = str(dtype)
    return name


def _layout(params: list[Parameter]) -> list[Any]:
    return [None if p.data is None else (tuple(p.data.shape), _name(p.data.dtype)) for p in params]


def _entries(target: Any, params: list[Parameter]) -> list[tuple]:
    """``(name, shape, dtype)`` of each parameter in order (None, None while unsized).

    Names come from ``target.named_params()`` when it has them, else ``Parameter.name``.
    """
    named = getattr(target, "named_params", None)
    items = list(named().items()) if callable(named) else [(p.name or "", p) for p in params]
    return [
        (n, None, None) if p.data is None else (n, tuple(p.data.shape), _name(p.data.dtype))
        for n, p in items
    ]


def _same(a: tuple, b: tuple, unsized_matches: bool) -> bool:
    if a[0] != b[0]:
        return False
    if unsized_matches and (a[1] is None or b[1] is None):
        return True
    return a[1:] == b[1:]


def _show(entries: list[tuple], i: int) -> str:
    if i >= len(entries):
        return f"nothing (it has only {len(entries)} parameters)"
    name, shape, dtype = entries[i]
    what = f"'{name}'" if name else "one"
    if shape is None:
        return f"{what} not sized yet"
    return f"{what} of shape {shape} and dtype {dtype}"


def _mismatch(where: str, layouts: list[list[tuple]], unsized_matches: bool) -> ValueError | None:
    """The error every rank raises together when their parameters differ, or None.

    Parameters are matched by name, shape and dtype, position by position; each rank that
    differs from rank 0 is named with the first of its parameters that does.
    """
    first = layouts[0]
    found = []
    for r, entries in enumerate(layouts[1:], 1):
        n = min(len(first), len(entries))
        i = next((i for i in range(n) if not _same(first[i], entries[i], unsized_matches)), n)
        if i < max(len(first), len(entries)):
            found.append(
                f"rank {r}: parameter {i} is {_show(entries, i)} where rank 0 has {_show(first, i)}"
            )
    if not found:
        return None
    return ValueError(
        f"{where}: the ranks hold different parameters ({'; '.join(found)}). Gradients are "
        f"averaged parameter by parameter, so every rank must build the same model, with "
        f"its layers defined in the same order (layers in another order would mix their "
        f"gradients), and size lazy layers with the same input shapes. Nothing was changed."
    )


def _groups(params: list[Parameter]) -> list[list[Parameter]]:
    """Parameters grouped by array type and dtype, in order of first appearance."""
    by_kind: dict = {}
    for p in params:
        by_kind.setdefault((type(p.data), _name(p.data.dtype)), []).append(p)
    return list(by_kind.values())


def _chunks(grouped: list[tuple[Any, list[Parameter]]], present: set[int]) -> list[list]:
    """The layout every rank sends: per optimizer group, its parameters by array type and dtype.

    ``present``: the ids of the parameters averaged. It is the layout of the wrapped
    optimizer's flat gradient buffers (``lend_gradients``) when that optimizer packs every
    one of them; it depends only on what the ranks agreed on, never on one rank's state.
    """
    chunks: list[list] = []
    for _, ps in grouped:
        by_kind: dict = {}
        for p in ps:
            if id(p) in present:
                by_kind.setdefault((type(p.data), _name(p.data.dtype)), []).append(p)
        chunks.extend(by_kind.values())
    return chunks


def _changed(a: tuple, b: tuple, label: str = "") -> list[str]:
    """``name=value where rank 0 has value`` for each entry of ``b`` that differs in ``a``."""
    mine, theirs = dict(b), dict(a)
    return [
        f"{label}{k}={mine.get(k)!r} where rank 0 has {theirs.get(k)!r}"
        for k in sorted(set(mine) | set(theirs))
        if mine.get(k) != theirs.get(k)
    ]


def _differences(a: tuple, b: tuple) -> str:
    """Each hyperparameter of ``settings()`` ``b`` that differs from ``a`` (rank 0's)."""
    (defaults_a, groups_a), (defaults_b, groups_b) = a, b
    if len(groups_a) != len(groups_b):
        return f"{len(groups_b)} parameter groups where rank 0 has {len(groups_a)}"
    shown = []
    for i, (ga, gb) in enumerate(zip(groups_a, groups_b)):
        shown += _changed(ga, gb, f"group {i} " if len(groups_a) > 1 else "")
    return ", ".join(shown or _changed(defaults_a, defaults_b))  # else the defaults differ


def _buckets(buf: Any, bucket_bytes: int | None) -> list[Any]:
    """``buf`` (1-d) cut into consecutive slices of at most ``bucket_bytes`` (views)."""
    if bucket_bytes is None:
        return [buf]
    step = max(1, bucket_bytes // buf.itemsize)
    return [buf[i : i + step] for i in range(0, buf.shape[0], step)]


def _bcast_data(comm: Communicator, params: list[Parameter], root: int) -> None:
    """Copy ``root``'s data of ``params`` (same layout on every rank) to every rank."""
    for group in _groups(params):
        xp = get_array_module(group[0].data)
        if comm.rank == root:
            buf = xp.concatenate([xp.reshape(p.data, (-1,)) for p in group])
        else:
            buf = xp.empty(sum(p.data.size for p in group), dtype=group[0].data.dtype)
        comm.bcast_inplace(buf, root)
        if comm.rank != root:
            off = 0
            for p in group:
                n = p.data.size
                p.data = xp.reshape(buf[off : off + n], p.data.shape)
                off += n
    comm.mark_synced(params)


def broadcast_params(target: Any, comm: Communicator, root: int = 0) -> int:
    """Give every rank ``root``'s parameters of ``target`` (call it on every rank).

    Parameters of lazily sized layers that have no data yet are left for later: run one
    forward first, or let ``DataParallelOptimizer`` broadcast them at its first update.

    Args:
        target: a Layer/Model, or an iterable of Parameters (the same on every rank).
        comm: the communicator.
        root: the rank whose values everyone gets.

    Returns:
        The number of parameters broadcast.

    Raises:
        ValueError: on every rank, when the ranks' parameters differ in number, name,
            shape or dtype (nothing is changed then; the message names the first that
            differs on each rank), or ``root`` is not a rank.
        TypeError: ``target`` is neither a Layer/Model nor an iterable of Parameters.

    Examples:
        >>> from zerograd_nn.models import MLP
        >>> from zerograd_distributed import create_communicator
        >>> model = MLP((3, 2))
        >>> broadcast_params(model, create_communicator("mpi"))  # Linear sizes lazily
        2
    """
    comm.check_root("broadcast_params", root)
    params = _params_of(target, "broadcast_params(target)")
    with comm.during("broadcast_params()"):
        layouts = comm.allgather_obj(_entries(target, params))
        error = _mismatch("broadcast_params", layouts, unsized_matches=False)
        if error is not None:
            raise error
        sized = [p for p in params if p.data is not None]
        _bcast_data(comm, sized, root)
    return len(sized)


class DataParallelOptimizer:
    """Wrap ``optimizer`` so that ``update()`` first averages the gradients over the ranks.

    The gradients of each dtype travel in the wrapped optimizer's flat gradient buffer,
    allreduced in place (whole, or in consecutive slices of ``bucket_bytes``), not one
    allreduce per parameter; the update then reads that buffer without gathering again.
    Before that, the ranks agree on which parameters have a gradient: one a rank lacks
    counts as zeros there, so no rank waits for a message that never comes. A parameter
    that was never broadcast (a lazily sized layer, or a model without
    ``broadcast_params``) is broadcast from ``root`` at that update, which then skips the
    step: its gradients came from different weights (a warning says so).

    Other attributes (``lr``, ``hooks``, ``state_dict()``...) are the wrapped optimizer's.
    Its hyperparameters and hooks must be the same on every rank, or the ranks would drift
    apart from the same averaged gradients: each update compares them (with the rest of what
    the ranks agree on, in one message) and raises on every rank when they differ.

    A nan or inf in one rank's gradient reaches every rank through the average. With
    ``check_finite=True`` each rank looks at its gradients before they travel, and every
    rank raises together, naming the rank and the parameter, with nothing updated; it reads
    every gradient once more per step (0.4 ms for 1.8 M float32 parameters, about 14% of
    the averaging and 2% of a training step of that MLP), so it is off by default. Without
    it, a ``Trainer`` stops on every rank at the next step, whose losses are then nan.

    Args:
        optimizer: any zerograd-nn optimizer (already set up, or set up through this one).
        comm: the communicator.
        bucket_bytes: largest allreduce in bytes; None sends each buffer in one piece.
        root: the rank whose parameters everyone starts from.
        check_finite: refuse, on every rank, gradients holding nan or inf on any rank.

    Raises:
        TypeError: ``optimizer`` is not a zerograd-nn optimizer, or ``comm`` is not a
            ``Communicator``.
        ValueError: ``bucket_bytes`` is not a positive int or None, or ``root`` is not a rank.

    Examples:
        >>> from zerograd_nn.models import MLP
        >>> from zerograd_nn.optimizers import SGD
        >>> from zerograd_distributed import create_communicator
        >>> comm = create_communicator("mpi")
        >>> optimizer = DataParallelOptimizer(SGD(lr=0.1), comm).setup(MLP((3, 2)))
        >>> optimizer.lr
        0.1
    """

    _own = frozenset(
        {"optimizer", "comm", "bucket_bytes", "root", "check_finite", "_pool", "_checked"}
    )

    def __init__(
        self,
        optimizer: Any,
        comm: Communicator,
        *,
        bucket_bytes: int | None = None,
        root: int = 0,
        check_finite: bool = False,
    ) -> None:
        if not callable(getattr(optimizer, "update", None)) or not hasattr(optimizer, "setup"):
            raise TypeError(
                f"DataParallelOptimizer(optimizer, comm): optimizer must be a zerograd-nn "
                f"optimizer (with setup() and update()), got {type(optimizer).__name__}."
            )
        if not isinstance(comm, Communicator):
            raise TypeError(
                f"DataParallelOptimizer(optimizer, comm): comm must come from "
                f"create_communicator(...), got {type(comm).__name__}."
            )
        if bucket_bytes is not None:
            bucket_bytes = positive_int("DataParallelOptimizer", "bucket_bytes", bucket_bytes)
        comm.check_root("DataParallelOptimizer", root)
        object.__setattr__(self, "optimizer", optimizer)
        object.__setattr__(self, "comm", comm)
        object.__setattr__(self, "bucket_bytes", bucket_bytes)
        object.__setattr__(self, "root", root)
        check_finite = flag("DataParallelOptimizer", "check_finite", check_finite)
        object.__setattr__(self, "check_finite", check_finite)
        object.__setattr__(self, "_pool", {})
        object.__setattr__(self, "_checked", False)  # the ranks' parameters compared by name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in self._own:  # unpickling asks before __init__
            raise AttributeError(name)
        return getattr(self.optimizer, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._own:
            object.__setattr__(self, name, value)
        else:  # lr, hyperparameters: the wrapped optimizer's
            setattr(self.optimizer, name, value)

    def __deepcopy__(self, memo: dict) -> DataParallelOptimizer:
        """A copy wrapping a copy of the optimizer, over the same communicator.

        The copies of the parameters the ranks hold alike (broadcast, or loaded from a
        checkpoint) count as broadcast too: the copy's first update averages, as the
        original's does, instead of broadcasting them again and skipping that step.
        """
        twin = object.__new__(type(self))
        memo[id(self)] = twin
        for name in self._own - {"_pool"}:  # (gradient buffers: made again when needed)
            object.__setattr__(twin, name, copy.deepcopy(vars(self)[name], memo))
        object.__setattr__(twin, "_pool", {})
        if self.target is not None:
            synced = [p for p in self.target.params() if self.comm.is_synced(p)]
            self.comm.mark_synced(memo[id(p)] for p in synced if id(p) in memo)
        return twin

    def setup(self, target: Any) -> DataParallelOptimizer:
        """Set the wrapped optimizer up on ``target``; the ranks compare their parameters.

        One collective: every rank sends the names, shapes and dtypes of its parameters
        (names from ``named_params()`` for a model), and every rank raises when they differ
        (a layer not sized yet matches any shape; the first update compares those). An
        optimizer set up before it was wrapped is compared at its first update.

        Args:
            target: what the wrapped optimizer's ``setup`` takes (a model, usually).

        Returns:
            ``self``, so that construction and setup chain.

        Raises:
            ValueError: on every rank, when the ranks' parameters differ (a layer defined
                in another order on one rank, say); the message names the first parameter
                that differs on each rank, and the wrapped optimizer is left as it was.
        """
        before = dict(vars(self.optimizer))
        self.optimizer.setup(target)
        try:
            self._compare_parameters("DataParallelOptimizer.setup()")
        except BaseException:
            vars(self.optimizer).clear()
            vars(self.optimizer).update(before)
            raise
        return self

    def _compare_parameters(self, where: str) -> None:
        """Raise on every rank unless the ranks' parameters match by name, shape, dtype."""
        if self.comm.size > 1:
            params = list(self.target.params())
            with self.comm.during("DataParallelOptimizer.setup()"):
                layouts = self.comm.allgather_obj(_entries(self.target, params))
            error = _mismatch(where, layouts, unsized_matches=True)
            if error is not None:
                raise error
        object.__setattr__(self, "_checked", True)

    @property
    def target(self) -> Any:
        """The model being trained (the wrapped optimizer's target)."""
        return self.optimizer.target

    def _problem(self, params: list[Parameter]) -> str | None:
        """What stops this rank's gradients from being averaged, or None."""
        kinds: set = set()
        for i, p in enumerate(params):
            if p.data is None:
                continue
            if type(p.data) not in kinds:
                kinds.add(type(p.data))
                problem = self.comm.transport_problem(p.data)
                if problem:
                    return f"parameter {i}: {problem}"
            if _name(p.data.dtype)[:5] not in ("float", "bfloa"):
                return f"parameter {i} has dtype {p.data.dtype}; parameters must be floating"
            g = None if p.grad is None else p.grad.data
            if g is None:
                continue
            if tuple(g.shape) != tuple(p.data.shape):
                return (
                    f"parameter {i} of shape {tuple(p.data.shape)} has a gradient of shape "
                    f"{tuple(g.shape)}"
                )
            if _name(g.dtype)[:5] not in ("float", "bfloa"):  # packing would cast it silently
                return f"parameter {i} has a gradient of dtype {g.dtype}; it must be floating"
            if getattr(getattr(p.data, "flags", None), "writeable", True) is False:
                return (  # its update would fail on this rank alone, after the averaging
                    f"parameter {i} of shape {tuple(p.data.shape)} holds a read-only array; "
                    f"give it a writable copy (param.data = param.data.copy())"
                )
            if self.check_finite and not all_finite(g):
                return (
                    f"parameter {i} of shape {tuple(p.data.shape)} has a gradient holding nan "
                    f"or inf"
                )
        return None

    def update(self) -> None:
        """Average the gradients over the ranks, then update (call it on every rank).

        An error of the wrapped optimizer's update (a hook that raises) on some ranks
        would leave them behind the ranks that updated: that rank tells the others
        (``comm.abandon``), which raise a ``RuntimeError`` quoting it at their next
        collective, and the communicator cannot be used again.

        Raises:
            ValueError: on every rank together, when the ranks' parameters differ, a
                gradient cannot be averaged, or the ranks' ``bucket_bytes``, parameter groups,
                hyperparameters (``lr``...) or hooks differ (nothing is changed then).
        """
        if self.target is None:
            self.optimizer.update()  # raises its "call setup() first" error
        if not self.average_grads():
            return
        if self.comm.size == 1:
            self.optimizer.update()
            return
        try:
            self.optimizer.update()
        except BaseException as e:
            # the other ranks may have updated from the same average (a hook that raised
            # on this rank alone): carrying on would train ranks whose weights differ
            self.comm.abandon(
                f"{type(e).__name__}: {e}, raised by its optimizer's update() after the ranks "
                f"averaged the gradients (the ranks that did not raise have updated, so the "
                f"ranks' parameters may differ)"
            )
            raise

    def step(self) -> None:
        """PyTorch's name of :meth:`update` (averages the gradients too)."""
        self.update()

    def replay_problem(self) -> str | None:
        """Why a static-graph replay cannot run this optimizer's update, or None.

        With more than one rank, ``update()`` averages the gradients through the
        communicator between ``backward()`` and the update, outside zerograd's functions,
        so a replay would skip the averaging; ``Trainer(static=True)`` asks this and runs
        its steps eagerly, saying so once.

        Returns:
            The reason, or None on one rank (nothing is averaged there).
        """
        if self.comm.size == 1:
            return None
        return (
            f"DataParallelOptimizer averages the gradients over {self.comm.size} ranks "
            f"between backward() and the update, outside zerograd's functions, which a "
            f"static-graph replay cannot record"
        )

    def average_grads(self) -> bool:
        """Replace every gradient by its mean over the ranks, without updating.

        Returns:
            True when the gradients were averaged; False when this call broadcast parameters
                that had never been broadcast (their gradients are then not worth a step).

        Raises:
            RuntimeError: ``setup`` was not called yet.
            ValueError: on every rank together, when the ranks' parameters differ, a
                gradient cannot be averaged, or the ranks' ``bucket_bytes``, parameter groups,
                hyperparameters (``lr``...) or hooks differ (nothing is changed then).
        """
        if self.target is None:
            raise RuntimeError(
                "DataParallelOptimizer.average_grads(): no target; call optimizer.setup(model) "
                "first."
            )
        if self.comm.size == 1:
            return True
        if not self._checked:  # an optimizer set up before it was wrapped
            self._compare_parameters("DataParallelOptimizer.update()")
        with self.comm.during("DataParallelOptimizer.update()"):
            return self._agree_and_average(list(self.target.params()))

    def _grouped(self, params: list[Parameter]) -> list[tuple[Any, list[Parameter]]]:
        """The wrapped optimizer's ``grouped_params()``; one group of ``params`` without it."""
        grouped = getattr(self.optimizer, "grouped_params", None)
        return grouped() if callable(grouped) else [({}, params)]

    def _plan(self, grouped: list[tuple[Any, list[Parameter]]]) -> tuple:
        """What the ranks must share besides the parameters: buckets, groups, hyperparameters.

        Buckets and groups decide how many allreduces of which sizes each rank makes; the
        hyperparameters and the hooks, whether every rank takes the same step from the same
        average.
        """
        settings = getattr(self.optimizer, "settings", None)
        hooks = getattr(self.optimizer, "hooks", None)
        return (
            self.bucket_bytes,
            [len(ps) for _, ps in grouped],
            settings() if callable(settings) else None,
            _hook_settings(hooks, grouped) if hooks else (),
        )

    def _disagreement(self, plans: list[tuple]) -> ValueError | None:
        """The error every rank raises when the ranks' ``_plan`` differ, or None."""
        first = plans[0]
        if all(plan == first for plan in plans):
            return None
        where = "DataParallelOptimizer.update()"
        tail = "Nothing was updated on any rank."
        if any(plan[0] != first[0] for plan in plans):
            listed = "; ".join(f"rank {r}: {plan[0]}" for r, plan in enumerate(plans))
            return ValueError(
                f"{where}: the ranks were given different bucket_bytes ({listed}); pass the "
                f"same value on every rank. {tail}"
            )
        if any(plan[1] != first[1] for plan in plans):
            listed = "; ".join(
                f"rank {r}: {', '.join(map(str, plan[1]))}" for r, plan in enumerate(plans)
            )
            return ValueError(
                f"{where}: the ranks' optimizers group the parameters differently (parameters "
                f"per group: {listed}); set every rank's optimizer up with the same groups. "
                f"{tail}"
            )
        if any(plan[3] != first[3] for plan in plans):
            listed = "; ".join(
                f"rank {r}: {_show_hooks(plan[3])} where rank 0 has {_show_hooks(first[3])}"
                for r, plan in enumerate(plans)
                if plan[3] != first[3]
            )
            return ValueError(
                f"{where}: the ranks' optimizers have different hooks ({listed}), so their "
                f"parameters would drift apart from the same averaged gradients. Add the same "
                f"hooks, with the same settings and in the same order, on every rank. {tail}"
            )
        listed = "; ".join(
            f"rank {r}: {_differences(first[2], plan[2])}"
            for r, plan in enumerate(plans)
            if plan[2] != first[2]
        )
        return ValueError(
            f"{where}: the ranks' optimizers have different hyperparameters ({listed}), so "
            f"their parameters would drift apart from the same averaged gradients. Set them "
            f"alike on every rank; a scheduler that reacts to a metric (ReduceLROnPlateau) "
            f"must see a value every rank shares, such as the metric's mean_over_ranks. {tail}"
        )

    def _agree_and_average(self, params: list[Parameter]) -> bool:
        fresh = [p for p in params if p.data is not None and not self.comm.is_synced(p)]
        mask = bytes(p.grad is not None for p in params)
        layout = _layout(params)
        key = zlib.crc32(repr(layout).encode())
        grouped = self._grouped(params)
        # one small message settles everything the ranks must agree on before the big ones
        seen = self.comm.allgather_obj(
            (len(params), key, len(fresh), self._problem(params), mask, self._plan(grouped))
        )
        if any(s[:3] != seen[0][:3] for s in seen):
            layouts = self.comm.allgather_obj(_entries(self.target, params))
            raise _mismatch(
                "DataParallelOptimizer.update()", layouts, unsized_matches=False
            ) or ValueError(
                "DataParallelOptimizer.update(): the ranks disagree on which parameters were "
                "broadcast. Nothing was changed."
            )
        problems = [(r, s[3]) for r, s in enumerate(seen) if s[3]]
        if problems:
            listed = "; ".join(f"rank {r}: {w}" for r, w in problems)
            raise ValueError(
                f"DataParallelOptimizer.update(): cannot average the gradients ({listed}). "
                f"Nothing was updated on any rank."
            )
        error = self._disagreement([s[5] for s in seen])
        if error is not None:
            raise error
        try:  # every rank now waits for this rank's allreduces: a failure must reach them
            if fresh:
                _bcast_data(self.comm, fresh, self.root)
                if self.comm.rank == self.root:
                    warnings.warn(
                        f"DataParallelOptimizer.update(): {len(fresh)} parameter(s) had not "
                        f"been broadcast from rank {self.root}; they are now, and this update "
                        f"was skipped (its gradients came from different weights). Call "
                        f"broadcast_params(model, comm) after building the model (after one "
                        f"forward for lazily sized layers) to train from the first step.",
                        stacklevel=4,
                    )
                return False
            present = {id(p) for i, p in enumerate(params) if any(s[4][i] for s in seen)}
            self._average(grouped, present)
        except BaseException as e:
            self.comm.abandon(f"{type(e).__name__}: {e}, raised after the ranks agreed to average")
            raise
        return True

    def _buffer(self, xp: Any, key: tuple, size: int, dtype: Any) -> Any:
        """A 1-d buffer for one packed group: last step's, when nothing uses it any more.

        Gradients become views of their step's buffer, so it can be reused only once every
        one of those views is gone (after ``cleargrads()``); numpy views keep a reference to
        their base, which makes that countable. Reuse spares the page faults of 7 MB of fresh
        memory per step. Other array types get a fresh buffer each step.
        """
        buf = self._pool.get(key)
        # references: the pool, ``buf`` and getrefcount's argument; any more are live views
        if buf is not None and sys.getrefcount(buf) == 3:
            return buf
        buf = xp.empty(size, dtype=dtype)
        if type(buf) is np.ndarray:
            self._pool[key] = buf
        return buf

    def _average(self, grouped: list[tuple[Any, list[Parameter]]], present: set[int]) -> None:
        """Replace each gradient in ``present`` by its mean over the ranks (zeros if absent).

        Every rank sends the same layout (:func:`_chunks`), each chunk whole or in buckets:
        that of the wrapped optimizer's flat gradient buffers (``lend_gradients``), which
        are then averaged in place. A rank whose optimizer packs them otherwise (a gradient
        of another dtype than its parameter, an optimizer written DeZero's way) packs that
        layout into buffers of its own instead.
        """
        scale = 1.0 / self.comm.size
        chunks = _chunks(grouped, present)
        for ps in chunks:  # a gradient this rank lacks is zeros, in the flat buffer too
            for p in ps:
                if p.grad is None:
                    p.grad = Variable(get_array_module(p.data).zeros_like(p.data))
        lend = getattr(self.optimizer, "lend_gradients", None)
        bufs, covered = lend(scale) if lend is not None else ([], [])
        if _lent_as(bufs, covered, chunks):
            for buf in bufs:
                for piece in _buckets(buf, self.bucket_bytes):
                    self.comm.allreduce_sum_inplace(piece)
            return
        scaled = {id(p) for p in covered}  # lent: already multiplied by ``scale``
        for i, ps in enumerate(chunks):
            xp = get_array_module(ps[0].data)
            size = sum(p.data.size for p in ps)
            dtype = ps[0].data.dtype
            buf = self._buffer(xp, (i, size, _name(dtype), type(ps[0].data)), size, dtype)
            views = []
            off = 0
            for p in ps:
                n = p.data.size
                view = xp.reshape(buf[off : off + n], p.data.shape)
                if id(p) in scaled:
                    view[...] = p.grad.data
                else:  # pack and divide in one pass
                    xp.multiply(p.grad.data, scale, out=view)
                views.append(view)
                off += n
            for piece in _buckets(buf, self.bucket_bytes):
                self.comm.allreduce_sum_inplace(piece)
            for p, view in zip(ps, views):  # each gradient: its slice of this step's buffer
                p.grad.data = view


def _hook_settings(hooks: list[Any], grouped: list[tuple[Any, list[Parameter]]]) -> tuple:
    """Each hook as ``(name, ((attribute, value), ...))``, comparable across ranks.

    Numbers (0-d arrays too) by value; Parameters, and lists of them (``FreezeParam``'s),
    by their positions among the optimizer's parameters; anything else by its type's name.
    Only read when the optimizer has hooks: an update with hooks takes its slow path anyway.
    """
    where: dict[int, int] = {}
    for ps in grouped:
        for p in ps[1]:
            where.setdefault(id(p), len(where))

    def value(v: Any) -> Any:
        if isinstance(v, (bool, int, float, str)) or v is None:
            return v
        if isinstance(v, Parameter):
            return ("param", where.get(id(v)))
        if isinstance(v, (list, tuple)) and all(isinstance(x, Parameter) for x in v):
            return ("params", tuple([where.get(id(x)) for x in v]))
        if getattr(v, "shape", None) == ():
            try:
                return float(v)
            except (TypeError, ValueError):
                pass
        return type(v).__name__

    out = []
    for h in hooks:
        name = getattr(h, "__qualname__", None) or type(h).__qualname__
        attrs = None if hasattr(h, "__code__") else getattr(h, "__dict__", None)
        if type(attrs) is not dict:  # a function, or an object without attributes: its name
            attrs = {}
        out.append((name, tuple(sorted((k, value(v)) for k, v in attrs.items()))))
    return tuple(out)


def _show_hooks(hooks: tuple) -> str:
    """``[ClipGrad(max_norm=0.5), ...]``: hooks as :func:`_hook_settings` describes them."""
    shown = [f"{name}({', '.join(f'{k}={v!r}' for k, v in attrs)})" for name, attrs in hooks]
    return f"[{', '.join(shown)}]"


def _lent_as(bufs: list[Any], covered: list[Parameter], chunks: list[list]) -> bool:
    """Whether the lent buffers hold exactly ``chunks``: one buffer per chunk, in order.

    The optimizer lends one buffer per group, array type and dtype, the keys of the chunks
    too; so the same parameters in the same order, in as many buffers, are the same layout.
    """
    if len(bufs) != len(chunks) or len(covered) != sum(map(len, chunks)):
        return False
    return all(map(operator.is_, covered, itertools.chain.from_iterable(chunks)))


def create_multi_node_optimizer(optimizer: Any, comm: Communicator) -> DataParallelOptimizer:
    """Wrap ``optimizer`` for data-parallel training (ChainerMN's name for it).

    Args:
        optimizer: any zerograd-nn optimizer.
        comm: the communicator.

    Returns:
        ``DataParallelOptimizer(optimizer, comm)``.
    """
    return DataParallelOptimizer(optimizer, comm)
