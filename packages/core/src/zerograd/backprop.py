"""The backward engine: an iterative walk of the graph in generation order."""

from __future__ import annotations

import heapq
from typing import Any

from .backends import get_array_module
from .config import _enable_backprop
from .variable import Variable, as_array


def backward(y: Variable, retain_grad: bool = False, create_graph: bool = False) -> None:
    """Accumulate d(y)/d(x) into ``x.grad`` for every variable ``x`` upstream of ``y``.

    Functions are visited once each, newest generation first, from a heap keyed by
    ``(-generation, insertion count)``: the count breaks ties so functions are never
    compared, and the heap makes the walk O(n log n) however wide the graph is.
    """
    if y.grad is None:
        y.grad = Variable(get_array_module(y.data).ones_like(y.data))
    f = y.creator
    if f is None:
        return
    heap: list[tuple[int, int, Any]] = [(-f.generation, 0, f)]
    seen = {f}
    count = 1
    push, pop = heapq.heappush, heapq.heappop
    token = _enable_backprop.set(create_graph)
    try:
        while heap:
            f = pop(heap)[2]
            refs = f.outputs
            if len(refs) == 1:
                o = refs[0]()
                gxs = f.backward(o.grad)
                if not retain_grad:
                    o.grad = None
            else:
                outputs = [ref() for ref in refs]
                gxs = f.backward(*[None if o is None else o.grad for o in outputs])
                if not retain_grad:
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
                x.grad = gx if x.grad is None else x.grad + gx
                creator = x.creator
                if creator is not None and creator not in seen:
                    seen.add(creator)
                    push(heap, (-creator.generation, count, creator))
                    count += 1
    finally:
        _enable_backprop.reset(token)
