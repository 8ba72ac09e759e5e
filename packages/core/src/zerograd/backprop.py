"""The backward engine: an iterative walk of the graph in dependency order."""

from __future__ import annotations

import gc
import operator
from typing import Any

from .backends import backend_of, get_array_module
from .backends.registry import registry as _registry
from .config import _enable_backprop
from .function import Function
from .namespaces import array_ops, array_ops_by_type, variable_ops
from .recording import current as _recorder
from .recording import switch as _recording
from .variable import Variable, as_array
from .variable import graphless as _wrapped

_by_type = _registry.by_type
_running: set[object] = set()  # the marks of the walks in progress (nested or in threads)
_data = operator.attrgetter("data")


class _Copy(Function):
    """The identity into a new array: gives a gradient its own object and its own memory."""

    def forward(self, x: Any) -> Any:
        return backend_of(x).astype(x, x.dtype)  # astype copies

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        return gy


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
    runs on zerograd's differentiable functions. A gradient object (and its array) ends
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
        return _walk(y, retain_grad, create_graph)
    gc.disable()
    try:
        return _walk(y, retain_grad, create_graph)
    finally:
        gc.enable()


def _walk(y: Variable, retain_grad: bool, create_graph: bool) -> None:
    """The walk :func:`backward` describes.

    Under a static-graph trace (``rec``) it reports the array work it does on the
    first-order path, and the gradients it starts from and stores on either path.
    """
    rec = _recording.on and _recorder()
    seed = y.grad
    if seed is None:
        ones = get_array_module(y.data).ones_like
        y.grad = Variable(ones(y.data))
        if rec:
            rec.op(ones, (y.data,), y.grad.data)
    f = y.creator
    if f is None:
        return
    raw = not create_graph
    if rec:
        rec.walk(y, retain_grad, create_graph)
    g = y.grad
    if not isinstance(g, Variable):  # the book's step 9 seeds y.grad with an array
        g = Variable(as_array(g, like=y.data))
    grads: dict[Variable, Any] = {y: g.data if raw else g}
    leaves: list[Variable] = []  # in the order they got their first gradient
    retained: list[tuple[Variable, Any]] = []  # (intermediate, its gradient) to keep
    cleared: list[Variable] = []  # intermediates whose (stale) gradient goes at the end
    walk = object()  # this walk's mark on the functions it counts
    ready, saved = _count_consumers(f, walk)
    _running.add(walk)
    token = _enable_backprop.set(create_graph)
    try:
        while ready:
            f = ready.pop()
            refs = f.outputs
            inputs = f.inputs
            if len(refs) == 1:  # fast path: one output (nearly every function), no tuples
                o = refs[0]()
                gy = grads.pop(o, None)
                if retain_grad:
                    retained.append((o, gy))
                elif o.grad is not None and gy is not None:
                    cleared.append(o)
                if gy is None:  # nothing reached f: its inputs' creators only hear it is done
                    gxs = (None,) * len(inputs)
                elif not f._vjp:
                    gxs = _legacy(f, raw, (gy,), rec)
                elif raw:  # first order: arrays and the backend's functions
                    if len(inputs) == 2:  # built directly: a third of tuple(map(...))'s cost
                        xs = (inputs[0].data, inputs[1].data)
                    else:
                        xs = tuple(map(_data, inputs))
                    ops = array_ops_by_type[type(gy)]
                    gxs = f.vjp(ops, xs, o.data, gy)
                    if rec:
                        rec.vjp(f, ops, xs, o.data, gy, gxs)
                else:
                    gxs = f.vjp(variable_ops(), inputs, o, gy)
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
                    gxs = _legacy(f, raw, gys, rec)
                else:
                    some = next(g for g in gys if g is not None)
                    if raw:
                        xs = tuple(map(_data, inputs))
                        ys = tuple([None if o is None else o.data for o in outputs])
                        ops = array_ops(type(some))
                        gxs = f.vjp(ops, xs, ys, gys)
                        if rec:
                            rec.vjp(f, ops, xs, ys, gys, gxs)
                    else:
                        gxs = f.vjp(variable_ops(), inputs, tuple(outputs), gys)
            if type(gxs) is not tuple:
                gxs = tuple(gxs) if type(gxs) is list else (gxs,)
            if len(gxs) != len(inputs):
                raise RuntimeError(
                    f"{_name(f)} returned {len(gxs)} gradients for "
                    f"{len(inputs)} inputs; return one per input (None where there is none)."
                )
            for x, gx in zip(inputs, gxs):
                creator = x.creator
                if creator is not None:  # one consumer of creator's outputs done
                    if creator._walk is not walk:
                        raise _interleaved()
                    n = creator._deps - 1
                    creator._deps = n
                    if n == 0:
                        ready.append(creator)
                if gx is None:
                    continue
                xd = x.data
                if type(gx) not in _by_type or xd is None or gx.shape != xd.shape:
                    given = gx
                    gx = _checked_grad(f, x, gx, raw)  # a Variable, a scalar, or an error
                    if rec and raw:
                        rec.op(_grad_array, (given, xd), gx)
                g = grads.get(x)
                if g is None:
                    if x.grad is None:
                        grads[x] = gx
                        if creator is None:
                            leaves.append(x)
                        continue
                    g = _held(x, raw)  # accumulate onto the gradient it had (DeZero)
                    if rec:
                        rec.held(x, g)
                    if creator is None:
                        leaves.append(x)
                # one more gradient for x
                total = g + gx
                if raw:
                    if rec:
                        rec.op(operator.add, (g, gx), total)
                    if type(total) not in _by_type:
                        given, total = total, _scalar_grad(total, xd)
                        if rec:
                            rec.op(_scalar_grad, (given, xd), total)
                grads[x] = total
    except BaseException:
        y.grad = seed
        raise
    finally:
        _enable_backprop.reset(token)
        _running.discard(walk)
        for c, mark, deps in saved:  # give a walk this one ran inside its counts back
            c._walk, c._deps = mark, deps
    _store(grads, leaves, retained, cleared, raw, rec)


