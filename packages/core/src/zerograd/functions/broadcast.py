"""Broadcasting and its adjoint: ``broadcast_to`` and ``sum_to``."""

from __future__ import annotations

import operator
from typing import Any

from ..backends import backend_of
from ..function import Function
from ..typing import ArrayLike
from ..variable import Variable
from ._inputs import as_input, empty_input
from .ops import defines


def _shape_error(op: str, x_shape: tuple, shape: tuple) -> ValueError:
    return ValueError(
        f"{op}: cannot go from shape {x_shape} to {shape}; shapes must be broadcast-compatible "
        f"(numpy rules: align from the right, each axis equal or 1)."
    )


class BroadcastTo(Function):
    """Broadcast the input to a shape; used by :func:`broadcast_to`.

    Args:
        shape: The target shape.

    Raises:
        ValueError: ``x``'s shape does not broadcast to ``shape``.
    """

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(shape)

    def forward(self, x: Any) -> Any:
        try:  # the input's shape is saved: the derivative needs no data (it may be dropped)
            y = backend_of(x).broadcast_to(x, self.shape)
            self.ctx = x.shape
            return y
        except (ValueError, TypeError):
            raise _shape_error("broadcast_to", x.shape, self.shape) from None

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return the input's gradient, ``gy`` summed back to the input's shape."""
        return xp.sum_to(gy, self.ctx)


class SumTo(Function):
    """Sum the input down to a shape (the adjoint of broadcasting); used by :func:`sum_to`.

    Args:
        shape: The target shape.

    Raises:
        ValueError: ``shape`` does not broadcast to ``x``'s shape.
    """

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(shape)

    def forward(self, x: Any) -> Any:
        n = len(self.shape)
        if n > x.ndim or any(s not in (1, xs) for s, xs in zip(self.shape, x.shape[x.ndim - n :])):
            raise _shape_error("sum_to", x.shape, self.shape)
        y = backend_of(x).sum_to(x, self.shape)
        self.ctx = x.shape
        return y

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return the input's gradient, ``gy`` broadcast back to the input's shape."""
        return xp.broadcast_to(gy, self.ctx)


def as_shape(shape: Any, op: str) -> tuple[int, ...]:
    """Return ``shape`` (an int or a sequence of ints) as a tuple of ints.

    Args:
        shape: An int or a sequence of ints.
        op: The calling function's name, for the error message.

    Returns:
        The shape as a tuple of ints.

    Raises:
        TypeError: ``shape`` is not made of ints.
    """
    try:
        if isinstance(shape, (tuple, list)):
            return tuple(operator.index(n) for n in shape)
        return (operator.index(shape),)
    except TypeError:
        raise TypeError(
            f"{op}: the shape must be an int or a tuple of ints, got {shape!r}"
        ) from None


def _to_shape(cls: type[Function], name: str, x: ArrayLike, shape: Any) -> Variable:
    """``cls(shape)(x)``, or ``x`` itself when it has ``shape`` (``name``: the function's)."""
    if not isinstance(x, Variable):
        x = as_input(x, name)
    elif x.data is None:
        raise empty_input(x, name)
    if type(shape) is not tuple:
        shape = as_shape(shape, name)
    if x.shape == shape:
        return x
    return cls(shape)(x)


@defines(BroadcastTo, in_vjp=True)
def broadcast_to(x: ArrayLike, shape: tuple[int, ...]) -> Variable:
    """Broadcast ``x`` to ``shape``; the gradient is summed back (``sum_to``).

    Args:
        x: A Variable, array, scalar or list.
        shape: The target shape (an int or a tuple of ints).

    Returns:
        A Variable of ``shape`` (``x`` itself when the shape is unchanged).

    Raises:
        TypeError: ``shape`` is not made of ints.
        ValueError: ``x``'s shape does not broadcast to ``shape``.

    Examples:
        >>> import numpy as np
        >>> broadcast_to(np.array([1.0, 2.0]), (2, 2))
        variable([[1. 2.]
                  [1. 2.]])
    """
    return _to_shape(BroadcastTo, "broadcast_to", x, shape)


@defines(SumTo, in_vjp=True)
def sum_to(x: ArrayLike, shape: tuple[int, ...]) -> Variable:
    """Sum ``x`` down to ``shape`` (the adjoint of ``broadcast_to``).

    Args:
        x: A Variable, array, scalar or list.
        shape: The target shape (an int or a tuple of ints), one ``x`` broadcasts from.

    Returns:
        A Variable of ``shape`` (``x`` itself when the shape is unchanged).

    Raises:
        TypeError: ``shape`` is not made of ints.
        ValueError: ``shape`` does not broadcast to ``x``'s shape.

    Examples:
        >>> import numpy as np
        >>> sum_to(np.ones((2, 3)), (1, 3))
        variable([[2. 2. 2.]])
    """
    return _to_shape(SumTo, "sum_to", x, shape)


# literal, so that type checkers see the names (a test checks it against the ops defined here)
__all__ = [
    "broadcast_to",
    "sum_to",
    "BroadcastTo",
    "SumTo",
]
