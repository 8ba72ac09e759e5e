"""Shape manipulation: reshape, transpose, expand_dims, flatten, get_item."""

from __future__ import annotations

import math
import operator
from typing import Any

from ..backends import backend_of, device_of, get_array_module
from ..backends.errors import BackendMismatchError
from ..checks import int_like, pytorch_keyword_error
from ..function import Function
from ..shapes import size_of
from ..typing import ArrayLike
from ..variable import Variable
from ._inputs import as_input, empty_input
from .ops import defines, op, variable_method


def _fits(shape: tuple[int, ...], n: int) -> bool:
    """Whether ``n`` elements can take ``shape`` (one ``-1`` infers an axis)."""
    known = math.prod(d for d in shape if d != -1)
    if -1 not in shape:
        return known == n
    return shape.count(-1) == 1 and (n % known == 0 if known else n == 0)


def _reshape_error(x_shape: tuple[int, ...], n: int, shape: tuple[int, ...]) -> ValueError:
    """Why ``n`` elements of shape ``x_shape`` cannot take ``shape``."""
    unknown = [d for d in shape if d < 0]  # numpy infers any negative length, as -1
    known = math.prod(d for d in shape if d >= 0)
    if len(unknown) > 1:
        why = f"only one axis can be -1 (inferred from the others), and {len(unknown)} are"
    elif unknown and known == 0:
        why = "the -1 cannot be inferred beside an axis of length 0: give every length"
    else:
        why = "the number of elements must stay the same"
    return ValueError(
        f"reshape: cannot reshape an array of shape {x_shape} ({n} elements) into shape "
        f"{shape}; {why}."
    )