def _count_consumers(f: Function, walk: object) -> tuple[list[Function], list[tuple]]:
    """Count, for every function upstream of ``f``, the uses of its outputs upstream of ``f``.

    The count goes in the function's ``_deps`` and ``_walk`` is set to ``walk`` on the
    functions counted (one pass, no recursion). Returns ``[f]``, the walk's first ready
    function, and ``(function, mark, count)`` for each function a walk still running (this
    one runs inside its ``backward``) had counted, so that its counts can be put back.
    """
    nested = bool(_running)
    saved = [(f, f._walk, f._deps)] if nested and f._walk in _running else []
    f._walk = walk
    f._deps = 0
    todo = [f]
    pop, push = todo.pop, todo.append
    while todo:
        for x in pop().inputs:
            c = x.creator
            if c is None:
                continue
            if c._walk is walk:
                c._deps += 1
            else:
                if nested and c._walk in _running:
                    saved.append((c, c._walk, c._deps))
                c._walk = walk
                c._deps = 1
                push(c)
    return [f], saved


def _interleaved() -> RuntimeError:
    """The error for a walk whose counts another walk has overwritten."""
    return RuntimeError(
        "backward: another backward walked part of this graph while this one was running "
        "(two threads on one graph), so this walk's counts are lost; no gradient has "
        "changed. Run the two backward passes one after the other."
    )


