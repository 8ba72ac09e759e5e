"""Reductions: sum, mean (average), max, min."""

from __future__ import annotations

import warnings
from typing import Any

from ..backends import ORDERS_VALUES, backend_of, get_array_module, refuse_complex, sum_dtype_of
from ..checks import axis_or_dim, flag, normalize_axis, pytorch_alias
from ..function import Function
from ..shapes import size_of
from ..typing import ArrayLike, Axis
from ..variable import Variable
from ._inputs import as_input
from .arithmetic import ValueMask
from .ops import defines, op, variable_method


def keepdims_shape(x_shape: tuple[int, ...], axes: tuple[int, ...] | None) -> tuple[int, ...]:
    """Return the shape a reduction over ``axes`` has with ``keepdims=True``.

    Args:
        x_shape: The input's shape.
        axes: The reduced axes (non-negative), or None for all of them.

    Returns:
        ``x_shape`` with each reduced axis set to 1.

    Examples:
        >>> keepdims_shape((2, 3, 4), (1,))
        (2, 1, 4)
    """
    if axes is None:
        return (1,) * len(x_shape)
    return tuple(1 if i in axes else n for i, n in enumerate(x_shape))


def _inner(axes: tuple[int, ...] | None) -> bool:
    """Whether a result reduced over ``axes`` needs them back (as length 1) to broadcast.

    Not when they lead (or are all of them): broadcasting adds leading axes by itself.
    """
    return bool(axes) and axes[-1] >= len(axes)  # axes are sorted and distinct


class _Reduction(Function):
    """A reduction over axes; ``name`` is its function's name (in error messages)."""

    name = ""
    _doc_sections = """
        Args:
            x: A Variable, array, scalar or list.
            axis: An int or a tuple of ints (negative allowed), or None for every axis.
            keepdims: Keep the reduced axes with length 1.

        Returns:
            The reduced Variable.
        """

    def __init__(self, axis: Axis = None, keepdims: bool = False) -> None:
        if keepdims is not False and keepdims is not True:  # (no call on the common path)
            keepdims = flag(self.name, "keepdims", keepdims)
        self.axis, self.keepdims = axis, keepdims


class Sum(_Reduction):
    """Sum ``x`` over ``axis``; PyTorch's ``dim=`` and ``keepdim=`` are taken too.

    Raises:
        TypeError: ``axis`` or ``keepdims`` has the wrong type.
        ValueError: An axis is out of range or repeated; ``axis`` and ``dim`` (or
            ``keepdims`` and ``keepdim``) are both given and differ.
    """

    name = "sum"
    _doc_sections = """
        Args:
            x: A Variable, array, scalar or list.
            axis: An int or a tuple of ints (negative allowed), or None for every axis.
            keepdims: Keep the reduced axes with length 1.
            dim: PyTorch's name for ``axis`` (give one of them).
            keepdim: PyTorch's name for ``keepdims``.

        Returns:
            The reduced Variable.
        """
    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def forward(self, x: Any) -> Any:
        axes = normalize_axis(self.axis, x.ndim, "sum")
        b = backend_of(x)
        try:
            y = b.sum(x, axes, self.keepdims)  # float16 adds in float32 (Backend.sum)
        except TypeError:  # an array-API backend refusing bool: count in the default int
            if b.dtype_kind(x.dtype) != "b":
                raise
            y = b.sum(b.astype(x, b.asarray(0).dtype), axes, self.keepdims)
        self.ctx = (x.shape, axes)  # the vjp keeps no input: its shape is saved
        return y

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return the input's gradient, ``gy`` broadcast back to the input's shape."""
        x_shape, axes = self.ctx
        if not self.keepdims and _inner(axes):
            gy = xp.reshape(gy, keepdims_shape(x_shape, axes))
        return xp.broadcast_to(gy, x_shape)


sum = op(
    Sum,
    methods=("sum",),
    example=("sum(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=0)", "variable([4. 6.])"),
    in_vjp=True,
    aliases={"dim": "axis", "keepdim": "keepdims"},
)


class _Extremum(_Reduction):
    def forward(self, x: Any) -> Any:
        refuse_complex(self.name, x, ORDERS_VALUES)
        axes = normalize_axis(self.axis, x.ndim, self.name)
        if size_of(x) == 0 and (axes is None or any(x.shape[a] == 0 for a in axes)):
            raise ValueError(
                f"{self.name}: the input of shape {tuple(x.shape)} has no elements along the "
                f"reduced axes {self.axis!r}; there is no {self.name} of nothing."
            )
        y = getattr(get_array_module(x), self.name)(x, axis=axes, keepdims=self.keepdims)
        self.ctx = axes
        return y

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return the input's gradient: ``gy`` where ``x`` equals the result, zero elsewhere.

        A nan counts as equal to the nan result it makes: each nan gets ``gy``.
        """
        axes = self.ctx
        shape = tuple(y.shape)
        if not self.keepdims and _inner(axes):
            shape = keepdims_shape(xs[0].shape, axes)
            gy = xp.reshape(gy, shape)
        if xp.graph:  # a Function of x and y: a static-graph replay computes it anew
            return gy * xp.apply(ValueMask(_hits, gy.dtype, shape), xs[0], y)
        x = xs[0]
        return gy * backend_of(x).astype(_hits(x, y, shape), gy.dtype)  # gy broadcasts


