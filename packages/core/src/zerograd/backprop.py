"""The backward engine: an iterative walk of the graph in dependency order."""

from __future__ import annotations

import gc
import operator
import threading
from typing import Any

from .backends import get_array_module
from .backends.registry import registry as _registry
from .config import _enable_backprop
from .function import Function, revived
from .namespaces import VARIABLE_OPS, array_ops_by_type
from .utils import add_note
from .variable import Variable, as_array

_by_type = _registry.by_type
_data = operator.attrgetter("data")
storing = threading.Lock()
"""Held by whoever reads a leaf's held gradient and replaces it (a walk's end, a trace's
planned walk), so that backwards in two threads add onto each other's results."""


class _Count:
    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


class _ThreadCount(threading.local):
    n = 0  # (a class attribute: every thread starts from it)


# Walks that gave intermediates gradients or took them (retain_grad, a held gradient that
# flowed on), counted under `storing`: in all threads, and in this thread. A walk reads an
# intermediate's held gradient while it runs, not at its end; one that sees another
# thread's walk store such gradients meanwhile runs again, so that its result is the one it
# would have after that walk (the engine's promise: as one after the other).
_intermediates = _Count()
_mine = _ThreadCount()


def backward(y: Variable, retain_grad: bool = False, create_graph: bool = False) -> None:
    """Accumulate d(y)/d(x) into ``x.grad`` for every variable ``x`` upstream of ``y``.

    Functions are visited once each, a function as soon as every use of its outputs
    upstream of ``y`` has passed its gradient on (dependency counts, as PyTorch's engine
    does; a first pass counts the uses). Ready functions wait on a stack, so the walk is
    O(n) and finishes a branch while its arrays are still in cache: in
    ``y = x_1 * w + ... + x_K * w`` each product is visited right after its sum, where an
    order by generation keeps all K products waiting until every sum is done.

    Python's cyclic garbage collector is paused during the walk (unless it was already
    off). The walk makes no reference cycles, but its short-lived tuples trigger
    collections that traverse the whole graph held by ``y``; pausing them takes about 30%
    off the backward of a 16,000-leaf sum.

    Gradients travel in a dict private to the walk and reach the variables only when the
    walk has succeeded, so a failure anywhere changes nothing. Without ``create_graph``
    they are plain backend arrays and each function's ``vjp`` runs on the backend's own
    functions (the fast path: no graph is built); with it they are Variables and ``vjp``
    runs on zerograd's differentiable functions. The walk picks that mode once, as its
    carrier (an :class:`~zerograd.namespaces.ArrayOps` or the
    :class:`~zerograd.namespaces.VariableOps`), and asks the carrier whenever a gradient
    changes hands (:data:`~zerograd.namespaces.CARRIER`). A gradient object (and its array) ends
    up in one variable only: a leaf or retained gradient that is already held elsewhere
    is copied.

    Args:
        y: The variable to differentiate; its own gradient starts as ones.
        retain_grad: Keep the gradients of intermediate variables too.
        create_graph: Record the backward computation (for higher-order gradients).

    Raises:
        Exception: Whatever a function's ``vjp`` or ``backward`` raises; no gradient has
            changed then (``y.grad`` included).
    """
    if not gc.isenabled():
        while not _walk(y, retain_grad, create_graph):
            pass
        return
    gc.disable()
    try:
        while not _walk(y, retain_grad, create_graph):
            pass
    finally:
        gc.enable()


