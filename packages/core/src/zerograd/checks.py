"""Argument checks, one rule for zerograd and its packages.

A wrong type is a TypeError, a wrong value a ValueError; numpy integers (and 0-d integer
arrays) are integers, bools and floats (``2.0``) are not. A leaf module: the backends
import it, so it imports nothing of zerograd.

Examples:
    >>> pair(3), normalize_axis(-1, 3, "sum")
    ((3, 3), (2,))
"""

from __future__ import annotations

import operator
from typing import Any

__all__ = ["int_like", "normalize_axis", "pair"]


def int_like(v: Any) -> bool:
    """Whether ``v`` is a Python or numpy integer (or a 0-d integer array), never a bool.

    Args:
        v: Anything.

    Returns:
        True for integers that ``operator.index`` accepts.
    """
    if isinstance(v, bool) or getattr(getattr(v, "dtype", None), "kind", "i") not in "iu":
        return False
    try:
        operator.index(v)
    except TypeError:
        return False
    return True


def normalize_axis(axis: Any, ndim: int, op: str) -> tuple[int, ...] | None:
    """Return ``axis`` (an int, a tuple of ints or None) as a sorted tuple of non-negative axes.

    Args:
        axis: The axis or axes; negative ones count from the end; None means all.
        ndim: The input's number of dimensions.
        op: The zerograd function to name in errors.

    Returns:
        The axes, or None for ``axis=None``.

    Raises:
        TypeError: ``axis`` is not None, an int or a tuple of ints.
        ValueError: An axis is out of range, or named twice.

    Examples:
        >>> normalize_axis(-1, 3, "sum")
        (2,)
    """
    if axis is None:
        return None
    try:
        axes = (operator.index(axis),) if not isinstance(axis, (tuple, list)) else tuple(axis)
        axes = tuple(operator.index(a) for a in axes)
    except TypeError:
        raise TypeError(
            f"{op}: axis must be None, an int or a tuple of ints, got {axis!r}"
        ) from None
    for a in axes:
        if not -ndim <= a < ndim:
            valid = f"valid: {-ndim}..{ndim - 1}" if ndim else "it has none: use axis=None"
            raise ValueError(
                f"{op}: axis {a} is out of range for an input of {ndim} dimensions ({valid})."
            )
    out = tuple(sorted(a % ndim for a in axes))
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: axis {axis!r} names one axis twice")
    return out


def pair(x: Any, *, what: str = "pair") -> tuple[int, int]:
    """``x`` as a pair ``(h, w)``: an int is repeated, a pair passes through.

    Args:
        x: an int (numpy integers too) or a pair of them.
        what: the function and argument to name in the error, e.g. ``"pooling: stride"``.

    Returns:
        ``(h, w)`` as Python ints.

    Raises:
        ValueError: ``x`` is not an int or a pair of ints (bools and floats are refused).

    Examples:
        >>> pair(3), pair((2, 1))
        ((3, 3), (2, 1))
    """
    if type(x) is tuple and len(x) == 2 and type(x[0]) is int and type(x[1]) is int:
        return x  # already a pair (the common case: functions pass checked pairs on)
    if int_like(x):
        n = operator.index(x)
        return (n, n)
    if isinstance(x, (tuple, list)) and len(x) == 2 and all(int_like(v) for v in x):
        return (operator.index(x[0]), operator.index(x[1]))
    raise ValueError(f"{what}: expected an int or a pair of ints (h, w), got {x!r}")