def _checked_grad(f: Function, x: Variable, gx: Any, raw: bool) -> Any:
    """``gx`` as the walk carries it (an array, or a Variable), checked against ``x``."""
    if raw:
        gx = _grad_array(gx, x.data)
    elif type(gx) is not Variable and not isinstance(gx, Variable):
        gx = Variable(as_array(gx, like=x.data))
    xd = x.data  # None when the user dropped it (DeZero's memory trick)
    if xd is not None and gx.shape != xd.shape:
        raise RuntimeError(
            f"{_name(f)} returned a gradient of shape {tuple(gx.shape)} for an "
            f"input of shape {tuple(xd.shape)}; a gradient must have its input's shape (use sum_to "
            f"to undo broadcasting)."
        )
    return gx


def _grad_array(gx: Any, xd: Any) -> Any:
    """A first-order gradient as an array: a Variable's data, a library scalar as 0-d."""
    if type(gx) in _by_type:
        return gx
    return gx.data if isinstance(gx, Variable) else _scalar_grad(gx, xd)


def _name(f: Function) -> str:
    """``Cls.vjp`` or ``Cls.backward``: the method that computed ``f``'s gradients."""
    return f"{type(f).__name__}.{'vjp' if f._vjp else 'backward'}"


def _scalar_grad(g: Any, xd: Any) -> Any:
    """A library scalar (what numpy returns for 0-d results) as a 0-d array.

    It keeps the input's float precision: numpy 1.x computes 0-d float32 with Python
    floats in float64, which the Variable engine (whose constants follow the data's dtype)
    does not.
    """
    backend = _by_type.get(type(xd))
    if backend is None:  # x.data is a library scalar itself (the book's Newton loop)
        return as_array(g)
    g = backend.asarray(g)
    if g.dtype != xd.dtype and backend.dtype_kind(g.dtype) == backend.dtype_kind(xd.dtype) == "f":
        g = backend.astype(g, xd.dtype)
    return g


def _held(x: Variable, raw: bool) -> Any:
    """The gradient ``x`` holds from before this walk, as the walk carries gradients."""
    g = x.grad
    if not isinstance(g, Variable):
        raise TypeError(
            f"backward: a variable of shape {getattr(x.data, 'shape', None)} holds a grad "
            f"of type {type(g).__module__}.{type(g).__qualname__}, not a Variable; a "
            f"gradient must be a Variable or None (assign Variable(array), or cleargrad())."
        )
    return g.data if raw else g


def _legacy(f: Function, raw: bool, gys: tuple, rec: Any) -> Any:
    """Call a DeZero-style ``backward(*gys)`` (Variables in, Variables out).

    A trace (``rec``) runs the first-order call as one step of its own.
    """
    if not raw:
        return f.backward(*gys)
    if rec:
        return rec.legacy(f, _legacy_arrays, gys)
    return _legacy_arrays(f, gys)


def _legacy_arrays(f: Function, gys: tuple) -> Any:
    """A DeZero-style ``backward`` on first-order gradients: arrays in, arrays out."""
    gxs = f.backward(*[None if g is None else _wrapped(g) for g in gys])
    if type(gxs) is not tuple:
        return gxs.data if isinstance(gxs, Variable) else gxs
    return tuple([g.data if isinstance(g, Variable) else g for g in gxs])


def _store(grads: dict, leaves: list, retained: list, cleared: list, raw: bool, rec: Any) -> None:
    """Give the walk's gradients to the variables, each one an object of its own."""
    for v in cleared:
        v.grad = None
    held: set[int] = set()
    for v, g in (*retained, *[(x, grads[x]) for x in leaves]):
        if g is None:
            continue
        old = v.grad
        if id(g) in held:
            given, g = g, _copy(g, raw)
            if rec and raw:
                rec.op(_copy, (given, True), g)
        held.add(id(g))
        if not raw:
            v.grad = g
        elif old is None or old.data is not g:  # y's own seed stays the Variable it was
            v.grad = _wrapped(g)
        if rec:
            rec.stored(v, g, _wrapped)


def _copy(g: Any, raw: bool) -> Any:
    if raw:
        return backend_of(g).astype(g, g.dtype)  # astype copies
    return _Copy()(g)
