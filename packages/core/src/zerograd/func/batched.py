"""Batched values and the vmap level: how :func:`~zerograd.func.vmap` runs one function on a batch.

Inside ``vmap(f)``, ``f`` receives :class:`BatchedVariable` s: Variables that look like one
sample (``shape``, ``ndim``, ``dtype`` are a sample's) and hold the whole batch, the batch
on axis 0 of a plain Variable (``phys``). The :class:`Level` of that vmap call is the
:mod:`zerograd.modes` mode of its context: every Function applied to a batched value comes
to :meth:`Level.apply`, which runs the function's batching rule
(:mod:`zerograd.func.rules`) on the whole batch at once, or, for a function with no rule, a
loop over the samples that gives the same result (with one :class:`VmapFallbackWarning`
naming the function). What a rule computes is made of ordinary Functions on the plain
Variables underneath, so the batch's graph is an ordinary graph: its backward runs the
functions' own derivatives.

vmaps nest: a level's batched values may hold another level's batched values, the level
entered first (outer) holding its batch axis first.
"""

from __future__ import annotations

import copy
import operator
import threading
import warnings
import weakref
from typing import Any

from .. import functions as F
from .. import modes
from ..backends import backend_of, device_of, get_array_module, register_array_wrapper
from ..config import using_config
from ..variable import Constant, Variable
from .rules.registry import READS, Batch, reads_of, rule_for

_new = object.__new__


class VmapFallbackWarning(UserWarning):
    """A function applied inside :func:`~zerograd.func.vmap` has no batching rule.

    It then runs once per sample in a Python loop, which gives the same result more slowly.
    One warning per function and vmap call.
    """


def _no_values(what: str, level: Level | None) -> TypeError:
    if level is not None and not level.active:
        return TypeError(
            f"{what}: this batched value escaped the vmap call that made it (it was stored "
            f"or returned in a way vmap could not unbatch); return it from the function "
            f"instead, so vmap gives it back with its batch axis."
        )
    if level is not None and level.thread != threading.get_ident() and not _in(level):
        return TypeError(
            f"{what}: this batched value of a vmap is used in a thread that does not run "
            f"its vmap, where zerograd's functions are not batched (each thread "
            f"has its own transforms). Compute in the thread that calls vmap, or run the "
            f"other thread's work in the caller's context: ctx = "
            f"contextvars.copy_context(), then pool.submit(ctx.run, fn, *args)."
        )
    n = f" of {level.n}" if level is not None else ""
    return TypeError(
        f"{what} inside vmap: the function runs on the whole batch{n} at once, so there is "
        f"no single sample's value to read. Compute with zerograd functions instead (they "
        f"are batched), or vmap a function that does not read values."
    )


def _in(level: Level) -> bool:
    """Whether ``level`` is among the modes in force here (a thread in the vmap's context)."""
    mode = modes.current()
    while mode is not None and mode is not level:
        mode = getattr(mode, "parent", None)
    return mode is level


