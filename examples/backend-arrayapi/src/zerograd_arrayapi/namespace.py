"""A numpy-named namespace over array-api-strict: the ``xp`` that zerograd calls.

zerograd (and zerograd-nn) call array functions by their numpy names, ``xp.transpose(x,
axes)``, ``xp.concatenate(xs, axis)``, ``xp.clip(x, lo, hi)``. The Array API standard
names some of them differently (``permute_dims``, ``concat``) and takes some arguments
keyword-only; this module maps one onto the other and passes the rest through unchanged.

>>> import zerograd_arrayapi.namespace as xp
>>> x = xp.asarray([[1.0, 2.0, 3.0]])
>>> xp.transpose(x).shape
(3, 1)
>>> xp.to_numpy(xp.concatenate([x, x], axis=0)).tolist()
[[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import array_api_strict as _a
import numpy as _np
from array_api_strict import (  # noqa: F401  (numpy and the Array API agree on these)
    abs,
    all,
    any,
    argsort,
    broadcast_arrays,
    ceil,
    complex64,
    complex128,
    cos,
    cosh,
    e,
    exp,
    expand_dims,
    expm1,
    float32,
    float64,
    floor,
    inf,
    int8,
    int16,
    int32,
    int64,
    isdtype,
    isfinite,
    isinf,
    isnan,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    matmul,
    meshgrid,
    moveaxis,
    nan,
    negative,
    newaxis,
    nonzero,
    pi,
    sign,
    sin,
    sinh,
    sort,
    sqrt,
    square,
    tan,
    tanh,
    tensordot,
    uint8,
    uint16,
    uint32,
    uint64,
)

from . import random  # noqa: F401  (xp.random: numpy's generator, arrays of ours)

__version__: str = _a.__version__
ndarray = type(_a.asarray(0.0))  # the array type, for isinstance checks
bool = bool_ = _a.bool  # numpy spells it both ways

_DTYPES = {
    "bool": _a.bool, "int8": int8, "int16": int16, "int32": int32, "int64": int64,
    "uint8": uint8, "uint16": uint16, "uint32": uint32, "uint64": uint64,
    "float32": float32, "float64": float64, "complex64": complex64, "complex128": complex128,
}  # fmt: skip


def _to_dtype(d: Any) -> Any:
    """The array-api-strict dtype for ``d``: one of ours, a numpy dtype, or a name."""
    if d is None or isinstance(d, type(float64)):
        return d
    name = _np.dtype(d).name
    try:
        return _DTYPES[name]
    except KeyError:
        raise TypeError(f"array-api-strict has no dtype {name!r}") from None


def _arr(v: Any) -> Any:
    """``v`` as an array (numpy arrays and lists converted; arrays and scalars pass)."""
    if isinstance(v, ndarray) or isinstance(v, (builtins.bool, int, float, complex)):
        return v
    return asarray(v)


def asarray(obj: Any, dtype: Any = None, copy: bool | None = None) -> Any:
    """``numpy.asarray``; numpy arrays and numpy dtypes are accepted."""
    d = _to_dtype(dtype)
    if isinstance(obj, _np.generic):
        obj = _np.asarray(obj)
    return _a.asarray(obj, dtype=d, copy=copy)


def array(obj: Any, dtype: Any = None, copy: bool = True) -> Any:
    """``numpy.array``: a copy by default."""
    return asarray(obj, dtype=dtype, copy=copy)


def to_numpy(x: Any) -> Any:
    """The values of ``x`` as a ``numpy.ndarray`` (through DLPack, a zero-copy view on CPU)."""
    return _np.from_dlpack(x)


def astype(x: Any, dtype: Any) -> Any:
    """``x`` converted to ``dtype`` (a new array)."""
    return _a.astype(x, _to_dtype(dtype))


def zeros(shape: Any, dtype: Any = None) -> Any:
    """``numpy.zeros``."""
    return _a.zeros(shape, dtype=_to_dtype(dtype))


def ones(shape: Any, dtype: Any = None) -> Any:
    """``numpy.ones``."""
    return _a.ones(shape, dtype=_to_dtype(dtype))


def empty(shape: Any, dtype: Any = None) -> Any:
    """``numpy.empty``."""
    return _a.empty(shape, dtype=_to_dtype(dtype))


def full(shape: Any, fill_value: Any, dtype: Any = None) -> Any:
    """``numpy.full``."""
    return _a.full(shape, fill_value, dtype=_to_dtype(dtype))


def zeros_like(x: Any, dtype: Any = None) -> Any:
    """``numpy.zeros_like``."""
    return _a.zeros_like(x, dtype=_to_dtype(dtype))


def ones_like(x: Any, dtype: Any = None) -> Any:
    """``numpy.ones_like``."""
    return _a.ones_like(x, dtype=_to_dtype(dtype))


def empty_like(x: Any, dtype: Any = None) -> Any:
    """``numpy.empty_like``."""
    return _a.empty_like(x, dtype=_to_dtype(dtype))


def full_like(x: Any, fill_value: Any, dtype: Any = None) -> Any:
    """``numpy.full_like``."""
    return _a.full_like(x, fill_value, dtype=_to_dtype(dtype))


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None) -> Any:
    """``numpy.arange``."""
    return _a.arange(start, stop, step, dtype=_to_dtype(dtype))


def linspace(start: float, stop: float, num: int = 50, endpoint: bool = True) -> Any:
    """``numpy.linspace``."""
    return _a.linspace(start, stop, num, endpoint=endpoint)


def eye(n: int, m: int | None = None, k: int = 0, dtype: Any = None) -> Any:
    """``numpy.eye``."""
    return _a.eye(n, m, k=k, dtype=_to_dtype(dtype))


def reshape(x: Any, shape: Any) -> Any:
    """``numpy.reshape``; ``shape`` may be an int or a tuple with one ``-1``."""
    return _a.reshape(x, (shape,) if isinstance(shape, int) else tuple(shape))


def transpose(x: Any, axes: Sequence[int] | None = None) -> Any:
    """``numpy.transpose``: axes reversed when ``axes`` is None (Array API ``permute_dims``)."""
    if axes is None:
        axes = tuple(range(x.ndim - 1, -1, -1))
    return _a.permute_dims(x, tuple(axes))


def swapaxes(x: Any, a: int, b: int) -> Any:
    """``numpy.swapaxes``."""
    axes = list(range(x.ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return _a.permute_dims(x, tuple(axes))


def squeeze(x: Any, axis: Any = None) -> Any:
    """``numpy.squeeze``: every length-1 axis when ``axis`` is None."""
    if axis is None:
        axis = tuple(i for i, n in enumerate(x.shape) if n == 1)
    return _a.squeeze(x, axis=axis)


def concatenate(arrays: Sequence[Any], axis: int | None = 0) -> Any:
    """``numpy.concatenate`` (Array API ``concat``)."""
    return _a.concat([_arr(a) for a in arrays], axis=axis)


def stack(arrays: Sequence[Any], axis: int = 0) -> Any:
    """``numpy.stack``."""
    return _a.stack([_arr(a) for a in arrays], axis=axis)


def broadcast_to(x: Any, shape: Any) -> Any:
    """``numpy.broadcast_to``."""
    return _a.broadcast_to(x, tuple(shape))


def tile(x: Any, reps: Any) -> Any:
    """``numpy.tile``."""
    return _a.tile(x, (reps,) if isinstance(reps, int) else tuple(reps))


def repeat(x: Any, repeats: Any, axis: int | None = None) -> Any:
    """``numpy.repeat``."""
    return _a.repeat(x, repeats, axis=axis)


def sum(x: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    """``numpy.sum``."""
    return _a.sum(x, axis=axis, dtype=_to_dtype(dtype), keepdims=keepdims)


def prod(x: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    """``numpy.prod``."""
    return _a.prod(x, axis=axis, dtype=_to_dtype(dtype), keepdims=keepdims)


def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``numpy.mean``."""
    return _a.mean(x, axis=axis, keepdims=keepdims)