def _walk(y: Variable, retain_grad: bool, create_graph: bool) -> bool:
    """The walk :func:`backward` describes; False when it must run again, having changed nothing.

    That is when another thread's walk gave or took intermediates' gradients while this one
    ran (see :data:`_intermediates`).
    """
    others = _intermediates.n - _mine.n  # (nested walks in this thread are part of this one)
    seed = y.grad
    if seed is not None:
        check_seed(y, seed)
    if seed is None:
        ones = get_array_module(y.data).ones_like
        y.grad = Variable(ones(y.data))
    f = y.creator
    if f is None:
        return True
    g = y.grad
    if not isinstance(g, Variable):  # the book's step 9 seeds y.grad with an array
        g = Variable(as_array(g, like=y.data))
    carrier = VARIABLE_OPS if create_graph else array_ops_by_type[type(g.data)]
    graph = carrier.graph  # the one question of mode, asked where a vjp is called
    ops = array_ops_by_type  # first order: each vjp runs on its gradient's own backend
    start = carrier.unwrap(g)
    grads: dict[Variable, Any] = {y: start}
    leaves: list[Variable] = []  # in the order they got their first gradient
    retained: list[tuple[Variable, Any]] = []  # (intermediate, its gradient) to keep
    cleared: list[Variable] = []  # intermediates whose (stale) gradient goes at the end
    ready = [f]
    token = _enable_backprop.set(create_graph)
    try:
        deps = consumer_counts(f)  # this walk's own: other walks (nested, threads) keep theirs
        while ready:
            f = ready.pop()
            refs = f.outputs
            lean = f._lean
            # a lean function's edges: input Variables, and the creators of inputs it did not
            # keep (resolved below, where the gradients are filed)
            inputs = f._in
            if len(refs) == 1:  # fast path: one output (nearly every function), no tuples
                o = refs[0]()
                # its gradient is filed under its output while that lives (a key holds it),
                # under f itself once the user dropped it (see the input loop): one key each
                gy = grads.pop(f if o is None else o, None)
                if o is not None:  # (None: the user dropped it and no function reads it)
                    if retain_grad:
                        retained.append((o, gy))
                    elif o.grad is not None and gy is not None:
                        cleared.append(o)
                if gy is None:  # nothing reached f: its inputs' creators only hear it is done
                    gxs = (None,) * len(inputs)
                elif not f._vjp:
                    gxs = dezero_backward(f, carrier, (gy,))
                elif graph:
                    if f._keeps_y and (o is None or o.data is None):
                        o = revived(f, 0)
                    gxs = _on_graph(
                        f, f.vjp(carrier, _NONES[len(inputs)] if lean else inputs, o, gy)
                    )
                else:  # first order: arrays and the backend's functions
                    if lean:  # its vjp reads no input value
                        xs = _NONES[len(inputs)]
                    elif len(inputs) == 2:  # built directly: a third of tuple(map(...))'s cost
                        xs = (inputs[0].data, inputs[1].data)
                    else:
                        xs = tuple(map(_data, inputs))
                    yd = None if o is None else o.data
                    if yd is None and f._keeps_y:
                        yd = f._ys
                    gxs = f.vjp(ops[type(gy)], xs, yd, gy)
            else:  # the generic path: any number of outputs, some of them maybe gone
                outputs = [ref() for ref in refs]
                gys = tuple([None if o is None else grads.pop(o, None) for o in outputs])
                for o, g in zip(outputs, gys):
                    if o is None:
                        continue
                    if retain_grad:
                        retained.append((o, g))
                    elif o.grad is not None and g is not None:
                        cleared.append(o)
                if all(g is None for g in gys):
                    gxs = (None,) * len(inputs)
                elif not f._vjp:
                    gxs = dezero_backward(f, carrier, gys)
                elif graph:
                    if f._keeps_y:
                        outputs = [revived(f, i) for i in range(len(refs))]
                    xs = _NONES[len(inputs)] if lean else inputs
                    gxs = _on_graph(f, f.vjp(carrier, xs, tuple(outputs), gys))
                else:
                    some = next(g for g in gys if g is not None)
                    xs = _NONES[len(inputs)] if lean else tuple(map(_data, inputs))
                    ys = tuple([None if o is None else o.data for o in outputs])
                    if f._keeps_y:
                        ys = tuple([a if a is not None else b for a, b in zip(ys, f._ys)])
                    gxs = f.vjp(ops[type(some)], xs, ys, gys)
            if type(gxs) is not tuple:
                gxs = tuple(gxs) if type(gxs) is list else (gxs,)
            if len(gxs) != len(inputs):
                raise RuntimeError(
                    f"{_name(f)} returned {len(gxs)} gradients for "
                    f"{len(inputs)} inputs; return one per input (None where there is none)."
                )
            for x, gx in zip(inputs, gxs):
                if lean and type(x) is not Variable and isinstance(x, Function):
                    outs = x.outputs
                    if not outs:  # an unchained output: its gradient goes nowhere
                        continue
                    v = outs[0]()
                    if v is None:  # dropped: reached through its creator x, which keys it
                        n = deps[x]
                        if n == 1:
                            ready.append(x)
                        else:
                            deps[x] = n - 1
                        if gx is not None:
                            if type(gx) not in _by_type:
                                gx = _numbers(f, carrier.carry(gx, None))
                            g = grads.get(x)
                            grads[x] = gx if g is None else _joined(g, gx, carrier)
                        continue
                    x = v  # still held: the Variable gets its gradient as any input
                creator = x.creator
                if creator is not None:  # one consumer of creator's outputs done
                    n = deps[creator]
                    if n == 1:
                        ready.append(creator)
                    else:
                        deps[creator] = n - 1
                if gx is None:
                    continue
                xd = x.data
                if type(gx) not in _by_type or xd is None or gx.shape != xd.shape:
                    gx = _checked_grad(f, x, carrier.carry(gx, xd))
                g = grads.get(x)
                if g is None:
                    if creator is None:  # a leaf: onto its held gradient at the end
                        leaves.append(x)
                    elif x.grad is not None:  # an intermediate's held gradient flows on (DeZero)
                        gx = _plus_held(x, gx, carrier)
                    grads[x] = gx
                else:  # one more gradient for x
                    total = g + gx
                    if type(total) not in _by_type:  # a library scalar, or a Variable
                        total = carrier.carry(total, xd)
                    grads[x] = total
        if len(grads) != len(leaves):  # (once per walk) a gradient no function took
            _stale(grads, leaves)
        with storing:  # the held gradients read and replaced in one step (threads)
            if _intermediates.n - _mine.n != others:  # (rare: see _intermediates)
                y.grad = seed
                return False
            _onto_held(grads, leaves, carrier)
            # a preset seed is the user's (y drops it unless retained): never hand it on
            _store(grads, leaves, retained, cleared, carrier, None if seed is None else start)
            if retained or len(cleared) > 1 or (cleared and cleared[0] is not y):  # (y: own)
                _intermediates.n += 1
                _mine.n += 1
        return True
    except BaseException as exc:
        y.grad = seed
        if isinstance(exc, (TypeError, AttributeError)) and "NoneType" in str(exc) and f._vjp:
            _note_broken_promise(exc, f)
        raise
    finally:
        _enable_backprop.reset(token)


