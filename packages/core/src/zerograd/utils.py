"""Small helpers shared by core, the backends and zerograd-nn, each written once here.

Examples:
    >>> import numpy as np
    >>> from zerograd import Variable
    >>> data_of(Variable(np.ones(2))).shape, conv_outsize(28, 3, 1, 1)
    ((2,), 28)
    >>> normalize_axis(-1, 3, "sum")
    (2,)
    >>> size_of(np.zeros((2, 3)))
    6
"""

from __future__ import annotations

import math
import operator
from typing import Any

from .variable import Variable

__all__ = ["conv_outsize", "data_of", "int_like", "normalize_axis", "pair", "size_of"]


def data_of(x: Any) -> Any:
    """Return the array behind ``x``: a Variable's data, anything else as it is.

    Args:
        x: A Variable or anything else.

    Returns:
        ``x.data`` for a Variable, else ``x``.
    """
    return x.data if isinstance(x, Variable) else x


def size_of(x: Any) -> int:
    """Return the number of elements of the backend array ``x``: the product of its shape.

    Use it, never ``x.size``, on raw arrays: ``torch.Tensor.size`` is a method, and the array
    API standard lets ``size`` be None where a dimension depends on the data. On a Variable,
    ``x.size`` is fine (it is zerograd's property, computed this way).

    Args:
        x: An array of any backend (anything with a ``shape`` of ints).

    Returns:
        The element count, 1 for a 0-d array.

    Examples:
        >>> import numpy as np
        >>> size_of(np.zeros((2, 0))), size_of(np.float64(3.0))
        (0, 1)
    """
    return math.prod(x.shape)


def conv_outsize(size: int, k: int, s: int, p: int) -> int:
    """Output length of a convolution along one axis: ``(size + 2*p - k) // s + 1``.

    Args:
        size: The input's length.
        k: The kernel size on that axis.
        s: The stride.
        p: The padding on each side.

    Returns:
        The output length.

    Examples:
        >>> conv_outsize(5, 3, 1, 1)
        5
    """
    return (size + 2 * p - k) // s + 1


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
