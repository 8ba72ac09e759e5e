"""Joining arrays: concatenate (cat) and stack."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..backends import get_array_module
from ..function import Function
from ..variable import Variable
from .shape import get_item


def _check_axis(op: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"{op}: axis {axis} is out of range for {ndim}-dimensional results")
    return axis % ndim


class Concatenate(Function):
    def __init__(self, axis: int) -> None:
        self.axis = axis

    def forward(self, *xs: Any) -> Any:
        self.axis = _check_axis("concatenate", self.axis, xs[0].ndim)
        shapes = [x.shape for x in xs]
        for s in shapes:
            if len(s) != len(shapes[0]) or any(
                a != b for i, (a, b) in enumerate(zip(s, shapes[0])) if i != self.axis
            ):
                raise ValueError(
                    f"concatenate: shapes {shapes} differ outside axis {self.axis}; all "
                    f"inputs must match on every other axis."
                )
        self.sizes = [s[self.axis] for s in shapes]
        return get_array_module(xs[0]).concat(xs, axis=self.axis)

    def backward(self, gy: Variable) -> tuple[Variable, ...]:
        lead = (slice(None),) * self.axis
        grads, start = [], 0
        for n in self.sizes:
            grads.append(get_item(gy, lead + (slice(start, start + n),)))
            start += n
        return tuple(grads)


class Stack(Function):
    def __init__(self, axis: int) -> None:
        self.axis = axis

    def forward(self, *xs: Any) -> Any:
        self.axis = _check_axis("stack", self.axis, xs[0].ndim + 1)
        shapes = {x.shape for x in xs}
        if len(shapes) > 1:
            raise ValueError(f"stack: all inputs must have one shape, got {sorted(shapes)}")
        return get_array_module(xs[0]).stack(xs, axis=self.axis)

    def backward(self, gy: Variable) -> tuple[Variable, ...]:
        lead = (slice(None),) * self.axis
        return tuple(get_item(gy, lead + (i,)) for i in range(len(self.inputs)))


def _sequence(xs: Any, op: str) -> Sequence[Any]:
    if not isinstance(xs, (list, tuple)):
        raise TypeError(
            f"{op}: xs must be a list or tuple of Variables or arrays, got "
            f"{type(xs).__name__}; wrap a single one as [x]."
        )
    if not xs:
        raise ValueError(f"{op}: needs at least one input")
    return xs


def concatenate(xs: Sequence[Any], axis: int = 0) -> Variable:
    """Join Variables along an existing ``axis`` (``cat`` is an alias)."""
    return Concatenate(axis)(*_sequence(xs, "concatenate"))


cat = concatenate


def stack(xs: Sequence[Any], axis: int = 0) -> Variable:
    """Join same-shaped Variables along a new ``axis``."""
    return Stack(axis)(*_sequence(xs, "stack"))