def _stale(grads: dict, leaves: list) -> None:
    """Raise for the gradient the walk filed for a Variable its creator no longer lists.

    Every gradient the walk files is taken by the output's creator or given to a leaf; one
    left over belongs to a Variable whose creator was called again after making it (a
    Function records only its latest call), and without this its inputs would silently get
    no gradient.
    """
    held = {id(x) for x in leaves}
    for v in grads:
        if isinstance(v, Variable) and id(v) not in held and v.creator is not None:
            name = type(v.creator).__name__
            raise RuntimeError(
                f"backward: the {name} that made a variable of this graph was called again "
                f"afterwards, so that variable's gradient reaches nothing; {_one_per_call(name)}"
            )


def _one_per_call(name: str) -> str:
    """The advice both errors for a reused Function object end with."""
    return (
        f"a Function object records only its latest call. Make a new one for each call "
        f"({name}()(x), as the book's functions do). Nothing was changed."
    )


def _note_broken_promise(exc: BaseException, f: Function) -> None:
    """Add to a vjp's ``NoneType`` error what the engine passed as None, and why.

    (A TypeError from an operation on None, or an AttributeError: ``xs[0].shape``.)
    """
    flags = []
    if f._lean and type(f).vjp_reads_inputs is False:
        flags.append("vjp_reads_inputs = False, so its xs are None")
    if not f._keeps_y:
        flags.append("vjp_reads_outputs = False, so its y is None once the output is dropped")
    if flags:
        add_note(
            exc,
            f"{type(f).__name__} sets {'; and '.join(flags)}: set the flag True (or leave "
            f"it out) if its vjp reads that value.",
        )


