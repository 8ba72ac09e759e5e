"""The backward engine: an iterative walk of the graph in generation order."""

from __future__ import annotations

import heapq
from typing import Any

from .backends import backend_of, get_array_module
from .config import _enable_backprop
from .function import Function
from .variable import Variable, as_array


class _Copy(Function):
    """The identity into a new array: gives a gradient its own object and its own memory."""

    def forward(self, x: Any) -> Any:
        return backend_of(x).astype(x, x.dtype)  # astype copies

    def backward(self, gy: Variable) -> Variable:
        return gy


def backward(y: Variable, retain_grad: bool = False, create_graph: bool = False) -> None:
    """Accumulate d(y)/d(x) into ``x.grad`` for every variable ``x`` upstream of ``y``.

    Functions are visited once each, newest generation first, from a heap keyed by
    ``(-generation, insertion count)``: the count breaks ties so functions are never
    compared, and the heap makes the walk O(n log n) however wide the graph is.

    Two rules hold whatever the functions' ``backward`` return: a gradient object (and
    its array) is stored in one variable only, and when anything raises, no partial
    gradient survives: the leaves (and ``y``) get back the gradients they had, and the
    intermediate variables the walk touched are left with none, as a walk that succeeds
    without ``retain_grad`` leaves them.

    Args:
        y: The variable to differentiate; its own gradient starts as ones.
        retain_grad: Keep the gradients of intermediate variables too.
        create_graph: Record the backward computation (for higher-order gradients).

    Raises:
        Exception: Whatever a function's ``backward`` raises, after the gradients are
            restored as described above.
    """
    # For undoing the walk on failure, kept cheap (list appends on the hot path):
    # `touched` gets every variable given its first gradient in this walk (that always
    # finds None there) and every intermediate changed; `before` the old gradient of each
    # leaf (and y) that had one.
    touched: list[Variable] = []
    note = touched.append
    before: dict[Variable, Any] = {}
    if y.grad is None:
        note(y)
        y.grad = Variable(get_array_module(y.data).ones_like(y.data))
    else:
        before[y] = y.grad
    f = y.creator
    if f is None:
        return
    heap: list[tuple[int, int, Any]] = [(-f.generation, 0, f)]
    seen = {f}
    kept: set[Variable] = set()  # gradients stored in leaves by this walk
    count = 1
    push, pop = heapq.heappush, heapq.heappop
    token = _enable_backprop.set(create_graph)
    try:
        while heap:
            f = pop(heap)[2]
            refs = f.outputs
            if len(refs) == 1:
                o = refs[0]()
                gy = o.grad
                gxs = f.backward(gy)
                if retain_grad:
                    held = (gy,)
                else:
                    o.grad = None
            else:
                outputs = [ref() for ref in refs]
                gys = [None if o is None else o.grad for o in outputs]
                gxs = f.backward(*gys)
                if retain_grad:
                    held = tuple(gys)
                else:
                    for o in outputs:
                        if o is not None:
                            o.grad = None
            if type(gxs) is not tuple:
                gxs = (gxs,)
            inputs = f.inputs
            if len(gxs) != len(inputs):
                raise RuntimeError(
                    f"{type(f).__name__}.backward returned {len(gxs)} gradients for "
                    f"{len(inputs)} inputs; return one per input (None where there is none)."
                )
            if retain_grad:
                gxs = _own(gxs, held)
            for x, gx in zip(inputs, gxs):
                if gx is None:
                    continue
                if type(gx) is not Variable and not isinstance(gx, Variable):
                    gx = Variable(as_array(gx, like=x.data))
                xd = x.data  # None when the user dropped it (DeZero's memory trick)
                if xd is not None and gx.data.shape != xd.shape:
                    raise RuntimeError(
                        f"{type(f).__name__}.backward returned a gradient of shape "
                        f"{gx.data.shape} for an input of shape {xd.shape}; a gradient "
                        f"must have its input's shape (use sum_to to undo broadcasting)."
                    )
                xg = x.grad
                creator = x.creator
                if xg is not None:
                    if creator is not None:
                        note(x)
                    elif x not in before:  # a leaf's first gradient in this walk is in kept
                        before[x] = None if xg in kept else xg
                    x.grad = xg + gx
                    if creator is not None and creator not in seen:
                        seen.add(creator)
                        push(heap, (-creator.generation, count, creator))
                        count += 1
                    continue
                note(x)
                if creator is None:
                    # a leaf keeps its gradient after the walk, so it gets one nobody else
                    # has (intermediates drop theirs; _own checks them when retained)
                    if gx in kept:
                        gx = _Copy()(gx)
                    kept.add(gx)
                    x.grad = gx
                    continue
                x.grad = gx
                if creator not in seen:
                    seen.add(creator)
                    push(heap, (-creator.generation, count, creator))
                    count += 1
    except BaseException:
        for v in touched:
            v.grad = None
        for v, g in before.items():
            v.grad = g
        raise
    finally:
        _enable_backprop.reset(token)


def _own(gxs: tuple, held: tuple) -> tuple:
    """Return ``gxs`` with a copy in place of each gradient that is shared.

    A gradient is shared when it repeats in ``gxs`` or is one of the output gradients
    ``held`` (retained); copying it means no two variables end up sharing one.
    """
    out = []
    for gx in gxs:
        if gx is not None and (any(gx is g for g in out) or any(gx is g for g in held)):
            gx = _Copy()(gx)
        out.append(gx)
    return tuple(out)