class Reshape(Function):
    """Give the input a new shape; used by :func:`reshape`.

    Args:
        shape: The new shape (the same number of elements; ``-1`` infers one axis).

    Raises:
        TypeError: The shape is not a tuple of ints.
        ValueError: The number of elements would change.
    """

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    def forward(self, x: Any) -> Any:
        try:  # the input's shape is saved: the derivative needs no data (it may be dropped)
            y = get_array_module(x).reshape(x, self.shape)
            self.ctx = x.shape
            return y
        except TypeError:
            raise TypeError(
                f"reshape: the shape must be a tuple of ints, got {self.shape!r}"
            ) from None
        except (ValueError, RuntimeError) as exc:  # PyTorch raises a RuntimeError
            if isinstance(exc, RuntimeError) and _fits(self.shape, size_of(x)):
                raise  # not about the shape: let it through as it is
            raise _reshape_error(tuple(x.shape), size_of(x), self.shape) from None

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return the input's gradient, ``gy`` reshaped back to the input's shape."""
        return xp.reshape(gy, self.ctx)


def _normalize_axes(axes: Any, ndim: int) -> tuple[int, ...] | None:
    if axes is None:
        return None
    try:
        if bool in map(type, axes):  # operator.index reads a bool as 0 or 1; numpy refuses it
            raise TypeError
        axes = tuple(operator.index(a) for a in axes)
    except TypeError:
        raise TypeError(
            f"transpose: axes must be None or a sequence of ints, got {axes!r}"
        ) from None
    if sorted(a % ndim if -ndim <= a < ndim else a for a in axes) != list(range(ndim)):
        what = f"pass each of 0..{ndim - 1} (or its negative) exactly once" if ndim else "pass ()"
        raise ValueError(
            f"transpose: axes {axes} are not a permutation of the {ndim} axes of the input; "
            f"{what}{_swap_hint(axes, ndim)}."
        )
    return tuple(a % ndim for a in axes)


def _swapped(ndim: int, a: int, b: int) -> tuple[int, ...] | None:
    """The permutation of ``ndim`` axes that swaps axes ``a`` and ``b``, or None."""
    if not (-ndim <= a < ndim and -ndim <= b < ndim):
        return None
    order = list(range(ndim))
    order[a], order[b] = order[b], order[a]
    return tuple(order)


def _swap_hint(axes: tuple[int, ...], ndim: int) -> str:
    """For two axes given to transpose, the permutation that swaps them (PyTorch's meaning)."""
    order = _swapped(ndim, *axes) if len(axes) == 2 and ndim > 2 else None
    if order is None:
        return ""
    return (
        f" (PyTorch's transpose(dim0, dim1) swaps two axes; to swap axes {axes[0]} and "
        f"{axes[1]} write transpose(x, {order}))"
    )


def _refuse_transpose_keywords(x: Any, given: dict[str, Any]) -> None:
    """Raise the error for keywords ``given`` to transpose, which takes ``axes`` only."""
    swap = [k for k in given if k in ("dim0", "dim1")]
    if not swap:
        raise TypeError(f"transpose() got an unexpected keyword argument {next(iter(given))!r}")
    ndim = getattr(x, "ndim", None)
    order = None
    if isinstance(ndim, int) and len(swap) == 2:
        try:
            order = _swapped(ndim, operator.index(given["dim0"]), operator.index(given["dim1"]))
        except TypeError:
            order = None
    how = (
        f"to swap axes {given['dim0']} and {given['dim1']} of this {ndim}-D input write "
        f"transpose(x, {order}) or x.transpose{order}"
        if order is not None
        else "to swap two axes, list every axis with those two exchanged: "
        "x.transpose(1, 0, 2) swaps axes 0 and 1 of a 3-D x"
    )
    raise pytorch_keyword_error(
        "transpose",
        swap[0],
        f"transpose takes the new order of every axis, as numpy's (DeZero's), not two axes "
        f"to swap; {how}",
    )


class Transpose(Function):
    """Permute the axes; used by :func:`transpose`.

    Args:
        axes: A permutation of the input's axes (negative allowed), or None to reverse them.

    Raises:
        TypeError: ``axes`` is not None or a sequence of ints (bools refused).
        ValueError: ``axes`` is not a permutation of ``x``'s axes.
    """

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def __init__(self, axes: Any = None) -> None:
        self.axes = axes

    def forward(self, x: Any) -> Any:
        axes = _normalize_axes(self.axes, x.ndim)
        self.ctx = axes  # None: reversed, which the vjp reverses back
        order = tuple(range(x.ndim))[::-1] if axes is None else axes
        return get_array_module(x).permute_dims(x, order)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return the input's gradient, ``gy`` with the inverse permutation."""
        axes = self.ctx
        if axes is None:  # reversed axes are their own inverse
            return xp.permute_dims(gy, tuple(range(gy.ndim))[::-1])
        inverse = [0] * len(axes)
        for i, a in enumerate(axes):
            inverse[a] = i
        return xp.permute_dims(gy, tuple(inverse))


def _index_data(slices: Any) -> Any:
    """Unwrap Variables used as indices."""
    if isinstance(slices, tuple):
        return tuple(s.data if isinstance(s, Variable) else s for s in slices)
    return slices.data if isinstance(slices, Variable) else slices


def _check_index_backend(x: Any, slices: Any) -> None:
    """Name the backends when an index array lives on another one than ``x``.

    E.g. GPU ids indexing a CPU embedding; the array libraries' own errors do not.
    """
    home = backend_of(x)
    for s in slices if isinstance(slices, tuple) else (slices,):
        if not hasattr(s, "shape") or not hasattr(s, "dtype"):
            continue
        try:
            other = backend_of(s)
        except Exception:
            continue
        if other is not home:
            raise BackendMismatchError(
                f"get_item: the index array lives on backend {other.name!r} and the indexed "
                f"array (shape {tuple(x.shape)}) on {home.name!r}. Put both on one backend: move "
                f"the indexed array (model.to_gpu(), Variable.to_gpu()) or the index "
                f"(zerograd.backends.as_numpy(index) for the CPU)."
            ) from None


_PLAIN_INDEX = (int, bool, slice, type(None), type(Ellipsis))


def _frozen_part(s: Any) -> Any:
    if type(s) in _PLAIN_INDEX:
        return s
    if isinstance(s, list):  # nested lists are index arrays too
        return [_frozen_part(e) for e in s]
    try:
        xp = get_array_module(s)
    except Exception:  # not an array of any backend (a numpy integer scalar): immutable
        return s
    return xp.asarray(s, copy=True)


def _frozen_index(slices: Any) -> Any:
    """``slices`` with its index arrays and lists copied, for the vjp to read.

    The user may write into an index array (or list) between the forward and the backward;
    the gradient must go where the forward read from.
    """
    if type(slices) is tuple:
        if all(type(s) in _PLAIN_INDEX for s in slices):
            return slices
        return tuple(_frozen_part(s) for s in slices)
    return _frozen_part(slices)


class GetItem(Function):
    """Select ``x[slices]``; the gradient flows back to the selected elements.

    Args:
        slices: Ints, slices, None, Ellipsis, integer or boolean arrays (Variables allowed),
            or a tuple of them.

    Raises:
        IndexError: The index does not fit ``x``'s shape.
        ValueError: The index is malformed (a ragged list, a slice step of 0).
        BackendMismatchError: An index array lives on another backend than ``x``.
    """

    vjp_reads_inputs = False  # only the input's shape, which forward saves in ctx
    vjp_reads_outputs = False

    def __init__(self, slices: Any) -> None:
        self.slices = _index_data(slices)

    def forward(self, x: Any) -> Any:
        try:
            y = backend_of(x).getitem(x, self.slices)
        except (IndexError, TypeError, ValueError) as exc:
            _check_index_backend(x, self.slices)
            if isinstance(exc, TypeError):
                raise
            # a ValueError is the index's own fault (a ragged list, a slice step of 0)
            raise (ValueError if isinstance(exc, ValueError) else IndexError)(
                f"get_item: index {self.slices!r} on shape {tuple(x.shape)}: {exc}"
            ) from None
        self.ctx = (_frozen_index(self.slices), x.shape)
        return y

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return the input's gradient: ``gy`` scattered into zeros (:class:`GetItemGrad`).

        It scatters at the index as the forward read it (a copy), whatever was written into
        the index arrays since.
        """
        slices, shape = self.ctx
        return xp.apply(GetItemGrad(slices, shape), gy)


class GetItemGrad(Function):
    """Scatter ``gy`` into zeros of the input's shape; repeated indices accumulate.

    Args:
        slices: The index that :class:`GetItem` applied.
        in_shape: The shape of :class:`GetItem`'s input.
    """

    vjp_reads_inputs = False  # linear in gy: its derivative reads nothing of the call
    vjp_reads_outputs = False

    def __init__(self, slices: Any, in_shape: tuple[int, ...]) -> None:
        self.slices = slices
        self.in_shape = in_shape

    def forward(self, gy: Any) -> Any:
        """Return zeros of ``in_shape`` with ``gy`` added at ``slices``.

        Args:
            gy: The gradient of :class:`GetItem`'s output.

        Returns:
            An array of ``in_shape`` in ``gy``'s dtype.
        """
        xp = get_array_module(gy)
        zeros = xp.zeros(self.in_shape, dtype=gy.dtype, device=device_of(gy))
        return backend_of(gy).scatter_add(zeros, self.slices, gy)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return the gradient of its input ``gy``: this output's gradient at ``slices``."""
        # GetItem, not gy[slices]: backend.getitem gives numpy's indexing on every backend
        return xp.apply(GetItem(self.slices), gy)


@defines(Reshape, in_vjp=True)
def reshape(x: ArrayLike, shape: Any) -> Variable:
    """Give ``x`` a new shape with the same number of elements.

    Args:
        x: A Variable, array, scalar or list.
        shape: An int or a tuple of ints; ``-1`` infers one axis.

    Returns:
        A Variable of ``shape`` (``x`` itself when the shape is unchanged).

    Raises:
        TypeError: ``shape`` is not made of ints.
        ValueError: The number of elements would change.

    Examples:
        >>> import numpy as np
        >>> reshape(np.arange(6.0), (2, -1)).shape
        (2, 3)
    """
    if not isinstance(x, Variable):
        x = as_input(x, "reshape")
    elif x.data is None:
        raise empty_input(x, "reshape")
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if x.shape == shape:
        return x
    return Reshape(shape)(x)


@defines(Transpose)
def transpose(x: ArrayLike, axes: Any = None, **pytorch: Any) -> Variable:
    """Permute the axes of ``x``.

    ``axes`` is the new order of every axis, as numpy's and DeZero's: PyTorch's
    ``transpose(x, dim0, dim1)`` swaps two axes. Its ``dim0=``, ``dim1=`` are refused, the
    message giving the permutation that swaps them; ``transpose(x, (0, 1))`` of a 2-D ``x``
    is numpy's, the order it has.

    Args:
        x: A Variable, array, scalar or list.
        axes: A permutation of the axes (negative allowed), or None to reverse them.
        **pytorch: Refused (PyTorch's ``dim0``, ``dim1``).

    Returns:
        The transposed Variable.

    Raises:
        TypeError: ``axes`` is not None or a sequence of ints; a keyword other than ``axes``.
        ValueError: ``axes`` is not a permutation of ``x``'s axes.

    Examples:
        >>> import numpy as np
        >>> transpose(np.zeros((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    if pytorch:
        _refuse_transpose_keywords(x, pytorch)
    return Transpose(axes)(x)


get_item = op(
    GetItem,
    methods=("__getitem__",),
    example=("get_item(np.array([[1.0, 2.0], [3.0, 4.0]]), (slice(None), 1))", "variable([2. 4.])"),
)


@defines()
def expand_dims(x: ArrayLike, axis: int) -> Variable:
    """Insert an axis of length 1 at ``axis``.

    Args:
        x: A Variable, array, scalar or list.
        axis: Where the new axis goes in the result (negative counts from the end).

    Returns:
        A Variable with one more axis.

    Raises:
        TypeError: ``axis`` is not an int (a bool is refused).
        ValueError: ``axis`` is out of range.

    Examples:
        >>> import numpy as np
        >>> expand_dims(np.zeros((2, 3)), -1).shape
        (2, 3, 1)
    """
    x = as_input(x, "expand_dims")
    if not int_like(axis):  # a bool too: operator.index reads it as 0 or 1
        raise TypeError(f"expand_dims: axis must be an int, got {axis!r}")
    axis = operator.index(axis)
    shape = list(x.shape)
    ndim = len(shape) + 1
    if not -ndim <= axis < ndim:
        raise ValueError(f"expand_dims: axis {axis} is out of range for a result of {ndim} dims")
    shape.insert(axis % ndim, 1)
    return reshape(x, tuple(shape))


@defines()
def flatten(x: ArrayLike, **pytorch: Any) -> Variable:
    """Flatten every axis but the first: shape (N, ...) becomes (N, -1).

    As DeZero's ``flatten``, it keeps the batch axis; 0-d data has none, so it becomes
    shape (1,) (what ``numpy.ndarray.flatten`` and ``torch.flatten`` give). PyTorch's
    ``start_dim=`` and ``end_dim=`` are refused, the message saying what to write.

    Args:
        x: A Variable, array, scalar or list.
        **pytorch: Refused (PyTorch's ``start_dim``, ``end_dim``).

    Returns:
        A new 2-d Variable (1-d for 0-d input), also for 2-d ``x``, as DeZero's.

    Raises:
        TypeError: A keyword (PyTorch's ``start_dim=`` and ``end_dim=`` named).

    Examples:
        >>> import numpy as np
        >>> flatten(np.zeros((2, 3, 4))).shape
        (2, 12)
    """
    if pytorch:
        key = next(iter(pytorch))
        if key not in ("start_dim", "end_dim"):
            raise TypeError(f"flatten() got an unexpected keyword argument {key!r}")
        raise pytorch_keyword_error(
            "flatten",
            key,
            "flatten keeps the first axis and joins all the others, as PyTorch's "
            "flatten(x, start_dim=1): write F.flatten(x); to join other axes, reshape: "
            "F.reshape(x, (x.shape[0], x.shape[1], -1)) joins those from axis 2 on",
        )
    x = as_input(x, "flatten")
    if x.ndim == 0:
        return reshape(x, (1,))
    n = x.shape[0]
    # Reshape even when x is already (N, M), not reshape(), which returns x itself for
    # an unchanged shape: DeZero's flatten (reshape to (N, -1)) always gives a new
    # Variable, so y's grad, name and creator are y's own, not x's
    return Reshape((n, x.size // n if n else math.prod(x.shape[1:])))(x)


@variable_method("reshape")
def _reshape(self: Variable, *shape: Any, **keywords: Any) -> Variable:
    """Give the Variable a new shape: ``x.reshape(2, 3)`` or ``x.reshape((2, 3))``.

    ``x.reshape(shape=(2, 3))`` (:func:`reshape`'s and PyTorch's keyword) is taken too.

    Args:
        self: The Variable.
        *shape: The new shape, as ints or as one tuple or list; ``-1`` infers one axis.
        **keywords: ``shape=``, given instead of ``*shape``.

    Returns:
        The reshaped Variable.

    Raises:
        TypeError: A keyword other than ``shape``, or ``shape=`` with a shape by position.

    Examples:
        >>> import numpy as np
        >>> from zerograd import Variable
        >>> Variable(np.arange(6.0)).reshape(2, 3).shape
        (2, 3)
    """
    if keywords:
        shape = _shape_keyword(shape, keywords)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return reshape(self, tuple(shape))


def _shape_keyword(shape: tuple, keywords: dict[str, Any]) -> tuple:
    """``Variable.reshape``'s shape when keywords were given: ``shape=`` alone."""
    other = [k for k in keywords if k != "shape"]
    if other:
        raise TypeError(
            f"Variable.reshape() got an unexpected keyword argument {other[0]!r}; give the "
            f"shape by position, x.reshape(2, 3), or as shape=(2, 3)"
        )
    if shape:
        raise TypeError(
            f"Variable.reshape: the shape is given twice, by position "
            f"{shape[0] if len(shape) == 1 else shape} and as "
            f"shape={keywords['shape']!r}; give one of them"
        )
    return (keywords["shape"],)


@variable_method("transpose")
def _transpose(self: Variable, *axes: Any, **pytorch: Any) -> Variable:
    """Reverse the axes, or permute them: ``x.transpose(1, 0, 2)``.

    The axes are the new order of every axis (numpy's), not PyTorch's two axes to swap:
    PyTorch's ``dim0=``, ``dim1=`` are refused with the permutation that swaps them.

    Args:
        self: The Variable.
        *axes: The permutation, as ints or as one tuple or list; none (or None) reverses.
        **pytorch: Refused (PyTorch's ``dim0``, ``dim1``).

    Returns:
        The transposed Variable.

    Raises:
        TypeError: A keyword (PyTorch's ``dim0=`` and ``dim1=`` named).
    """
    if pytorch:
        _refuse_transpose_keywords(self, pytorch)
    if not axes:
        axes = None
    elif len(axes) == 1 and (isinstance(axes[0], (tuple, list)) or axes[0] is None):
        axes = axes[0]
    return transpose(self, axes)


@variable_method("T", as_property=True)
def _T(self: Variable) -> Variable:
    """Return the transpose (axes reversed); installed as the property ``Variable.T``.

    Returns:
        The transposed Variable.
    """
    return Transpose()(self)


# literal, so that type checkers see the names (a test checks it against the ops defined here)
__all__ = [
    "reshape",
    "transpose",
    "get_item",
    "expand_dims",
    "flatten",
    "GetItem",
    "Reshape",
    "Transpose",
    "GetItemGrad",
]