class BatchedData:
    """The array of a :class:`BatchedVariable` as the function sees it: a sample, no values.

    It has one sample's ``shape``, ``ndim``, ``size`` and ``dtype``.

    Comparisons, arithmetic and ``astype`` give more batched arrays (so masks made from
    ``x.data`` stay batched); reading values (``numpy.asarray``, ``float``, indexing) is a
    TypeError. ``data`` holds the whole batch's array (batch on axis 0), which the backend
    functions look through to find the backend (:func:`zerograd.backends.register_array_wrapper`).

    Args:
        data: the whole batch's array, the batch on axis 0.
        level: the vmap level it belongs to.
    """

    __slots__ = ("data", "level", "__weakref__")

    def __init__(self, data: Any, level: Level) -> None:
        self.data, self.level = data, level
        level.remember(data, self)

    @property
    def shape(self) -> tuple[int, ...]:
        """One sample's shape."""
        return tuple(self.data.shape[1:])

    @property
    def ndim(self) -> int:
        """One sample's number of axes."""
        return self.data.ndim - 1

    @property
    def size(self) -> int:
        """One sample's number of elements."""
        n = 1
        for d in self.data.shape[1:]:
            n *= d
        return n

    @property
    def dtype(self) -> Any:
        """The dtype."""
        return self.data.dtype

    @property
    def device(self) -> Any:
        """The device of the batch's array."""
        return getattr(self.data, "device", None)

    def __len__(self) -> int:
        if self.data.ndim < 2:
            raise TypeError("len() of a 0-d batched array")
        return self.data.shape[1]

    def astype(self, dtype: Any, copy: bool = True) -> BatchedData:
        """The batched array in ``dtype``."""
        return BatchedData(backend_of(self.data).astype(self.data, dtype), self.level)

    def as_variable(self) -> BatchedVariable:
        """The batched Variable holding this batch, no graph: what ``Variable(x.data)`` means."""
        return BatchedVariable(Constant(self.data), self.level)

    def _binary(self, other: Any, op: Any, reflected: bool) -> Any:
        if isinstance(other, Variable):
            return NotImplemented  # the Variable's operator records the operation
        a, b = self, other
        if isinstance(other, BatchedData) and other.level is not self.level:
            raise TypeError(
                "arrays of two vmap levels meet in one operation on raw arrays; compute "
                "with zerograd functions on the Variables instead"
            )
        nd = max(self.ndim, getattr(other, "ndim", 0))
        pa = _aligned_array(a, nd)
        pb = _aligned_array(b, nd) if isinstance(b, BatchedData) else b
        try:
            out = op(pb, pa) if reflected else op(pa, pb)
        except ValueError:  # shapes that do not broadcast: say it as one sample would
            mine = self._sample_error(other, op, reflected)
            if mine is None:
                raise
            raise mine from None
        return BatchedData(out, self.level)

    def _sample_error(self, other: Any, op: Any, reflected: bool) -> ValueError | None:
        """The error ``op`` gives on the first sample's arrays, or None if it gives none."""
        if not self.data.shape[0]:
            return None
        a = self.data[0, ...]
        b = other.data[0, ...] if isinstance(other, BatchedData) else other
        try:
            op(b, a) if reflected else op(a, b)
        except ValueError as error:
            return error
        return None

    def __repr__(self) -> str:
        return f"<batched array: {self.level.n} samples of shape {self.shape}, {self.dtype}>"

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise _no_values("numpy.asarray() of a batched array", self.level)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """A numpy array's operator meeting this one (``ndarray < x.data``): batched.

        The arithmetic and comparison operators give batched arrays, as they do with this
        array on the left; any other numpy ufunc would read the values (a TypeError).
        """
        name = ufunc.__name__
        op = _UFUNC_OPERATORS.get(name)
        if op is not None and method == "__call__" and not kwargs and len(inputs) == 2:
            reflected = inputs[1] is self
            return self._binary(inputs[0] if reflected else inputs[1], op, reflected)
        raise _no_values(f"numpy.{name}() of a batched array", self.level)

    def __float__(self) -> float:
        raise _no_values("float() of a batched array", self.level)

    def __int__(self) -> int:
        raise _no_values("int() of a batched array", self.level)

    def __bool__(self) -> bool:
        raise _no_values("bool() of a batched array", self.level)

    def __index__(self) -> int:
        raise _no_values("using a batched array as an index", self.level)

    def __iter__(self) -> Any:
        raise _no_values("iterating over a batched array", self.level)

    def __getitem__(self, index: Any) -> Any:
        raise _no_values(
            "indexing the raw array of a batched Variable (index the Variable instead)",
            self.level,
        )

    def item(self, *args: Any) -> Any:
        """Refused: there is no one sample's value to read (a TypeError, as ``float()``)."""
        raise _no_values("item() of a batched array", self.level)

    def tolist(self) -> Any:
        """Refused: there is no one sample's value to read (a TypeError, as ``float()``)."""
        raise _no_values("tolist() of a batched array", self.level)

    def __getattr__(self, name: str) -> Any:
        # Only names the class lacks get here (x.data.max(), x.data.T): say why, rather than
        # an AttributeError naming this internal class alone. Private and special names
        # (probed by numpy, copy, pickle) get the plain error; self is not read (no slot may
        # be set yet).
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(
            f"{name!r} of the raw array of a batched Variable (x.data) inside vmap: it "
            f"stands for one sample (shape, dtype, comparisons and arithmetic give batched "
            f"arrays) and has no array methods. Compute with zerograd functions on the "
            f"Variable instead (F.max(x), F.sum(x), x.reshape(...)), which are batched."
        )