def var(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``numpy.var``."""
    return _a.var(x, axis=axis, keepdims=keepdims)


def std(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``numpy.std``."""
    return _a.std(x, axis=axis, keepdims=keepdims)


def max(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``numpy.max``."""
    return _a.max(x, axis=axis, keepdims=keepdims)


def min(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``numpy.min``."""
    return _a.min(x, axis=axis, keepdims=keepdims)


amax, amin = max, min


def argmax(x: Any, axis: int | None = None, keepdims: bool = False) -> Any:
    """``numpy.argmax``."""
    return _a.argmax(x, axis=axis, keepdims=keepdims)


def argmin(x: Any, axis: int | None = None, keepdims: bool = False) -> Any:
    """``numpy.argmin``."""
    return _a.argmin(x, axis=axis, keepdims=keepdims)


def clip(x: Any, a_min: Any = None, a_max: Any = None) -> Any:
    """``numpy.clip`` (positional bounds)."""
    lo = None if a_min is None else _arr(a_min)
    hi = None if a_max is None else _arr(a_max)
    return _a.clip(x, lo, hi)


def where(condition: Any, x: Any, y: Any) -> Any:
    """``numpy.where`` with three arguments."""
    return _a.where(_arr(condition), _arr(x), _arr(y))


def maximum(x: Any, y: Any) -> Any:
    """``numpy.maximum``."""
    return _a.maximum(_arr(x), _arr(y))


def minimum(x: Any, y: Any) -> Any:
    """``numpy.minimum``."""
    return _a.minimum(_arr(x), _arr(y))


def power(x: Any, y: Any) -> Any:
    """``numpy.power``."""
    return _a.pow(_arr(x), _arr(y))


def add(x: Any, y: Any) -> Any:
    """``numpy.add`` (no ``add.at``: use the backend's ``scatter_add``)."""
    return _a.add(_arr(x), _arr(y))


def subtract(x: Any, y: Any) -> Any:
    """``numpy.subtract``."""
    return _a.subtract(_arr(x), _arr(y))


def multiply(x: Any, y: Any) -> Any:
    """``numpy.multiply``."""
    return _a.multiply(_arr(x), _arr(y))


def divide(x: Any, y: Any) -> Any:
    """``numpy.divide``."""
    return _a.divide(_arr(x), _arr(y))


true_divide = divide


def dot(x: Any, y: Any) -> Any:
    """``numpy.dot`` for 1-D and 2-D operands (a matrix product)."""
    return _a.matmul(x, y)


def pad(x: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0) -> Any:
    """``numpy.pad`` in ``'constant'`` mode: ``pad_width`` is one (before, after) per axis."""
    if mode != "constant":
        raise NotImplementedError(f"pad: only mode='constant' is supported, got {mode!r}")
    widths = [tuple(p) for p in pad_width]
    shape = tuple(n + a + b for n, (a, b) in zip(x.shape, widths))
    out = _a.full(shape, constant_values, dtype=x.dtype)
    out[tuple(slice(a, a + n) for n, (a, _) in zip(x.shape, widths))] = x
    return out


def allclose(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-8) -> builtins.bool:
    """``numpy.allclose``."""
    return builtins.bool(_a.all(_a.abs(a - b) <= atol + rtol * _a.abs(b)))


dtype = _to_dtype  # ``xp.dtype("float32")`` as in numpy


def take(x: Any, indices: Any, axis: int | None = None) -> Any:
    """``numpy.take`` (``axis=None`` needs a 1-D ``x`` in the Array API)."""
    return _a.take(x, _arr(indices), axis=axis)


def unique_inverse(x: Any) -> Any:
    """Array API ``unique_inverse``: ``(values, inverse_indices)``."""
    return _a.unique_inverse(x)
