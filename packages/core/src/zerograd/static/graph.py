"""``static_graph``: run a step eagerly while recording it, then replay the recording.

A :class:`StaticGraph` files each call under the kind of its arguments (see
:func:`.calls.arguments`). For each kind, the first call runs plainly (a warm-up: lazy
initialisation happens there), the next ones run eagerly under a :class:`.trace.Trace`,
and as soon as two traces agree (:func:`.compare.difference`) the later one becomes a
:class:`.program.Program` that the following calls replay. A replay checks its guards
first (the shapes and dtypes of what it reads, a layer state's presence, the gradients
held) and, when one fails, the call is traced again. A trace that a replay could not
reproduce, or traces that keep differing, send that kind of call back to the eager engine
for good, with one :class:`StaticGraphWarning` saying why.
"""

from __future__ import annotations

import functools
import threading
import types
import warnings
from collections.abc import Callable
from typing import Any

from ..checks import integer
from ..recording import current, recording
from .calls import arguments, by_identity
from .compare import difference, undecided
from .names import WeaklyBound, watched
from .program import MISS, Program, Stale, Unreplayable
from .trace import Start, Trace

_FROM_LEARN = 5  # a warning's stacklevel from _eager: _eager, _learn, _trace, __call__, caller


class StaticGraphWarning(UserWarning):
    """A static-graph function runs eagerly for some calls from now on; the message says why."""


class _Kind:
    """What a StaticGraph keeps for one kind of call."""

    __slots__ = (
        "calls",
        "programs",
        "pending",
        "start",
        "differences",
        "eager",
        "world",
        "changes",
        "replays",
        "fresh",
        "doubts",
        "dropped",
        "dropped_at",
        "tracing",
    )

    def __init__(self) -> None:
        self.calls = 0  # warm-up calls made
        self.programs: list[Program] = []
        self.pending: dict[tuple, Trace] = {}  # state signatures -> the last unmatched trace
        self.start: Start | None = None  # what the last trace captured, looked at first
        self.differences = 0
        self.eager: str | None = None  # why this kind of call stays eager
        self.world: tuple | None = None  # the objects the last trace's names referred to
        self.changes = 0  # times those objects changed since a replay last ran
        self.replays = 0  # replays since the kind was last started over
        self.fresh = 0  # traces in a row that gave Parameters their first values
        self.doubts = 0  # agreeing traces whose calls were given equal argument values
        self.dropped = 0  # unmatched traces dropped from ``pending`` with no replay between
        self.dropped_at = 0  # ``replays`` when a trace was last dropped
        self.tracing = False  # a thread records a call of this kind now

    def start_over(self) -> None:
        """Forget every recording: the objects they name were replaced (a new model)."""
        self.calls = 0  # warm up again: a new model's lazily sized layers size themselves
        self.programs.clear()
        self.pending.clear()
        self.start = None
        self.differences = 0
        self.replays = 0
        self.fresh = 0
        self.doubts = 0
        self.dropped = 0
        self.dropped_at = 0


_INSTANCE_KEY = "_static_graphs"  # where an instance keeps its decorated methods' state


class _Recordings(dict):
    """An instance's StaticGraphs, one per decorated method (in its ``__dict__``).

    A copy or an unpickled instance starts with none: recordings name the Variables of
    the instance they were made on.
    """

    __slots__ = ()

    def __reduce__(self) -> tuple:
        return (_Recordings, ())