_UFUNC_OPERATORS = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "divide": operator.truediv,
    "true_divide": operator.truediv,
    "power": operator.pow,
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
    "equal": operator.eq,
    "not_equal": operator.ne,
}
"""numpy's ufunc names for the operators a batched array takes from a numpy array."""


def _operator(op: Any, reflected: bool = False) -> Any:
    def method(self: BatchedData, other: Any) -> Any:
        return self._binary(other, op, reflected)

    return method


for _name, _op in {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "pow": operator.pow,
}.items():
    setattr(BatchedData, f"__{_name}__", _operator(_op))
    setattr(BatchedData, f"__r{_name}__", _operator(_op, reflected=True))
for _name, _op in {
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "eq": operator.eq,
    "ne": operator.ne,
}.items():
    setattr(BatchedData, f"__{_name}__", _operator(_op))
BatchedData.__neg__ = lambda self: BatchedData(-self.data, self.level)  # type: ignore[attr-defined]
BatchedData.__hash__ = None  # type: ignore[assignment]
register_array_wrapper(BatchedData)


def batch_values(a: Any) -> Any:
    """The array behind ``a`` for a check that every sample must pass: ``a`` itself outside vmap.

    Inside :func:`~zerograd.func.vmap` a batched array (a batched Variable's ``data``) stands
    for one sample and has no values to read. A check over values (ids in range,
    probabilities in ``[0, 1]``) holds for each sample exactly when it holds for the whole
    batch, whose array this returns (the samples on its leading axes). For checks only: the
    result is not batched, so computing with it would mix the samples.

    Args:
        a: an array, possibly the raw array of a batched Variable.

    Returns:
        A backend array.
    """
    while isinstance(a, BatchedData):
        a = a.data
    return a


def _aligned_array(a: BatchedData, ndim: int) -> Any:
    """``a``'s batch array with one-length axes after the batch axis, up to ``ndim`` + 1."""
    d = a.data
    missing = ndim - (d.ndim - 1)
    if missing <= 0:
        return d
    return get_array_module(d).reshape(d, (d.shape[0], *(1,) * missing, *d.shape[1:]))


class BatchedVariable(Variable):
    """A Variable standing for one sample inside :func:`~zerograd.func.vmap`.

    Its ``shape``, ``ndim``, ``size`` and ``dtype`` are one sample's; ``data`` is a
    :class:`BatchedData` (no values); every zerograd function applied to it runs on the
    whole batch (its batching rule). Reading a value (``float(x)``, ``x.item()``,
    ``x.numpy()``) is a TypeError, as is ``x.backward()``: use
    :func:`zerograd.func.grad` inside vmap.

    Args:
        phys: the plain Variable (or a batched one of an outer vmap) holding the whole
            batch, the batch on axis 0.
        level: the vmap level this value belongs to.
    """

    __slots__ = ("phys", "level", "_view")

    def __init__(self, phys: Variable, level: Level) -> None:
        self.phys, self.level = phys, level
        self.name = self.grad = self.creator = self._view = None
        self.generation = 0

    @property  # type: ignore[override]
    def data(self) -> Any:
        """The value as the function sees it: a :class:`BatchedData` (shape, dtype; no values)."""
        if not self.level.active:
            if self.level.proxy:  # a gradient an earlier walk left on a Constant: nobody's
                return self._stale()
            raise _no_values("using a batched Variable", self.level)
        view = self._view
        if view is None:
            if type(self.phys) is BatchedVariable:  # batched by an outer vmap too
                view = _NestedData(self)
            else:  # its array can leave now (as_array(x.data)): the level maps it back here
                view = BatchedData(self.phys.data, self.level)
                self.level.remember(self.phys.data, self)
            self._view = view
        return view

    def _stale(self) -> Any:
        """Zeros of one sample's shape, standing for a gradient a finished walk left.

        A backward walk of the transforms inside vmap (:class:`Level` ``proxy``) may leave
        a batched gradient on a Constant of the graph, a leaf nobody reads; a later walk
        over the same graph adds onto what a leaf holds, so that gradient has to add
        nothing.
        """
        view = self._view
        if type(view) is not _Stale:
            phys = self.phys
            while type(phys) is BatchedVariable:
                phys = phys.phys
            d = phys.data
            xp = backend_of(d).xp
            zeros = xp.zeros(tuple(self.phys.shape[1:]), dtype=d.dtype, device=device_of(d))
            view = self._view = _Stale(zeros)
        return view.zeros

    def __repr__(self) -> str:
        return f"BatchedVariable({self.level.n} samples of shape {self.shape}, {self.dtype})"

    def _one(self, to: str) -> Any:
        raise _no_values(f"{to}() of a batched Variable", self.level)

    def numpy(self) -> Any:
        """Refused: a batched Variable has no single value (TypeError)."""
        raise _no_values("numpy() of a batched Variable", self.level)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        raise _no_values("numpy.asarray() of a batched Variable", self.level)

    def backward(self, retain_grad: bool = False, create_graph: bool = False) -> None:
        """Refused inside vmap (TypeError): differentiate with :func:`zerograd.func.grad`."""
        raise TypeError(
            "backward() of a batched Variable inside vmap: the function runs on the whole "
            "batch at once; differentiate it with zerograd.func.grad (vmap(grad(f)) gives "
            "per-sample gradients)."
        )

    def detach(self) -> BatchedVariable:
        """The same batch with no graph behind it."""
        return BatchedVariable(self.phys.detach(), self.level)

    def to(self, backend: Any) -> Variable:
        """Refused inside vmap (TypeError): move the arguments before calling vmap."""
        raise TypeError("moving a batched Variable inside vmap: move the arguments before vmap")