def _hits(x: Any, y: Any, shape: tuple) -> Any:
    """Where ``x`` equals its max or min ``y`` (reshaped to ``shape``), or is nan.

    A nan in x makes its result nan (max and min propagate it), which equals nothing.
    """
    y = get_array_module(x).reshape(y, shape)
    return (x == y) | (x != x)  # x != x: nan


def _extremum_keywords(name: str) -> dict[str, str]:
    """PyTorch's keywords of ``max`` or ``min`` (``name``), and what to write instead.

    Refused, not taken: PyTorch's ``max(x, dim)`` returns the values and the indices, and
    ``values, indices = F.max(x, dim=1)`` would unpack the rows of zerograd's one result.
    """
    indices = "x.argmax(axis=1)" if name == "max" else "(-x).argmax(axis=1)"
    return {
        "dim": f"PyTorch's {name}(x, dim) returns values and indices; write F.{name}(x, "
        f"axis=1) for the values (PyTorch's a{name}) and {indices} for the indices",
        "keepdim": f"write keepdims=: F.{name}(x, axis=1, keepdims=True)",
    }


class Max(_Extremum):
    """Compute the maximum over ``axis``.

    Ties: every element equal to the maximum receives the full output gradient (DeZero's
    rule; the subgradient is not split). A nan makes the maximum nan, and every nan
    receives the full gradient. Max pooling differs: a window's gradient goes to one
    element only.

    Raises:
        TypeError: ``axis`` or ``keepdims`` has the wrong type; PyTorch's ``dim=`` or
            ``keepdim=`` (its ``max(x, dim)`` returns values and indices: the message
            says what to write).
        TypeError: complex ``x`` (complex numbers have no order).
        ValueError: A reduced axis is empty, or an axis is out of range.
    """

    name = "max"


max = op(
    Max,
    methods=("max",),
    example=("max(np.array([1.0, 3.0, 2.0]))", "variable(3.0)"),
    refuses=_extremum_keywords("max"),
)


class Min(_Extremum):
    """Compute the minimum over ``axis``; every tied minimum gets the full gradient.

    A nan makes the minimum nan, and every nan gets the full gradient.

    Raises:
        TypeError: ``axis`` or ``keepdims`` has the wrong type; PyTorch's ``dim=`` or
            ``keepdim=`` (the message says what to write).
        TypeError: complex ``x`` (complex numbers have no order).
        ValueError: A reduced axis is empty, or an axis is out of range.
    """

    name = "min"


min = op(
    Min,
    methods=("min",),
    example=("min(np.array([3.0, 1.0, 2.0]))", "variable(1.0)"),
    refuses=_extremum_keywords("min"),
)


