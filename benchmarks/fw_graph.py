"""Reference engine 2 of 2 for the per-op row: the book's graph, and nothing more.

DeZero's data model as zerograd keeps it for the book's readers: a Function object per op
that holds its inputs and, through a weak reference, its output; ``y.creator``; generations;
raw operands wrapped as (constant) Variables; backward visiting functions newest generation
first and dropping intermediate gradients. Everything else zerograd does is left out: first
order only, derivatives on arrays, no checks, no dtype rules, no backends, no config. It is
not a framework (only the per-op row runs it): the gap between it and ``fw_tape.py`` is what
the book's graph costs per op, and the gap between it and zerograd is what zerograd adds.
"""

from __future__ import annotations

import heapq
import weakref

import numpy as np

_new = object.__new__


class Variable:
    """A value in the graph: data, gradient, creator and generation."""

    __slots__ = ("data", "grad", "creator", "generation", "__weakref__")

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        self.grad = None
        self.creator = None
        self.generation = 0

    def __add__(self, other: object) -> Variable:
        return Add()(self, other)

    def __mul__(self, other: object) -> Variable:
        return Mul()(self, other)


class Constant(Variable):
    """A raw operand: it takes part in the graph but gets no gradient."""

    __slots__ = ()


class Function:
    """One recorded op: inputs held strongly, the output weakly (as in the book)."""

    __slots__ = ("inputs", "outputs", "generation")

    def __call__(self, *inputs: object) -> Variable:
        # as lean as the model allows: no __init__ calls, no builtins
        a = inputs[0]
        y = _new(Variable)
        if len(inputs) == 1:
            y.data = self.forward(a.data)
            gen = a.generation
        else:
            b = inputs[1]
            if not isinstance(b, Variable):
                c = _new(Constant)
                c.data, c.grad, c.creator, c.generation = b, None, None, 0
                inputs = (a, c)
                b = c
            y.data = self.forward(a.data, b.data)
            gen = a.generation if a.generation >= b.generation else b.generation
        y.grad = None
        self.generation = gen
        self.inputs = inputs
        self.outputs = (weakref.ref(y),)
        y.creator = self
        y.generation = gen + 1
        return y


class Add(Function):
    """``a + b``; its ``backward`` takes and returns arrays."""

    __slots__ = ()

    def forward(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a + b

    def backward(self, gy: np.ndarray) -> tuple:
        return gy, None


class Mul(Function):
    """``a * b``; its ``backward`` takes and returns arrays."""

    __slots__ = ()

    def forward(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a * b

    def backward(self, gy: np.ndarray) -> tuple:
        a, b = self.inputs
        return gy * b.data, (None if type(a) is Constant else gy * a.data)


class Tanh(Function):
    """``tanh(x)``; its ``backward`` takes and returns arrays."""

    __slots__ = ()

    def forward(self, x: np.ndarray) -> np.ndarray:
        return np.tanh(x)

    def backward(self, gy: np.ndarray) -> tuple:
        y = self.outputs[0]().data
        return (gy * (1 - y * y),)


class Sin(Function):
    """``sin(x)``; its ``backward`` takes and returns arrays."""

    __slots__ = ()

    def forward(self, x: np.ndarray) -> np.ndarray:
        return np.sin(x)

    def backward(self, gy: np.ndarray) -> tuple:
        return (gy * np.cos(self.inputs[0].data),)


def tanh(x: Variable) -> Variable:
    """The book's functional form (``F.tanh``): one call more than ``Tanh()(x)``."""
    return Tanh()(x)


def sin(x: Variable) -> Variable:
    """The book's functional form (``F.sin``)."""
    return Sin()(x)


def backward(y: Variable) -> None:
    """First-order backward from ``y``, newest generation first, intermediates dropped."""
    y.grad = np.ones_like(y.data)
    f = y.creator
    heap, seen, count = [(-f.generation, 0, f)], {f}, 1
    while heap:
        f = heapq.heappop(heap)[2]
        out = f.outputs[0]()
        gxs = f.backward(out.grad)
        out.grad = None
        for x, gx in zip(f.inputs, gxs):
            if gx is None:
                continue
            x.grad = gx if x.grad is None else x.grad + gx
            c = x.creator
            if c is not None and c not in seen:
                seen.add(c)
                heapq.heappush(heap, (-c.generation, count, c))
                count += 1


leaf = Variable  # the graph workloads' pieces: leaf, tanh, sin, backward, grad


def grad(x: Variable) -> np.ndarray:
    """The gradient of leaf ``x``."""
    return x.grad


def setup(threads: int) -> None:
    """Nothing to do: numpy threads through BLAS (set by environment)."""