class _Stale:
    """The zeros a stale gradient stands for (see :meth:`BatchedVariable._stale`)."""

    __slots__ = ("zeros",)

    def __init__(self, zeros: Any) -> None:
        self.zeros = zeros


class _NestedData(BatchedData):
    """The data of a BatchedVariable batched by two vmaps: the inner one's view of it."""

    __slots__ = ("owner",)

    def __init__(self, owner: BatchedVariable) -> None:
        self.owner, self.level = owner, owner.level
        inner = owner.phys.data  # the outer level's view: shape (n, *sample)
        self.data = inner.data  # the backend array, for backend lookups

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.owner.phys.shape[1:])

    @property
    def ndim(self) -> int:
        return self.owner.phys.ndim - 1

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def as_variable(self) -> BatchedVariable:
        return self.owner.detach()

    def astype(self, dtype: Any, copy: bool = True) -> BatchedData:
        raise _no_values("astype of a raw array batched by two vmaps", self.level)

    def _binary(self, other: Any, op: Any, reflected: bool) -> Any:
        if isinstance(other, Variable):
            return NotImplemented
        raise _no_values("arithmetic on a raw array batched by two vmaps", self.level)


class Level:
    """One vmap call: the batch size and the mode that batches every Function applied.

    Args:
        n: the batch size.
        parent: the mode current when the call started (zerograd.modes), or None.
        name: the vmapped function's name, for warnings.
        proxy: a level that a backward walk of the transforms enters for a vmap level
            (:meth:`zerograd.func.linearize.Linearization.walk`); its values left behind on
            a graph's Constants read as zeros once the walk is over.
    """

    def __init__(self, n: int, parent: Any, name: str = "f", proxy: bool = False) -> None:
        self.n, self.parent, self.name, self.proxy = n, parent, name, proxy
        self.active = True
        self.thread = threading.get_ident()  # (errors name another thread's use)
        self.warned: set[type] = set()
        self._arrays: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def remember(self, array: Any, owner: Any) -> None:
        """Note that ``array`` is the batch array of ``owner`` (a batched value of this level).

        Code that takes a batched Variable's array out (``zerograd.as_array(x.data)``) and
        gives it back to a function is then still batched.
        """
        try:
            self._arrays[id(array)] = owner
        except TypeError:  # a value that cannot be weakly referenced: not tracked
            pass

    def owner_of(self, x: Any) -> Any:
        """The batched value of this level whose batch array ``x`` (or ``x.data``) is."""
        d = x.data if isinstance(x, Variable) else x
        owner = self._arrays.get(id(d))
        if owner is None:
            return None
        phys = owner.phys if type(owner) is BatchedVariable else owner
        return owner if phys.data is d or phys is d else None

    def batch_array(self, v: Any) -> Any:
        """The batch array of ``v`` when it is a raw array batched by this level, else None."""
        if type(v) is BatchedData:
            return v.data if v.level is self else None
        if type(v) is _NestedData or not hasattr(v, "shape"):
            return None
        owner = self.owner_of(v)
        if owner is None:
            return None
        return owner.phys.data if type(owner) is BatchedVariable else owner.data

    def apply(self, fn: Any, inputs: tuple) -> Any:
        """Run ``fn`` on the batch when an input is batched by this level; else pass it on."""
        xs = list(inputs)
        batched = [False] * len(xs)
        found = False
        for i, x in enumerate(inputs):
            t = type(x)
            if t is BatchedVariable or t is BatchedData:
                if x.level is self:
                    xs[i] = x.phys if t is BatchedVariable else Constant(x.data)
                    batched[i] = found = True
                elif not x.level.active and not x.level.proxy:
                    raise _no_values(f"{type(fn).__name__} applied to a batched value", x.level)
            elif t is _NestedData:
                if x.level is not self:
                    raise _no_values(f"{type(fn).__name__} applied to a batched value", x.level)
                xs[i] = x.owner.phys
                batched[i] = found = True
            elif isinstance(x, Variable) and type(x.data) is BatchedData:
                if x.data.level is self:  # Variable(x.data): the batch, with no graph
                    xs[i] = Constant(x.data.data)
                    batched[i] = found = True
            elif isinstance(x, Variable) or hasattr(x, "shape"):
                owner = self.owner_of(x)
                if owner is not None:
                    xs[i] = owner.phys if type(owner) is BatchedVariable else Constant(owner.data)
                    batched[i] = found = True
        if not found and not any(self.batch_array(v) is not None for v in reads_of(fn)):
            return modes.below(self, fn, *inputs)
        # inputs that no gradient can reach (Constants, raw arrays): the result is one too,
        # computed without a graph (the backward then has nothing to do there)
        constant = not any(isinstance(x, Variable) and type(x) is not Constant for x in xs)
        with modes.suspended(self.parent), using_config("enable_backprop", not constant):
            rule = rule_for(type(fn))
            batch = Batch(self.n, xs, batched, self.batch_array)
            try:
                out = NotImplemented if rule is None else rule(fn, batch)
            except (ValueError, IndexError):
                mine = _sample_error(fn, xs, batched, self.n, self.batch_array)
                if mine is None:
                    raise
                raise mine from None
            if out is NotImplemented:
                self._warn(fn)
                out = _loop(fn, xs, batched, self.n, self.batch_array)
        if isinstance(out, (list, tuple)):
            return [self._wrap(fn, o, constant) for o in out]
        return self._wrap(fn, out, constant)

    def _wrap(self, fn: Any, out: Any, constant: bool) -> BatchedVariable:
        if not isinstance(out, Variable) or not out.shape or out.shape[0] != self.n:
            got = getattr(out, "shape", type(out).__name__)
            raise RuntimeError(
                f"the batching rule of {type(fn).__name__} returned {got}, not a Variable "
                f"with the batch of {self.n} on axis 0"
            )
        if constant and type(out) is not Constant:
            out = Constant(out.data)
        return BatchedVariable(out, self)

    def _warn(self, fn: Any) -> None:
        cls = type(fn)
        if cls in self.warned:
            return
        self.warned.add(cls)
        warnings.warn(
            f"vmap({self.name}): {cls.__module__}.{cls.__qualname__} has no batching rule for "
            f"these inputs; it runs once per sample in a Python loop (the same result, "
            f"slower). A rule can be added with zerograd.func.batching_rule.",
            VmapFallbackWarning,
            stacklevel=4,
        )