def consumer_counts(f: Function) -> dict[Function, int]:
    """Count, for every function upstream of ``f``, the uses of its outputs upstream of ``f``.

    One pass, no recursion. The counts are the walk's own (a dict it alone holds), so
    walks over a shared graph, nested or in other threads, never see each other's. With
    the ready stack they fix the walk's order: a static-graph trace plans its backward
    from them too (:mod:`zerograd.static.schedule`).

    Args:
        f: the function the walk starts from (the creator of the ``y`` of :func:`backward`).

    Returns:
        Function -> the number of its outputs' uses upstream of ``f`` (``f`` itself: 0).

    Raises:
        RuntimeError: ``f`` is upstream of itself (one Function object called on its own
            output), which no walk could finish.
    """
    deps = {f: 0}
    todo = [f]
    pop, push = todo.pop, todo.append
    get = deps.get
    while todo:
        for x in pop()._in:
            if isinstance(x, Variable):
                c = x.creator
                if c is None:
                    continue
            else:  # a lean function's edge: the creator of its input (see Function.inputs)
                outs = x.outputs
                if not outs:  # the input was unchained
                    continue
                v = outs[0]()
                c = x if v is None else v.creator
                if c is None:
                    continue
            n = get(c)
            if n is None:
                deps[c] = 1
                push(c)
            else:
                deps[c] = n + 1
    if deps[f]:  # f consumes its own output, upstream of itself: a cycle (walked forever)
        name = type(f).__name__
        raise RuntimeError(
            f"backward: the graph has a cycle through {name}: one {name} object was called "
            f"on its own output (f = {name}(); f(f(x))); {_one_per_call(name)}"
        )
    return deps


class _Nones(dict):
    """``(None,) * n`` by ``n``, each made once: the input values a lean vjp is given."""

    def __missing__(self, n: int) -> tuple:
        self[n] = value = (None,) * n
        return value


_NONES = _Nones()


def _joined(g: Any, gx: Any, carrier: Any) -> Any:
    """The sum of two gradients for one dropped input, as the walk carries gradients."""
    total = g + gx
    return total if type(total) in _by_type else carrier.carry(total, None)


def check_seed(y: Variable, seed: Any) -> None:
    """Refuse a gradient preset on ``y`` (the one backward starts from) of another shape.

    Without this, the first vjp would get it and fail (or broadcast it) far from the cause.

    Args:
        y: the Variable backward starts from.
        seed: the gradient it holds (a Variable, or an array as the book's step 9 sets).

    Raises:
        ValueError: ``seed`` has another shape than ``y``.
    """
    g = seed.data if isinstance(seed, Variable) else seed
    shape = getattr(g, "shape", None)
    if shape is None and isinstance(g, (bool, int, float, complex)):
        shape = ()
    want = getattr(y.data, "shape", None)
    if shape is None or want is None or tuple(shape) == tuple(want):
        return
    who = f"y (named {y.name!r})" if y.name else "y"
    raise ValueError(
        f"backward: {who} has shape {tuple(want)} but its preset gradient y.grad has shape "
        f"{tuple(shape)}; the gradient backward starts from must have y's shape. Assign "
        f"one of shape {tuple(want)}, or call y.cleargrad() to start from ones."
    )


