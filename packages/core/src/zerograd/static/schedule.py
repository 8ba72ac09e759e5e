"""The first-order backward of a call a trace records, planned from the graph it built.

The eager walk (:mod:`zerograd.backprop`) reports nothing to a trace. Its schedule is a
function of the graph alone: the consumer counts (:func:`~zerograd.backprop.consumer_counts`)
and a stack of ready functions fix which vjp runs when, and which gradients meet in which
sum. :func:`walk` follows the same schedule over the same graph, on the same arrays, and is
the call's backward while a trace records it (a vjp runs once per backward: the
transforms' taps collect gradients in theirs): each vjp, each sum, each conversion of a
derivative's result, each read of a gradient held from before and each copy is one of the
trace's steps, in the walk's order, so that a replay does the walk's arithmetic in the
walk's order, bit for bit. It gives the variables their gradients as the walk does.
"""

from __future__ import annotations

import operator
from functools import partial
from typing import Any

from ..backends.chains import op_of
from ..backends.registry import registry
from ..backprop import consumer_counts, dezero_backward, memory_of, read_only, storing
from ..function import Function
from ..namespaces import VARIABLE_OPS, array_ops_by_type
from ..variable import Variable, as_array

_by_type = registry.by_type


def walk(trace: Any, y: Variable, preset: bool = False) -> None:
    """The first-order backward from ``y`` (see :func:`zerograd.backprop.backward`), recorded.

    ``y.grad`` holds the gradient it starts from (of ``y``'s shape). It changes no gradient
    when it fails, and then the eager walk, run in its place, says why.

    Args:
        trace: the :class:`~.trace.Trace` recording the call (its ``vjp``, ``legacy``,
            ``op``, ``held`` and ``stored`` take the steps).
        y: the Variable backward starts from; it has a creator.
        preset: ``y.grad`` is the user's (set before ``backward()``), not the trace's ones:
            no other Variable is given it (a leaf gets a copy), as in the eager walk.

    Raises:
        Exception: what a vjp raises; a RuntimeError for a vjp that returns a gradient of
            another shape than its input's, or another number of them than inputs.
    """
    g = y.grad
    if not isinstance(g, Variable):  # the book's step 9 seeds y.grad with an array
        g = Variable(as_array(g, like=y.data))
    run = _Walk(trace, array_ops_by_type[type(g.data)])
    f = y.creator
    run.grads[y] = g.data
    deps = consumer_counts(f)
    ready = [f]
    while ready:
        f = ready.pop()
        # an input the user dropped reads back as a stand-in with its creator, which keys
        # its gradient as the walk keys it by that creator (an unchained one has none)
        inputs = f.inputs
        gxs = run.vjp(f, inputs)
        for x, gx in zip(inputs, gxs):
            creator = x.creator
            if creator is not None:
                _done(creator, deps, ready)
            if gx is not None:
                run.arrived(x, creator, gx)
    run.finish(g.data if preset else None)


def _on_variables(f: Function, inputs: tuple, y: Any, gy: Any) -> tuple:
    """The arrays of ``f``'s gradients from its vjp applied to Variables (``y``, ``gy``: arrays)."""
    xs = inputs if f.vjp_reads_inputs else (None,) * len(inputs)
    gxs = f.vjp(VARIABLE_OPS, xs, None if y is None else Variable(y), Variable(gy))
    return tuple([g.data if isinstance(g, Variable) else g for g in _as_tuple(gxs)])


def _as_tuple(gxs: Any) -> tuple:
    """A vjp's result (one gradient, a tuple or a list of them) as a tuple."""
    if type(gxs) is tuple:
        return gxs
    return tuple(gxs) if type(gxs) is list else (gxs,)


def _done(f: Function, deps: dict, ready: list) -> None:
    """One consumer of ``f``'s outputs has passed its gradient on: ``f`` may be ready."""
    n = deps[f]
    if n == 1:
        ready.append(f)
    else:
        deps[f] = n - 1