class StaticGraph:
    """A function whose calls are replayed from a recording once two recordings agree.

    Use it through :func:`static_graph`. Calling it calls the function (eagerly, or as a
    replay that gives bit-identical results); the attributes below report what happened.

    Args:
        fn: the function: a training step (forward, ``backward()``, an optimizer's
            ``update()``), or a forward to run under ``no_grad()``.
        warmup: plain eager calls of each kind of call before the first recording.
        max_kinds: kinds of call recorded at most; later kinds run eagerly.

    Attributes:
        counts: ``{"eager": n, "traced": n, "replayed": n}``, calls so far.
    """

    max_differences = 2  # traces of one kind that may disagree before it stays eager
    max_programs = 8  # programs per kind of call (layer states, held gradients...)
    max_changes = 3  # times in a row the objects a step names may change with no replay between
    max_fresh = 3  # recordings in a row that may give Parameters their first values
    max_doubts = 3  # agreeing recordings that cannot vouch for arrays made in Python
    max_variants = 8  # unmatched recordings kept per kind, one per starting state

    def __init__(self, fn: Callable, *, warmup: int = 1, max_kinds: int = 32) -> None:
        if not callable(fn):
            raise TypeError(f"static_graph: expected a function, got {type(fn).__name__}")
        warmup = integer("static_graph", "warmup", warmup, low=0)
        max_kinds = integer("static_graph", "max_kinds", max_kinds, low=0)
        functools.update_wrapper(self, fn)
        self.fn = fn
        # a callable object (a Model) has no __qualname__ of its own: its class names it
        self._name = getattr(fn, "__qualname__", type(fn).__qualname__)
        self.warmup = warmup
        self.max_kinds = max_kinds
        self.counts = {"eager": 0, "traced": 0, "replayed": 0}
        self._kinds: dict[tuple, _Kind] = {}
        self._overflow: _Kind | None = None  # the calls past max_kinds kinds, all eager
        self._warned: set[str] = set()
        self._lock = threading.Lock()
        # a program's Functions keep what a forward leaves for its vjp (dropout's mask):
        # one replay at a time, or two threads would mix them
        self._replaying = threading.RLock()

    def __reduce__(self) -> tuple:
        # a copy (deepcopy, pickle) wraps a copy of the function and starts with no
        # recordings: those name the original's Variables, and the lock cannot be copied
        return (_remade, (self.fn, self.warmup, self.max_kinds))

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """On an instance: its own StaticGraph of the method, kept in the instance.

        The instance is then no argument of the calls (no key holds it), and its
        recordings go when it goes (a class attribute would keep every instance alive).
        An instance with no ``__dict__`` gets the method bound as usual: it is the first
        argument of each call.
        """
        if obj is None:
            return self
        d = getattr(obj, "__dict__", None)
        if type(d) is not dict:
            return types.MethodType(self, obj)
        mine = d.get(_INSTANCE_KEY)
        if mine is None:
            mine = d.setdefault(_INSTANCE_KEY, _Recordings())
        bound = mine.get(self)
        if bound is not None and bound.fn.__self__ is not obj:
            # a shallow copy (copy.copy) shares its original's __dict__ entries: its own
            # recordings start empty, or its calls would replay the original's
            mine = d[_INSTANCE_KEY] = _Recordings()
            bound = None
        if bound is None:
            try:  # weakly: a method bound here would hold obj, whose __dict__ holds it
                method = WeaklyBound(self.fn, obj)
            except TypeError:  # (an object that takes no weak references)
                method = types.MethodType(self.fn, obj)
            made = StaticGraph(method, warmup=self.warmup, max_kinds=self.max_kinds)
            made.__doc__, made.__module__ = self.fn.__doc__, self.fn.__module__  # (not the class's)
            bound = mine.setdefault(self, made)
        return bound

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function: eagerly, recorded, or as a replay of its recording.

        Args:
            *args: its positional arguments.
            **kwargs: its keyword arguments.

        Returns:
            What it returns (from a replay: Variables without a graph).
        """
        if current() is not None:  # inside another function's recording: part of it
            return self.fn(*args, **kwargs)
        key, leaves = arguments(args, kwargs)
        kind = self._kinds.get(key)
        if kind is None:
            kind = self._new_kind(key)
        if kind.eager is None and kind.calls >= self.warmup:
            programs = list(kind.programs)
            for program in programs:
                with self._replaying:
                    out = program(leaves)
                if out is MISS:
                    continue
                if type(out) is Stale:
                    self._stale(kind, out.what)
                    break
                self.counts["replayed"] += 1
                kind.replays += 1
                return out
            else:
                if self._claim(kind, len(programs)):
                    try:
                        return self._trace(kind, args, kwargs, leaves)
                    finally:
                        kind.tracing = False
        kind.calls += 1
        self.counts["eager"] += 1
        return self.fn(*args, **kwargs)

    def sources(self) -> list[str]:
        """The generated Python source of every replay made so far (to read, or debug).

        Returns:
            One source text per program.
        """
        return [p.source for kind in self._kinds.values() for p in kind.programs]

    def _new_kind(self, key: tuple) -> _Kind:
        with self._lock:
            if len(self._kinds) >= self.max_kinds:  # not filed: its key would hold its values
                if self._overflow is None:
                    self._overflow = _Kind()
                    objects = by_identity(key)
                    why = (
                        "pass numbers that change from call to call as 0-d arrays"
                        if not objects
                        else f"its arguments include {', '.join(objects)} objects, which are "
                        f"told apart by identity, so a new one makes a new kind of call: pass "
                        f"their arrays and numbers instead (or a tuple, list, dict or named "
                        f"tuple of them)"
                    )
                    self._eager(
                        self._overflow,
                        f"more than {self.max_kinds} kinds of call (argument shapes, dtypes "
                        f"or values) were seen; {why}",
                        4,  # the warning's stacklevel: _eager, _new_kind, __call__, caller
                    )
                return self._overflow
            kind = self._kinds[key] = _Kind()
        return kind

    def _claim(self, kind: _Kind, tried: int) -> bool:
        """Whether this call, having tried ``tried`` programs of ``kind``, may record it.

        One recording of a kind at a time, and none once a program was made since the call
        looked: threads that all found no program would each record, every second
        recording would become a program of its own, and past :attr:`max_programs` the
        kind would run eagerly for good. A call refused here runs eagerly (the same bits).
        """
        with self._lock:
            if kind.tracing or len(kind.programs) != tried:
                return False
            kind.tracing = True
            return True

    def _stale(self, kind: _Kind, what: str) -> None:
        """An object a recording names was replaced: start the kind over, or stay eager."""
        with self._lock:
            kind.changes = kind.changes + 1 if kind.replays == 0 else 1
            if kind.changes > self.max_changes:
                self._eager(kind, _changing(what), _FROM_STALE)
            else:
                kind.start_over()

    def _trace(self, kind: _Kind, args: tuple, kwargs: dict, leaves: list) -> Any:
        trace = Trace(leaves, kind.start, watched(self.fn))
        with recording(trace):
            result = self.fn(*args, **kwargs)
        trace.finish(result)
        self.counts["traced"] += 1
        with self._lock:
            self._learn(kind, trace)
        return result

    def _learn(self, kind: _Kind, trace: Trace) -> None:
        """Compare ``trace`` with the last one of its variant; build a program if they agree."""
        if trace.fresh is not None:  # a layer sized itself: not a call like the next ones
            kind.fresh += 1
            kind.start = None
            if kind.fresh > self.max_fresh:
                self._eager(
                    kind,
                    f"in each of its last {kind.fresh} recorded calls {trace.fresh} (a layer "
                    f"or Parameter made inside the step?); make them once, outside it",
                    _FROM_LEARN,
                )
            return
        kind.fresh = 0
        if trace.refused is not None:
            self._eager(kind, trace.refused, _FROM_LEARN)
            return
        names = trace.names()
        world = (trace.version, tuple([(id(n.holder), n.name, id(n.value)) for n in names]))
        world += (tuple([n.contents() for n in names]),)
        if kind.world is not None and world != kind.world:
            # the step's names refer to other objects than at the last recording (a new
            # model): the recordings kept so far are of the old ones
            kind.pending.clear()
            kind.changes = kind.changes + 1 if kind.replays == 0 else 1
            if kind.changes > self.max_changes:
                self._eager(kind, _changing(_what_changed(kind.world, world, trace)), _FROM_LEARN)
                return
        kind.world = world
        kind.start = trace.start()
        variant = trace.variant()
        earlier = kind.pending.pop(variant, None)
        if earlier is None:
            if len(kind.pending) >= self.max_variants:
                # a recording keeps every array its call made: calls that start from ever
                # new states (which parameters held a gradient) would keep one each, forever
                del kind.pending[next(iter(kind.pending))]  # the oldest
                if kind.dropped_at != kind.replays:  # a replay ran since the last drop
                    kind.dropped, kind.dropped_at = 0, kind.replays
                kind.dropped += 1
                if kind.dropped > self.max_variants:
                    self._eager(
                        kind,
                        f"its recorded calls kept starting from new states (which "
                        f"parameters held a gradient for backward() to add onto, layer "
                        f"states, train/eval modes): {kind.dropped + self.max_variants} with "
                        f"no replay between; start each call from the same state "
                        f"(model.cleargrads() inside the step)",
                        _FROM_LEARN,
                    )
                    return
            kind.pending[variant] = trace
            return
        why = difference(earlier, trace)
        doubt = undecided(earlier, trace) if why is None else None
        if doubt is not None:  # wait for a call with other values
            kind.pending[variant] = trace
            kind.doubts += 1
            if kind.doubts > self.max_doubts:
                self._eager(
                    kind,
                    f"in each of its last {kind.doubts} recorded calls {doubt}: recordings "
                    f"of calls given equal values cannot tell such an array from a constant; "
                    f"make it with zerograd's functions, or outside the step (pass it in)",
                    _FROM_LEARN,
                )
            return
        if why is not None:
            kind.pending[variant] = trace
            kind.differences += 1
            if kind.differences >= self.max_differences:
                self._eager(
                    kind,
                    f"two of its calls with the same kind of arguments did different work "
                    f"({why}): Python control flow depends on the data or on values that "
                    f"change between calls",
                    _FROM_LEARN,
                )
            return
        try:
            program = Program(earlier, trace, self._name)
        except Unreplayable as exc:
            self._eager(kind, str(exc), _FROM_LEARN)
            return
        kind.programs.append(program)
        if len(kind.programs) > self.max_programs:
            self._eager(kind, f"its guards failed for {self.max_programs} recordings", _FROM_LEARN)

    def _eager(self, kind: _Kind, why: str, stacklevel: int) -> None:
        """Send ``kind`` to the eager engine for good; warn once per reason.

        ``stacklevel`` is the warning's, counted from here: the frame of the code that
        called the StaticGraph.
        """
        kind.eager = why
        kind.programs.clear()
        kind.pending.clear()
        if why not in self._warned:
            self._warned.add(why)
            warnings.warn(
                f"static_graph({self._name}): {why}. Calls like this one run eagerly "
                f"from now on (same results, no replay).",
                StaticGraphWarning,
                stacklevel=stacklevel,
            )


_FROM_STALE = 4  # from _eager: _eager, _stale, __call__, caller


def _changing(what: str) -> str:
    return (
        f"{what} on one call after another, with no replay between: a replay works on the "
        f"objects it recorded, so each change starts the recording over; pass what changes "
        f"as an argument (numbers as 0-d arrays)"
    )


def _what_changed(before: tuple, after: tuple, trace: Trace) -> str:
    if before[0] != after[0]:
        return "a layer's Parameter or sub-layer was replaced"
    old = {(h, name): v for h, name, v in before[1]}
    held = dict(zip([(h, name) for h, name, _ in before[1]], before[2]))
    for n in trace.names():
        if old.get((id(n.holder), n.name)) != id(n.value):
            return f"{n.describe()!r} refers to another object"
        if held.get((id(n.holder), n.name)) != n.contents():
            return f"{n.describe()!r} holds other objects"
    return "the names the step reads changed"


def _remade(fn: Callable, warmup: int, max_kinds: int) -> StaticGraph:
    return StaticGraph(fn, warmup=warmup, max_kinds=max_kinds)


def static_graph(fn: Callable | None = None, *, warmup: int = 1, max_kinds: int = 32) -> Any:
    """Record a function's array work once and replay it, bit-identical, on later calls.

    Use it as ``@static_graph`` or ``@static_graph(warmup=...)`` on a training step (forward,
    ``backward()``, ``optimizer.update()``) or on a forward run under ``no_grad()``. Each
    kind of call (argument shapes, dtypes, backend, other argument values, train/test mode)
    runs eagerly once, is then recorded twice, and from the third call on the recording is
    replayed: the Functions' forwards and vjps, the walk's accumulations and the optimizer's
    update run on the new arrays with no graph objects. What the replay cannot reproduce
    (Python reading values, control flow that differs between calls, arrays changed by
    hand) keeps that kind of call eager, with one :class:`StaticGraphWarning`.

    Args:
        fn: the function to decorate; None for the ``@static_graph(...)`` form.
        warmup: plain eager calls of each kind of call before recording.
        max_kinds: kinds of call recorded at most; calls of later kinds run eagerly (each
            kind's key holds its argument values: numbers, hashable objects).

    Returns:
        A :class:`StaticGraph` (or a decorator making one).

    Raises:
        TypeError: ``fn`` is not callable, or ``warmup`` or ``max_kinds`` is not an int.
        ValueError: ``warmup`` or ``max_kinds`` is negative.

    Examples:
        >>> import numpy as np
        >>> from zerograd import Parameter
        >>> w = Parameter(np.array([1.0, 2.0]))
        >>> @static_graph
        ... def step(x):
        ...     w.cleargrad()
        ...     loss = (w * x).sum()
        ...     loss.backward()
        ...     return loss
        >>> for _ in range(4):
        ...     loss = step(np.array([3.0, 4.0]))
        >>> float(loss.data), w.grad.data, step.counts
        (11.0, array([3., 4.]), {'eager': 1, 'traced': 2, 'replayed': 1})
    """
    if fn is None:  # checked now: an error at the decorator's line, not at the def's
        integer("static_graph", "warmup", warmup, low=0)
        integer("static_graph", "max_kinds", max_kinds, low=0)
        return lambda f: StaticGraph(f, warmup=warmup, max_kinds=max_kinds)
    return StaticGraph(fn, warmup=warmup, max_kinds=max_kinds)
