"""Shape manipulation: reshape, transpose, expand_dims, flatten, get_item."""

from __future__ import annotations

import math
import operator
from typing import Any

from ..backends import backend_of, device_of, get_array_module
from ..backends.errors import BackendMismatchError
from ..function import Function
from ..variable import Variable
from ._inputs import as_input


class Reshape(Function):
    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    def forward(self, x: Any) -> Any:
        self.x_shape = x.shape
        try:
            return get_array_module(x).reshape(x, self.shape)
        except TypeError:
            raise TypeError(
                f"reshape: the shape must be a tuple of ints, got {self.shape!r}"
            ) from None
        except ValueError:
            raise ValueError(
                f"reshape: cannot reshape an array of shape {x.shape} ({x.size} elements) into "
                f"shape {self.shape}; the number of elements must stay the same."
            ) from None

    def backward(self, gy: Variable) -> Variable:
        return reshape(gy, self.x_shape)


def _normalize_axes(axes: Any, ndim: int) -> tuple[int, ...] | None:
    if axes is None:
        return None
    try:
        axes = tuple(operator.index(a) for a in axes)
    except TypeError:
        raise TypeError(
            f"transpose: axes must be None or a sequence of ints, got {axes!r}"
        ) from None
    if sorted(a % ndim if -ndim <= a < ndim else a for a in axes) != list(range(ndim)):
        what = f"pass each of 0..{ndim - 1} (or its negative) exactly once" if ndim else "pass ()"
        raise ValueError(
            f"transpose: axes {axes} are not a permutation of the {ndim} axes of the input; {what}."
        )
    return tuple(a % ndim for a in axes)


class Transpose(Function):
    def __init__(self, axes: Any = None) -> None:
        self.axes = axes

    def forward(self, x: Any) -> Any:
        self.axes = _normalize_axes(self.axes, x.ndim)
        axes = tuple(range(x.ndim))[::-1] if self.axes is None else self.axes
        return get_array_module(x).permute_dims(x, axes)

    def backward(self, gy: Variable) -> Variable:
        if self.axes is None:
            return transpose(gy)
        inverse = [0] * len(self.axes)
        for i, a in enumerate(self.axes):
            inverse[a] = i
        return transpose(gy, inverse)


def _index_data(slices: Any) -> Any:
    """Unwrap Variables used as indices."""
    if isinstance(slices, tuple):
        return tuple(s.data if isinstance(s, Variable) else s for s in slices)
    return slices.data if isinstance(slices, Variable) else slices


def _check_index_backend(x: Any, slices: Any) -> None:
    """Name the backends when an index array lives on another one than ``x`` (e.g. GPU ids
    indexing a CPU embedding); the array libraries' own errors do not."""
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
                f"array (shape {x.shape}) on {home.name!r}. Put both on one backend: move the "
                f"indexed array (model.to_gpu(), Variable.to_gpu()) or the index "
                f"(zerograd.backends.as_numpy(index) for the CPU)."
            ) from None


class GetItem(Function):
    def __init__(self, slices: Any) -> None:
        self.slices = _index_data(slices)

    def forward(self, x: Any) -> Any:
        try:
            return backend_of(x).getitem(x, self.slices)
        except (IndexError, TypeError) as exc:
            _check_index_backend(x, self.slices)
            if isinstance(exc, TypeError):
                raise
            raise IndexError(f"get_item: index {self.slices!r} on shape {x.shape}: {exc}") from None

    def backward(self, gy: Variable) -> Variable:
        x = self.inputs[0]
        return GetItemGrad(self.slices, x.shape)(gy)


class GetItemGrad(Function):
    """Scatter ``gy`` into zeros of the input's shape; repeated indices accumulate."""

    def __init__(self, slices: Any, in_shape: tuple[int, ...]) -> None:
        self.slices = slices
        self.in_shape = in_shape

    def forward(self, gy: Any) -> Any:
        xp = get_array_module(gy)
        zeros = xp.zeros(self.in_shape, dtype=gy.dtype, device=device_of(gy))
        return backend_of(gy).scatter_add(zeros, self.slices, gy)

    def backward(self, ggx: Variable) -> Variable:
        return get_item(ggx, self.slices)


def reshape(x: Any, shape: Any) -> Variable:
    """Give ``x`` a new shape with the same number of elements (``-1`` infers one axis)."""
    if not isinstance(x, Variable):
        x = as_input(x, "reshape")
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if x.shape == shape:
        return x
    return Reshape(shape)(x)


def transpose(x: Any, axes: Any = None) -> Variable:
    """Permute the axes (reverse them when ``axes`` is None); negative axes allowed."""
    return Transpose(axes)(x)


def get_item(x: Any, slices: Any) -> Variable:
    """``x[slices]``: ints, slices, None, Ellipsis and integer or boolean arrays."""
    return GetItem(slices)(x)


def expand_dims(x: Any, axis: int) -> Variable:
    """Insert an axis of length 1 at ``axis`` (negative counts from the end)."""
    x = as_input(x, "expand_dims")
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"expand_dims: axis must be an int, got {axis!r}") from None
    shape = list(x.shape)
    ndim = len(shape) + 1
    if not -ndim <= axis < ndim:
        raise ValueError(f"expand_dims: axis {axis} is out of range for a result of {ndim} dims")
    shape.insert(axis % ndim, 1)
    return reshape(x, tuple(shape))


def flatten(x: Any) -> Variable:
    """Flatten every axis but the first: shape (N, ...) becomes (N, -1).

    As DeZero's ``flatten``, it keeps the batch axis; 0-d data has none, so it becomes
    shape (1,) (what ``numpy.ndarray.flatten`` and ``torch.flatten`` give).
    """
    x = as_input(x, "flatten")
    if x.ndim == 0:
        return reshape(x, (1,))
    n = x.shape[0]
    return reshape(x, (n, x.size // n if n else math.prod(x.shape[1:])))