def _batched_reads(fn: Any, arrays: Any) -> dict:
    """``fn``'s attributes that a rule reads and that hold batched index arrays.

    Name -> (its parts, whether it was a tuple), of the names :data:`~.rules.registry.READS`
    lists for ``fn``'s class.
    """
    held = {}
    for name in READS.get(type(fn), ()):
        v = getattr(fn, name, None)
        parts = v if isinstance(v, tuple) else (v,)
        if any(arrays(p) is not None for p in parts):
            held[name] = (parts, isinstance(v, tuple))
    return held


def _on_sample(fn: Any, xs: list, batched: list, i: int, arrays: Any, held: dict) -> Any:
    """A copy of ``fn`` applied to sample ``i``: its batched inputs and index arrays."""
    args = [_sample(x, i) if b else x for x, b in zip(xs, batched)]
    one = copy.copy(fn)
    for name, (parts, was_tuple) in held.items():
        mine = tuple(p if arrays(p) is None else _sample(arrays(p), i) for p in parts)
        setattr(one, name, mine if was_tuple else mine[0])
    return one(*args)


def _sample_error(fn: Any, xs: list, batched: list, n: int, arrays: Any) -> Exception | None:
    """The error ``fn`` gives on the first sample it fails for, or None if none fails.

    The failure path of a batching rule: a rule computes on the whole batch, so an error
    it meets names the batch's shapes (``(n, 3, 4)``, an axis one further on), which the
    function given to vmap never saw. Run on the samples in turn, as a loop would, the
    function gives the error that function expects. Only ValueError and IndexError (shapes,
    axes, indices, values) are replaced; nothing is recorded.
    """
    held = _batched_reads(fn, arrays)
    with using_config("enable_backprop", False):
        for i in range(n):
            try:
                _on_sample(fn, xs, batched, i, arrays, held)
            except (ValueError, IndexError) as error:
                return error
            except Exception:  # a failure of its own on samples: keep the rule's error
                return None
    return None