class _Walk:
    """The state of one planned walk: the gradients on their way, the leaves reached."""

    def __init__(self, trace: Any, carrier: Any) -> None:
        self.trace, self.carrier = trace, carrier
        self.grads: dict[Any, Any] = {}
        self.leaves: list[Variable] = []  # in the order they got their first gradient
        self.cleared: list[Variable] = []  # intermediates whose (stale) gradient goes

    def vjp(self, f: Function, inputs: tuple) -> tuple:
        """The gradients of ``f``'s ``inputs``, its vjp (or backward) recorded."""
        n = len(inputs)
        refs = f.outputs
        outputs = [ref() for ref in refs]
        gys = [self.grads.pop(f if o is None else o, None) for o in outputs]
        for o, g in zip(outputs, gys):
            if o is not None and o.grad is not None and g is not None:
                self.cleared.append(o)
        if all(g is None for g in gys):  # nothing reached f
            return (None,) * n
        one = len(refs) == 1
        if not f.uses_vjp:
            gxs = self.trace.legacy(f, self.carrier, tuple(gys), dezero_backward)
        else:
            xs = tuple([x.data for x in inputs]) if f.vjp_reads_inputs else (None,) * n
            ys = f.output_arrays(outputs)
            ops = array_ops_by_type[type(next(g for g in gys if g is not None))]
            y, gy = (ys[0], gys[0]) if one else (tuple(ys), tuple(gys))
            gxs = f.vjp(ops, xs, y, gy)
            # an elementwise function's vjp is elementwise too: recorded as the Functions
            # it applies, a replay's backend may fuse them into chains with their neighbours
            # (as it never fuses 0-d work, which numpy answers with scalars, that stays put)
            expanded = None
            if one and op_of(f) is not None and type(gy) in _by_type and gy.shape != ():
                run = partial(_on_variables, f, inputs, y, gy)
                expanded = self.trace.expanded(f, run, _as_tuple(gxs), (gy, y, *xs))
            if expanded is None:
                self.trace.vjp(f, ops, xs, y, gy, gxs)
            else:
                gxs = expanded
        gxs = _as_tuple(gxs)
        if len(gxs) != n:
            raise RuntimeError(f"{type(f).__name__} returned {len(gxs)} gradients for {n} inputs")
        return gxs

    def carried(self, g: Any, like: Any) -> Any:
        """``g`` as the walk carries it; a conversion is a step."""
        out = self.carrier.carry(g, like)
        if out is not g:
            self.trace.op(self.carrier.carry, (g, like), out)
        return out

    def sum(self, a: Any, b: Any, like: Any) -> Any:
        """``a + b``, recorded, as carried."""
        total = a + b
        self.trace.op(operator.add, (a, b), total)
        return total if type(total) in _by_type else self.carried(total, like)

    def held(self, x: Variable, gx: Any) -> Any:
        """``gx`` added onto the gradient ``x`` holds from before the walk."""
        g = self.carrier.held(x)
        self.trace.held(x, g)
        return self.sum(g, gx, x.data)

    def arrived(self, x: Variable, creator: Any, gx: Any) -> None:
        """The gradient ``gx`` from one consumer of ``x`` arrives."""
        xd = x.data
        if type(gx) not in _by_type or xd is None or gx.shape != xd.shape:
            gx = self.carried(gx, xd)
            if xd is not None and gx.shape != xd.shape:
                raise RuntimeError("a gradient of another shape than its input")  # (see walk)
        g = self.grads.get(x)
        if g is None:
            if creator is None:
                self.leaves.append(x)
            elif x.grad is not None:  # an intermediate's held gradient flows on (DeZero)
                gx = self.held(x, gx)
            self.grads[x] = gx
        else:
            self.grads[x] = self.sum(g, gx, xd)

    def finish(self, seed: Any = None) -> None:
        """Give the leaves their totals, onto what they held.

        A gradient given twice, sharing memory with one given (or with ``seed``, the user's
        preset gradient of ``y``), or read-only is copied.
        """
        carrier, trace, seen = self.carrier, self.trace, set()
        if seed is not None:
            seen.update((id(seed), memory_of(seed)))
        with storing:
            for x in self.leaves:
                if x.grad is not None:
                    self.grads[x] = self.held(x, self.grads[x])
            for v in self.cleared:
                v.grad = None
            for x in self.leaves:
                g = self.grads[x]
                if id(g) in seen or memory_of(g) in seen or read_only(g):  # as the eager walk
                    copied = carrier.copy(g)
                    trace.op(carrier.copy, (g,), copied)
                    g = copied
                seen.add(id(g))
                seen.add(memory_of(g))
                old = x.grad
                if old is None or carrier.unwrap(old) is not g:
                    x.grad = carrier.wrap(g)
                trace.stored(x, g)


def upstream(y: Variable) -> list[Variable]:
    """The Variables upstream of ``y`` that a backward from it may give a gradient.

    Every input of a function upstream of ``y`` that is alive, each once, in the order of
    a depth-first pass (two passes over one graph give one order).

    Args:
        y: a Variable.

    Returns:
        The Variables.
    """
    out: list[Variable] = []
    seen: set[int] = set()
    todo = [] if y.creator is None else [y.creator]
    done = {id(y.creator)}
    while todo:
        for x in todo.pop().inputs:
            if id(x) not in seen:
                seen.add(id(x))
                out.append(x)
                c = x.creator
                if c is not None and id(c) not in done:
                    done.add(id(c))
                    todo.append(c)
    return out