def _numbers(f: Function, gx: Any) -> Any:
    """``gx`` (already as the walk carries it), refused unless it holds numbers.

    A derivative that returns a string or an object would otherwise go on as an array of
    that dtype (numpy converts anything), and for a 0-d input end up in ``x.grad``.
    """
    a = gx.data if isinstance(gx, Variable) else gx
    dtype = getattr(a, "dtype", None)
    if dtype is not None:
        backend = _registry.resolve_type(type(a))  # (an array subclass: its base's backend)
        if backend is None or backend.dtype_kind(dtype) in "biufc":
            return gx
    raise TypeError(
        f"{_name(f)} returned a gradient of dtype {dtype}, not numbers; return an "
        f"array or a Variable of numbers (None for an input without a gradient)."
    )


def _checked_grad(f: Function, x: Variable, gx: Any) -> Any:
    """``gx`` (already as the walk carries it), checked to be numbers of ``x``'s shape."""
    gx = _numbers(f, gx)
    xd = x.data  # None when the user dropped it (DeZero's memory trick)
    if xd is not None and gx.shape != xd.shape:
        raise RuntimeError(
            f"{_name(f)} returned a gradient of shape {tuple(gx.shape)} for an "
            f"input of shape {tuple(xd.shape)}; a gradient must have its input's shape (use sum_to "
            f"to undo broadcasting)."
        )
    return gx


def _name(f: Function) -> str:
    """``Cls.vjp`` or ``Cls.backward``: the method that computed ``f``'s gradients."""
    return f"{type(f).__name__}.{'vjp' if f._vjp else 'backward'}"


def dezero_backward(f: Function, carrier: Any, gys: tuple) -> Any:
    """Call a DeZero-style ``backward(*gys)`` (Variables in, Variables out) from the walk.

    Args:
        f: a Function that defines ``backward`` rather than ``vjp``.
        carrier: the walk's carrier (:data:`~zerograd.namespaces.CARRIER`).
        gys: the output gradients as carried (None where an output got none).

    Returns:
        What ``backward`` returned, its Variables unwrapped as the carrier carries them.
    """
    gxs = f.backward(*[None if g is None else carrier.wrap(g) for g in gys])
    if carrier.graph:
        return _on_graph(f, gxs)
    if type(gxs) is not tuple:
        return _returned(gxs, carrier)
    return tuple([_returned(g, carrier) for g in gxs])


def _returned(g: Any, carrier: Any) -> Any:
    """One gradient a book-style ``backward`` returned, as the walk carries gradients."""
    if isinstance(g, Variable):
        return carrier.unwrap(g)
    return g


def _on_graph(f: Function, gxs: Any) -> Any:
    """What ``f``'s derivative returned under ``create_graph``, every gradient a Variable.

    A gradient computed on arrays (the book's step 9 backward, a vjp stepping off its
    namespace to ``x.data`` and numpy) has no graph: as a constant it would make
    every higher derivative through ``f`` silently miss its part. It becomes the output of
    :class:`_Offgraph` instead, which has its value and refuses to be differentiated,
    naming ``f``. A Variable is taken as it is (``Variable(array)`` for a gradient that
    truly is constant).
    """
    many = type(gxs) in (tuple, list)
    gs = tuple(gxs) if many else (gxs,)
    for g in gs:
        if _off(g):
            break
    else:
        return gxs
    out = tuple([_Offgraph(f)(g) if _off(g) else g for g in gs])
    return out if many else out[0]


def _off(g: Any) -> bool:
    """Whether a derivative's result ``g`` is an array (or a library scalar), no Variable.

    (A Python number goes on as a constant of its input's dtype; anything else is refused
    where the walk checks gradients.)
    """
    return not isinstance(g, Variable) and hasattr(g, "shape") and hasattr(g, "dtype")


