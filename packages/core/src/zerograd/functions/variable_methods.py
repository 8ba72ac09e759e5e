"""The Variable methods and operators that are tensor functions (``x + y``, ``x.sum()``, ...).

``zerograd.variable`` imports no function: this package installs them on
:class:`~zerograd.Variable` when it is imported (as Chainer's
``install_variable_arithmetics`` does), so ``variable.py``, ``function.py`` and
``functions/`` import each other in one direction only.
"""

from __future__ import annotations

from typing import Any

from ..backends import get_array_module
from ..checks import axis_or_dim
from ..variable import Variable
from .arithmetic import Add, Div, Mul, Neg, Sub, pow, rpow
from .linalg import matmul
from .reduction import max, mean, min, sum
from .shape import get_item, reshape, transpose


# -- shape helpers ----------------------------------------------------------------------
def _reshape(self: Variable, *shape: Any) -> Variable:
    """Give the Variable a new shape: ``x.reshape(2, 3)`` or ``x.reshape((2, 3))``.

    Args:
        self: The Variable.
        *shape: The new shape, as ints or as one tuple or list; ``-1`` infers one axis.

    Returns:
        The reshaped Variable.

    Examples:
        >>> import numpy as np
        >>> from zerograd import Variable
        >>> Variable(np.arange(6.0)).reshape(2, 3).shape
        (2, 3)
    """
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return reshape(self, tuple(shape))


def _transpose(self: Variable, *axes: Any) -> Variable:
    """Reverse the axes, or permute them: ``x.transpose(1, 0, 2)``.

    Args:
        self: The Variable.
        *axes: The permutation, as ints or as one tuple or list; none (or None) reverses.

    Returns:
        The transposed Variable.
    """
    if not axes:
        axes = None
    elif len(axes) == 1 and (isinstance(axes[0], (tuple, list)) or axes[0] is None):
        axes = axes[0]
    return transpose(self, axes)


def _T(self: Variable) -> Variable:
    """Return the transpose (axes reversed); installed as the property ``Variable.T``.

    Returns:
        The transposed Variable.
    """
    return transpose(self)


def _sum(self: Variable, axis: Any = None, keepdims: bool = False) -> Variable:
    """Sum over ``axis`` (all axes by default); see :func:`zerograd.functions.sum`.

    Args:
        self: The Variable.
        axis: An int or a tuple of ints (negative allowed), or None for every axis.
        keepdims: Keep the reduced axes with length 1.

    Returns:
        The reduced Variable.
    """
    return sum(self, axis, keepdims)


def _mean(self: Variable, axis: Any = None, keepdims: bool = False) -> Variable:
    """Compute the mean over ``axis`` (all axes by default); see :func:`zerograd.functions.mean`.

    Args:
        self: The Variable.
        axis: An int or a tuple of ints (negative allowed), or None for every axis.
        keepdims: Keep the reduced axes with length 1.

    Returns:
        The reduced Variable, in floating point.
    """
    return mean(self, axis, keepdims)


def _max(self: Variable, axis: Any = None, keepdims: bool = False) -> Variable:
    """Compute the maximum over ``axis``; see :func:`zerograd.functions.max`.

    Args:
        self: The Variable.
        axis: An int or a tuple of ints (negative allowed), or None for every axis.
        keepdims: Keep the reduced axes with length 1.

    Returns:
        The reduced Variable.
    """
    return max(self, axis, keepdims)


def _min(self: Variable, axis: Any = None, keepdims: bool = False) -> Variable:
    """Compute the minimum over ``axis``; see :func:`zerograd.functions.min`.

    Args:
        self: The Variable.
        axis: An int or a tuple of ints (negative allowed), or None for every axis.
        keepdims: Keep the reduced axes with length 1.

    Returns:
        The reduced Variable.
    """
    return min(self, axis, keepdims)


def _argmax(self: Variable, axis: Any = None, keepdims: bool = False, *, dim: Any = None) -> Any:
    """Return the indices of the maxima along ``axis`` (of the flattened data for None).

    The result is an integer array of the Variable's backend, not a Variable: an index has
    no gradient, and a Variable's ``==`` compares identity while an array's compares
    values, so ``(model(x).argmax(1) == t).mean()`` is the accuracy. ``dim`` is PyTorch's
    name for ``axis``.

    Args:
        self: The Variable.
        axis: The axis to search along, or None for the flattened data.
        keepdims: Keep the searched axis with length 1.
        dim: The same as ``axis`` (give one of them).

    Returns:
        The array of indices (the first maximum where several are equal).

    Examples:
        >>> import numpy as np
        >>> from zerograd import Variable
        >>> Variable(np.array([[1.0, 3.0], [4.0, 2.0]])).argmax(1)
        array([1, 0])
    """
    axis = axis_or_dim("Variable.argmax", axis, dim, None)
    return get_array_module(self.data).argmax(self.data, axis=axis, keepdims=keepdims)


def _matmul(self: Variable, other: Any) -> Variable:
    """Compute the matrix product ``self @ other`` (DeZero's ``Variable.matmul``).

    Args:
        self: The Variable.
        other: A Variable or array.

    Returns:
        The product Variable.
    """
    return matmul(self, other)


def _getitem(self: Variable, slices: Any) -> Variable:
    return get_item(self, slices)


# -- operators: they build the Function directly (no helper frames), the hottest path of
# user code. Raw operands become Constants in Function.__call__.
def _neg(self: Variable) -> Variable:
    return Neg()(self)


def _add(self: Variable, other: Any) -> Variable:
    return Add()(self, other)


def _sub(self: Variable, other: Any) -> Variable:
    return Sub()(self, other)


def _rsub(self: Variable, other: Any) -> Variable:
    return Sub()(other, self)


def _mul(self: Variable, other: Any) -> Variable:
    return Mul()(self, other)


def _truediv(self: Variable, other: Any) -> Variable:
    return Div()(self, other)


def _rtruediv(self: Variable, other: Any) -> Variable:
    return Div()(other, self)


def _pow(self: Variable, other: Any) -> Variable:
    return pow(self, other)


def _rpow(self: Variable, other: Any) -> Variable:
    return rpow(self, other)


def _rmatmul(self: Variable, other: Any) -> Variable:
    return matmul(other, self)


METHODS = {
    "reshape": _reshape,
    "transpose": _transpose,
    "T": property(_T),
    "sum": _sum,
    "mean": _mean,
    "max": _max,
    "min": _min,
    "argmax": _argmax,
    "matmul": _matmul,
    "dot": _matmul,
    "__getitem__": _getitem,
    "__neg__": _neg,
    "__add__": _add,
    "__radd__": _add,
    "__sub__": _sub,
    "__rsub__": _rsub,
    "__mul__": _mul,
    "__rmul__": _mul,
    "__truediv__": _truediv,
    "__rtruediv__": _rtruediv,
    "__pow__": _pow,
    "__rpow__": _rpow,
    "__matmul__": _matmul,
    "__rmatmul__": _rmatmul,
}
"""Variable attribute name -> the function (or property) installed under it."""


def install_variable_methods() -> None:
    """Put :data:`METHODS` on :class:`~zerograd.Variable` (idempotent; done on import)."""
    for name, fn in METHODS.items():
        setattr(Variable, name, fn)
