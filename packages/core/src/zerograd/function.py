"""``Function``: the base class of every differentiable operation."""

from __future__ import annotations

import weakref
from typing import Any

from . import backends as _backends
from .backends.errors import BackendMismatchError
from .backends.registry import registry as _registry
from .config import _enable_backprop
from .variable import Variable, as_array

_by_type = _registry.by_type


class Function:
    """A differentiable operation: ``forward`` on arrays, ``backward`` on Variables.

    Calling a Function runs ``forward`` on the inputs' data and, when backprop is
    enabled, records itself as the creator of its outputs. Outputs are held weakly, so
    dropping the last output frees the graph behind it. ``backward`` receives output
    gradients as Variables and returns input gradients as Variables, which is what makes
    every gradient differentiable again.

    >>> import numpy as np
    >>> class Square(Function):
    ...     def forward(self, x):
    ...         return x ** 2
    ...     def backward(self, gy):
    ...         x, = self.inputs
    ...         return 2 * x * gy
    >>> Square()(Variable(np.array(3.0)))
    variable(9.0)
    """

    generation = 0
    inputs: tuple[Variable, ...] = ()
    outputs: tuple[weakref.ref, ...] = ()

    def __call__(self, *inputs: Any) -> Any:
        inputs = tuple(x if isinstance(x, Variable) else _wrap(x, inputs) for x in inputs)
        xs = [x.data for x in inputs]
        if len(xs) > 1:
            t = type(xs[0])
            for x in xs:
                if type(x) is not t:
                    _check_one_backend(self, xs)
                    break
        ys = self.forward(*xs)
        if not isinstance(ys, tuple):
            ys = (ys,)
        outputs = [Variable(y if type(y) in _by_type else _fix_output(y, xs)) for y in ys]
        if _enable_backprop.get():
            gen = max([x.generation for x in inputs]) if len(inputs) > 1 else inputs[0].generation
            self.generation = gen
            for output in outputs:
                output.creator = self
                output.generation = gen + 1
            self.inputs = inputs
            self.outputs = tuple([weakref.ref(output) for output in outputs])
        return outputs if len(outputs) > 1 else outputs[0]

    def forward(self, *xs: Any) -> Any:
        """Compute the outputs from input arrays; return one array or a tuple."""
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    def backward(self, *gys: Any) -> Any:
        """Compute input gradients (Variables) from output gradients (Variables)."""
        raise NotImplementedError(f"{type(self).__name__}.backward is not implemented")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} generation={self.generation}>"


def _wrap(x: Any, inputs: tuple) -> Variable:
    like = next((v.data for v in inputs if isinstance(v, Variable) and v.data is not None), None)
    return Variable(as_array(x, like=like))


def _fix_output(y: Any, xs: list) -> Any:
    """Turn a forward result that is not a backend array (a numpy scalar) into one."""
    if xs:
        backend = _by_type.get(type(xs[0])) or _backends.backend_of(xs[0])
        return backend.asarray(y)
    return as_array(y)


def _check_one_backend(func: Function, xs: list) -> None:
    names = []
    for x in xs:
        backend = _backends.backend_of(x)
        if backend.name not in names:
            names.append(backend.name)
    if len(names) > 1:
        types = ", ".join(f"{type(x).__module__}.{type(x).__qualname__}" for x in xs)
        raise BackendMismatchError(
            f"{type(func).__name__}: inputs live on different backends ({', '.join(names)}; "
            f"types {types}). Move them to one first, e.g. x.to_cpu() or x.to_gpu()."
        )