def _loop(fn: Any, xs: list, batched: list, n: int, arrays: Any) -> Any:
    """``fn`` applied to each sample in turn (a copy of it per sample), the results stacked.

    Batched index arrays among the attributes a rule reads (:data:`~.rules.registry.READS`)
    are replaced by each sample's own on the copy.
    """
    held = _batched_reads(fn, arrays)
    results = [_on_sample(fn, xs, batched, i, arrays, held) for i in range(n)]
    if isinstance(results[0], (list, tuple)):
        return [F.stack([r[k] for r in results], axis=0) for k in range(len(results[0]))]
    return F.stack(results, axis=0)


def _sample(x: Any, i: int) -> Any:
    if isinstance(x, Variable):
        return F.get_item(x, i)
    return backend_of(x).getitem(x, i)


def active_levels() -> list[Level]:
    """The vmap levels of this context, outermost first."""
    out = []
    m = modes.current()
    while m is not None:
        if type(m) is Level:
            out.append(m)
        m = m.parent
    out.reverse()
    return out


def below_levels(levels: list[Level]) -> Any:
    """The mode the outermost of ``levels`` covers (the current mode when there is none)."""
    return levels[0].parent if levels else modes.current()


def peel(v: Any) -> tuple[Any, list[Level]]:
    """``v``'s plain value under its batched layers, and their levels, outermost first."""
    layers = []
    while type(v) is BatchedVariable:
        layers.append(v.level)
        v = v.phys
    layers.reverse()
    return v, layers


def wrap(v: Any, levels: list[Level]) -> Any:
    """A plain value with one batch axis per level (outermost first) as a value of them all."""
    for lv in levels:
        v = BatchedVariable(v, lv)
    return v


def expanded(base: Any, have: list[Level], want: list[Level]) -> Any:
    """``base`` (leading axes for ``have``) with a leading axis for each of ``want``.

    ``have`` is a subsequence of ``want``; a level ``base`` lacks becomes a broadcast axis
    (a view: each sample sees the same values). Variables go through zerograd functions
    (the result is connected to ``base``), arrays through their backend.
    """
    if have == want:
        return base
    shape = tuple(base.shape)
    k = len(have)
    lead, j = [], 0
    for lv in want:
        if j < k and have[j] is lv:
            lead.append(shape[j])
            j += 1
        else:
            lead.append(1)
    if j != k:
        raise RuntimeError("a batched value's levels are not among the active vmap levels")
    rest = shape[k:]
    target = tuple(lv.n for lv in want) + rest
    if isinstance(base, Variable):
        return F.broadcast_to(F.reshape(base, tuple(lead) + rest), target)
    backend = backend_of(base)
    return backend.broadcast_to(backend.xp.reshape(base, tuple(lead) + rest), target)


def permuted(x: Any, order: list[int]) -> Any:
    """``x`` with its leading axes in ``order`` (the rest kept), a Variable or an array."""
    if order == sorted(order):
        return x
    axes = tuple(order) + tuple(range(len(order), x.ndim))
    if isinstance(x, Variable):
        return F.transpose(x, axes)
    return get_array_module(x).permute_dims(x, axes)


def constant(x: Any) -> Variable:
    """A Constant holding array ``x`` (a batch of inputs nobody differentiates)."""
    return Constant(x)
