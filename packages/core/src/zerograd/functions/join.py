"""Joining arrays: concatenate (cat, concat) and stack."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from ..backends import get_array_module
from ..checks import axis_or_dim, int_like
from ..function import Function
from ..variable import Constant, Variable
from .ops import defines


def _check_axis(op: str, axis: int, ndim: int) -> int:
    if type(axis) is not int:
        axis = _int_axis(op, axis)
    if not -ndim <= axis < ndim:
        if not ndim:  # only concatenate's results can be 0-d
            raise ValueError(
                f"{op}: the inputs are 0-d, with no axis to join along; stack them "
                f"(F.stack(xs)) or give them shape (1,)"
            )
        raise ValueError(f"{op}: axis {axis} is out of range for {ndim}-dimensional results")
    return axis % ndim


def _int_axis(op: str, axis: Any) -> int:
    """``axis`` as an int, or the error for a bool, None or a float given as ``op``'s axis."""
    if int_like(axis):
        return operator.index(axis)
    hint = ""
    if axis is None and op == "concatenate":
        hint = (
            " (numpy's axis=None joins the flattened inputs: write "
            "F.concatenate([F.reshape(x, -1) for x in xs]))"
        )
    raise TypeError(f"{op}: axis must be an int, got {axis!r}{hint}")


class Concatenate(Function):
    """Join the inputs along an existing axis; used by :func:`concatenate`.

    Args:
        axis: The axis to join along (negative allowed).

    Raises:
        TypeError: ``axis`` is not an int (a bool, None or a float).
        ValueError: ``axis`` is out of range, or the shapes differ outside it.
    """

    vjp_reads_inputs = False  # which inputs are Constants and (ctx) their sizes, no values
    vjp_reads_outputs = False

    def __init__(self, axis: int) -> None:
        self.axis = axis

    def forward(self, *xs: Any) -> Any:
        axis = _check_axis("concatenate", self.axis, xs[0].ndim)
        shapes = [x.shape for x in xs]
        for s in shapes:
            if len(s) != len(shapes[0]) or any(
                a != b for i, (a, b) in enumerate(zip(s, shapes[0])) if i != axis
            ):
                raise ValueError(
                    f"concatenate: shapes {shapes} differ outside axis {axis}; all "
                    f"inputs must match on every other axis."
                )
        y = get_array_module(xs[0]).concat(xs, axis=axis)
        self.ctx = (axis, [s[axis] for s in shapes])
        return y

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return each input's gradient, its slice of ``gy`` along ``axis``."""
        axis, sizes = self.ctx
        lead = (slice(None),) * axis
        grads, start = [], 0
        for x, n in zip(self.inputs, sizes):
            if type(x) is not Constant:  # the ...: the array API wants every axis indexed
                grads.append(gy[(*lead, slice(start, start + n), ...)])
            else:
                grads.append(None)
            start += n
        return tuple(grads)


class Stack(Function):
    """Join same-shaped inputs along a new axis; used by :func:`stack`.

    Args:
        axis: Where the new axis goes in the result (negative allowed).

    Raises:
        TypeError: ``axis`` is not an int (a bool, None or a float).
        ValueError: ``axis`` is out of range, or the shapes differ.
    """

    vjp_reads_inputs = False  # which inputs are Constants and (ctx) their sizes, no values
    vjp_reads_outputs = False

    def __init__(self, axis: int) -> None:
        self.axis = axis

    def forward(self, *xs: Any) -> Any:
        axis = _check_axis("stack", self.axis, xs[0].ndim + 1)
        shapes = {x.shape for x in xs}
        if len(shapes) > 1:
            raise ValueError(f"stack: all inputs must have one shape, got {sorted(shapes)}")
        y = get_array_module(xs[0]).stack(xs, axis=axis)
        self.ctx = axis
        return y

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return each input's gradient, its index of ``gy`` along ``axis``."""
        lead = (slice(None),) * self.ctx
        return tuple(
            None if type(x) is Constant else gy[(*lead, i, ...)] for i, x in enumerate(self.inputs)
        )


def _sequence(xs: Any, op: str) -> Sequence[Any]:
    if not isinstance(xs, (list, tuple)):
        raise TypeError(
            f"{op}: xs must be a list or tuple of Variables or arrays, got "
            f"{type(xs).__name__}; wrap a single one as [x]."
        )
    if not xs:
        raise ValueError(f"{op}: needs at least one input")
    return xs


@defines(Concatenate)
def concatenate(xs: Sequence[Any], axis: int = 0, dim: int | None = None) -> Variable:
    """Join Variables along an existing ``axis`` (``cat`` and ``concat`` are aliases).

    Args:
        xs: A list or tuple of Variables or arrays, equal in shape outside ``axis``.
        axis: The axis to join along (negative allowed).
        dim: PyTorch's name for ``axis`` (give one of them).

    Returns:
        The joined Variable.

    Raises:
        TypeError: ``xs`` is not a list or tuple.
        ValueError: ``xs`` is empty, ``axis`` is out of range, or the shapes differ outside
            it; ``axis`` and ``dim`` are both given and differ.

    Examples:
        >>> import numpy as np
        >>> concatenate([np.zeros((2, 1)), np.ones((2, 2))], axis=1).shape
        (2, 3)
    """
    if dim is not None:
        axis = axis_or_dim("concatenate", axis, dim, 0)
    return Concatenate(axis)(*_sequence(xs, "concatenate"))


cat = concatenate
"""The same function as :func:`concatenate` (PyTorch's name)."""

concat = concatenate
"""The same function as :func:`concatenate` (the array API standard's and numpy 2's name)."""


@defines(Stack)
def stack(xs: Sequence[Any], axis: int = 0, dim: int | None = None) -> Variable:
    """Join same-shaped Variables along a new ``axis``.

    Args:
        xs: A list or tuple of Variables or arrays, all of one shape.
        axis: Where the new axis goes in the result (negative allowed).
        dim: PyTorch's name for ``axis`` (give one of them).

    Returns:
        The stacked Variable.

    Raises:
        TypeError: ``xs`` is not a list or tuple.
        ValueError: ``xs`` is empty, ``axis`` is out of range, or the shapes differ;
            ``axis`` and ``dim`` are both given and differ.

    Examples:
        >>> import numpy as np
        >>> stack([np.zeros(3), np.ones(3)]).shape
        (2, 3)
    """
    if dim is not None:
        axis = axis_or_dim("stack", axis, dim, 0)
    return Stack(axis)(*_sequence(xs, "stack"))


# literal, so that type checkers see the names (a test checks it against the ops defined here)
__all__ = [
    "concatenate",
    "stack",
    "Concatenate",
    "Stack",
    "cat",
    "concat",
]
