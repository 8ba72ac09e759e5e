"""Reductions: sum, mean (average), max, min."""

from __future__ import annotations

import warnings
from typing import Any

from ..backends import backend_of, get_array_module
from ..function import Function
from ..utils import normalize_axis
from ..variable import Variable
from ._inputs import as_input
from .broadcast import broadcast_to
from .shape import reshape


def keepdims_shape(x_shape: tuple[int, ...], axes: tuple[int, ...] | None) -> tuple[int, ...]:
    """The shape a reduction over ``axes`` has with ``keepdims=True``."""
    if axes is None:
        return (1,) * len(x_shape)
    return tuple(1 if i in axes else n for i, n in enumerate(x_shape))


class Sum(Function):
    def __init__(self, axis: Any, keepdims: bool) -> None:
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x: Any) -> Any:
        self.x_shape = x.shape
        self.axes = normalize_axis(self.axis, x.ndim, "sum")
        xp = get_array_module(x)
        try:
            return xp.sum(x, axis=self.axes, keepdims=self.keepdims)
        except TypeError:  # an array-API backend refusing bool: count in the default int
            b = backend_of(x)
            if b.dtype_kind(x.dtype) != "b":
                raise
            x = b.astype(x, b.asarray(0).dtype)
            return xp.sum(x, axis=self.axes, keepdims=self.keepdims)

    def backward(self, gy: Variable) -> Variable:
        if not self.keepdims:
            gy = reshape(gy, keepdims_shape(self.x_shape, self.axes))
        return broadcast_to(gy, self.x_shape)


class _Extremum(Function):
    name = ""

    def __init__(self, axis: Any, keepdims: bool) -> None:
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x: Any) -> Any:
        self.axes = normalize_axis(self.axis, x.ndim, self.name)
        if x.size == 0 and (self.axes is None or any(x.shape[a] == 0 for a in self.axes)):
            raise ValueError(
                f"{self.name}: the input of shape {x.shape} has no elements along the reduced "
                f"axes {self.axis!r}; there is no {self.name} of nothing."
            )
        return getattr(get_array_module(x), self.name)(x, axis=self.axes, keepdims=self.keepdims)

    def backward(self, gy: Variable) -> Variable:
        x = self.inputs[0]
        y = self.outputs[0]().data
        shape = keepdims_shape(x.shape, self.axes)
        if not self.keepdims:
            gy = reshape(gy, shape)
            y = get_array_module(y).reshape(y, shape)
        mask = backend_of(y).astype(
            x.data == y, gy.dtype
        )  # ties all receive the gradient, as in DeZero
        return broadcast_to(gy, x.shape) * mask


class Max(_Extremum):
    name = "max"


class Min(_Extremum):
    name = "min"


def _keepdims(keepdims: Any, op: str) -> bool:
    if keepdims is True or keepdims is False:
        return keepdims
    if type(keepdims).__name__ == "bool_" or isinstance(keepdims, int):  # numpy.bool_, 0/1
        return bool(keepdims)
    raise TypeError(f"{op}: keepdims must be True or False, got {keepdims!r}")


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Variable:
    """Sum over ``axis`` (an int, a tuple, negative allowed; all axes when None)."""
    if keepdims is not False and keepdims is not True:
        keepdims = _keepdims(keepdims, "sum")
    return Sum(axis, keepdims)(x)


def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Variable:
    """Arithmetic mean over ``axis`` (DeZero's ``average``); integer data gives floats.

    As numpy's, the mean over no elements is nan, with a RuntimeWarning.

    Examples:
        >>> import numpy as np
        >>> mean(np.array([1, 2])).data
        array(1.5)
    """
    x = as_input(x, "mean")
    try:
        y = sum(x, axis, keepdims)
    except (TypeError, ValueError) as exc:  # the axis checks name sum; the user called mean
        raise type(exc)(str(exc).replace("sum:", "mean:", 1)) from None
    n, m = x.data.size, y.data.size
    if n:
        return y * (m / n)
    if m:
        warnings.warn(
            f"mean: mean of empty slice (input of shape {x.shape}); the result is nan",
            RuntimeWarning,
            stacklevel=2,
        )
        return y * float("nan")
    return y * 1.0  # an empty result, in floating point as numpy's


average = mean


def max(x: Any, axis: Any = None, keepdims: bool = False) -> Variable:
    """Maximum over ``axis`` (an int, a tuple, negative allowed; all axes when None).

    Ties: every element equal to the maximum receives the full output gradient (DeZero's
    rule; the subgradient is not split). Max pooling differs: a window's gradient goes to
    its first maximum only.

    Examples:
        >>> import numpy as np
        >>> from zerograd import Variable
        >>> x = Variable(np.array([1.0, 3.0, 3.0]))
        >>> max(x).backward()
        >>> x.grad
        variable([0. 1. 1.])
    """
    if keepdims is not False and keepdims is not True:
        keepdims = _keepdims(keepdims, "max")
    return Max(axis, keepdims)(x)


def min(x: Any, axis: Any = None, keepdims: bool = False) -> Variable:
    """Minimum over ``axis``; as in :func:`max`, every tied minimum gets the full gradient."""
    if keepdims is not False and keepdims is not True:
        keepdims = _keepdims(keepdims, "min")
    return Min(axis, keepdims)(x)


__all__ = ["Sum", "Max", "Min", "sum", "mean", "average", "max", "min"]