class DivideByCount(Function):
    """``x / n`` for a count ``n`` (a batch size, a window's size), never rounded to float16.

    The operator ``x / n`` first makes the Python number ``n`` an array of ``x``'s dtype
    (numpy's rule, and zerograd's): float16, whose largest number is 65,504, holds a batch
    of 70,000 as ``inf``, and ``x / 70000`` is 0; a count past 2,048 is rounded. A float
    narrower than float32 (:func:`~zerograd.backends.sum_dtype_of`) is divided in float32
    here and rounded once to its dtype, as PyTorch divides; every other dtype is ``x / n``
    as the operator computes it. Its derivative is itself: ``gy / n``.

    Args:
        n: The count, a positive int.

    Examples:
        >>> import numpy as np
        >>> DivideByCount(70000)(np.full(2, 7000.0, np.float16)).data
        array([0.1, 0.1], dtype=float16)
    """

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def __init__(self, n: int) -> None:
        self.n = n

    def forward(self, x: Any) -> Any:
        b = backend_of(x)
        wide = sum_dtype_of(x)
        if wide is None:
            return x / b.asarray(self.n, dtype=x.dtype)
        return b.astype(b.astype(x, wide) / b.asarray(self.n, dtype=wide), x.dtype)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``gy / n``, divided as the forward divides."""
        return xp.apply(DivideByCount(self.n), gy)


class Mean(_Reduction):
    """The mean over ``axis`` by the backend's own ``mean``: :func:`mean` of 16-bit floats.

    numpy's ``mean`` of float16 adds in float32 and rounds once at the end, so a mean whose
    sum passes float16's largest number, 65,504, is still right (PyTorch's is too). The
    gradient is ``gy / (n / m)`` broadcast back (``n`` elements averaged into ``m``),
    divided in float32 and rounded once (:class:`DivideByCount`): PyTorch's bits.

    Raises:
        TypeError: ``axis`` or ``keepdims`` has the wrong type.
        ValueError: An axis is out of range or repeated.
    """

    name = "mean"
    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def forward(self, x: Any) -> Any:
        axes = normalize_axis(self.axis, x.ndim, "mean")
        y = get_array_module(x).mean(x, axis=axes, keepdims=self.keepdims)
        self.ctx = (x.shape, axes, size_of(x) // size_of(y))  # elements averaged into each
        return y

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``gy / count`` broadcast back to the input's shape."""
        x_shape, axes, count = self.ctx
        gy = xp.apply(DivideByCount(count), gy)
        if not self.keepdims and _inner(axes):
            gy = xp.reshape(gy, keepdims_shape(x_shape, axes))
        return xp.broadcast_to(gy, x_shape)


@defines(Mean, methods=("mean",))
def mean(
    x: ArrayLike,
    axis: Axis = None,
    keepdims: bool = False,
    dim: Axis = None,
    keepdim: bool | None = None,
) -> Variable:
    """Compute the arithmetic mean over ``axis`` (DeZero's ``average``).

    Integer data gives floats. As numpy's, the mean over no elements is nan, with a
    RuntimeWarning. A mean of floats narrower than float32 (float16) adds them in float32,
    as numpy's and PyTorch's do (:class:`Mean`): the mean of 70,000 float16 ones is 1, not
    ``inf``. Other dtypes are a sum times ``m / n``.

    Args:
        x: A Variable, array, scalar or list.
        axis: An int or a tuple of ints (negative allowed), or None for every axis.
        keepdims: Keep the reduced axes with length 1.
        dim: PyTorch's name for ``axis`` (give one of them).
        keepdim: PyTorch's name for ``keepdims``.

    Returns:
        The reduced Variable, in floating point.

    Raises:
        TypeError: ``axis`` or ``keepdims`` has the wrong type.
        ValueError: An axis is out of range or repeated; ``axis`` and ``dim`` (or
            ``keepdims`` and ``keepdim``) are both given and differ.

    Examples:
        >>> import numpy as np
        >>> mean(np.array([1, 2])).data
        array(1.5)
    """
    if not (dim is None and keepdim is None):
        axis = pytorch_alias("mean", "axis", axis, "dim", dim, None)
        keepdims = pytorch_alias("mean", "keepdims", keepdims, "keepdim", keepdim, False)
    x = as_input(x, "mean")
    if sum_dtype_of(x.data) is not None and size_of(x.data):  # (a dtype test for float32)
        return Mean(axis, keepdims)(x)
    try:
        y = sum(x, axis, keepdims)
    except (TypeError, ValueError) as exc:  # the axis checks name sum; the user called mean
        raise type(exc)(str(exc).replace("sum:", "mean:", 1)) from None
    n, m = size_of(x.data), size_of(y.data)
    if n:
        return y * (m / n)
    if m:
        warnings.warn(
            f"mean: mean of empty slice (input of shape {tuple(x.shape)}); the result is nan",
            RuntimeWarning,
            stacklevel=2,
        )
        return y * float("nan")
    return y * 1.0  # an empty result, in floating point as numpy's


average = mean
"""The same function as :func:`mean` (DeZero's ``average``)."""


@variable_method("argmax")
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

    Raises:
        TypeError: ``keepdims`` is not True or False.

    Examples:
        >>> import numpy as np
        >>> from zerograd import Variable
        >>> Variable(np.array([[1.0, 3.0], [4.0, 2.0]])).argmax(1)
        array([1, 0])
    """
    axis = axis_or_dim("Variable.argmax", axis, dim, None)
    if keepdims is not False and keepdims is not True:
        keepdims = flag("Variable.argmax", "keepdims", keepdims)
    return get_array_module(self.data).argmax(self.data, axis=axis, keepdims=keepdims)


# literal, so that type checkers see the names (a test checks it against the ops defined here)
__all__ = [
    "sum",
    "max",
    "min",
    "mean",
    "Max",
    "Mean",
    "Min",
    "Sum",
    "average",
    "DivideByCount",
]