class _Offgraph(Function):
    """A gradient computed off the graph under ``create_graph``, as a Variable.

    Differentiating it raises, naming the Function whose derivative computed it (see
    :func:`_on_graph`).
    """

    def __init__(self, f: Function) -> None:
        self.of = _name(f)

    def forward(self, g: Any) -> Any:
        return g

    def backward(self, gy: Any) -> Any:  # (no vjp: it reads nothing, and only raises)
        raise RuntimeError(
            f"{self.of} computed its gradient on arrays (x.data, numpy), not on Variables, "
            f"under backward(create_graph=True), so that gradient cannot be differentiated "
            f"again: a higher derivative would miss its part. Compute it from Variables "
            f"(self.inputs, gy and zerograd.functions), or write the derivative as "
            f"vjp(self, xp, xs, y, gy) with xp's names; wrap a gradient that truly is "
            f"constant as Variable(array). Nothing was changed."
        )


def _onto_held(grads: dict, leaves: list, carrier: Any) -> None:
    """Add each leaf's walk total onto the gradient it held before the walk (DeZero).

    Run with :data:`storing` held, right before :func:`_store`: a backward in another
    thread that reaches the same leaf adds onto what this one stored, as it would one after
    the other. Raises (changing nothing) for a held gradient that is not a Variable or has
    another shape than its variable.
    """
    for x in leaves:
        if x.grad is not None:
            grads[x] = _plus_held(x, grads[x], carrier)


def _plus_held(x: Variable, gx: Any, carrier: Any) -> Any:
    """``gx`` added onto the gradient ``x`` holds from before the walk, as carried."""
    total = carrier.held(x) + gx
    return total if type(total) in _by_type else carrier.carry(total, x.data)


def _store(
    grads: dict,
    leaves: list,
    retained: list,
    cleared: list,
    carrier: Any,
    seed: Any = None,
) -> None:
    """Give the walk's gradients to the variables, each one an object of its own.

    Of its own memory too: two views of one array (the gradients of ``a.reshape(...)`` and
    ``b.reshape(...)`` added, or of ``x`` and ``x.T``) would change each other when one is
    changed in place, so a gradient whose array shares its memory owner (numpy's and
    CuPy's ``base``) with one already given is copied, as one given twice is; and a
    read-only one (``sum``'s derivative broadcasts: a view of stride 0) too, so that
    ``x.grad.data += ...`` works on every gradient, as on PyTorch's.

    ``seed``: the gradient the user preset on ``y`` (as the walk carries it), or None. The
    user holds it, so it stays ``y``'s alone (retained) and any other variable gets a copy.
    """
    for v in cleared:
        v.grad = None
    held: set[int] = set()  # the gradient objects given, and their arrays' memory owners
    if seed is not None:
        held.add(id(seed))
        held.add(memory_of(seed))
    for v, g in (*retained, *[(x, grads[x]) for x in leaves]):
        if g is None:
            continue
        old = v.grad
        if old is not None and carrier.unwrap(old) is g:  # y's own seed stays what it was
            held.add(id(g))
            held.add(memory_of(g))
            continue
        # memory_of and read_only, inline (a wide graph stores thousands): only a view
        # (a base) can share memory with another array or be a read-only broadcast
        a = g.data if isinstance(g, Variable) else g
        base = getattr(a, "base", None)
        memory = id(a if base is None else base)
        if id(g) in held or memory in held or (base is not None and read_only(a)):
            g = carrier.copy(g)
            memory = memory_of(g)
        held.add(id(g))
        held.add(memory)
        v.grad = carrier.wrap(g)


def read_only(g: Any) -> bool:
    """Whether the array of gradient ``g`` (an array or a Variable) says it cannot be written.

    numpy's flags; arrays without them (CuPy's, immutable ones) count as writable.
    """
    a = g.data if isinstance(g, Variable) else g
    return getattr(getattr(a, "flags", None), "writeable", True) is False


def memory_of(g: Any) -> int:
    """The id of the array owning the memory of gradient ``g`` (an array or a Variable).

    Two gradients with one owner share memory (views, numpy's and CuPy's ``base``): the
    walks that store gradients (this one, a static-graph trace's) copy the second.
    """
    a = g.data if isinstance(g, Variable) else g
    base = getattr(a, "base", None)
    return id(a if base is None else base)
