"""The simulated device array: a numpy array that host code may reach only explicitly.

What it enforces is CuPy's host/device boundary: numpy arrays are refused as operands
(``TypeError: Unsupported type``), implicit conversion to numpy is refused (``__array__``),
and reductions and integer indexing give 0-d device arrays, never numpy scalars. What it
cannot show is anything about CUDA itself: speed, memory, or CuPy's own numerics.
"""

from __future__ import annotations

import copy as _copy
from typing import Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from ._names import NDARRAY

# Methods whose results live on the host in CuPy as well.
_HOST_METHODS = frozenset({"item", "tolist", "tobytes"})


IMPLICIT = (
    "Implicit conversion to a NumPy array is not allowed. "
    "Please use `.get()` to construct a NumPy array explicitly."
)


def unsupported(obj: Any) -> TypeError:
    return TypeError(f"Unsupported type {type(obj)}")


def unwrap(obj: Any, *, host_ok: bool = False) -> Any:
    """Replace device arrays by their numpy data; refuse numpy arrays unless ``host_ok``."""
    if isinstance(obj, ndarray):
        return obj._a
    if isinstance(obj, np.ndarray):
        if host_ok:
            return obj
        raise unsupported(obj)
    if isinstance(obj, (tuple, list)):
        return type(obj)(unwrap(o, host_ok=host_ok) for o in obj)
    return obj


def unwrap_kwargs(kwargs: dict, *, host_ok: bool = False) -> dict:
    return {k: unwrap(v, host_ok=host_ok) for k, v in kwargs.items()}


def wrap(obj: Any) -> Any:
    """numpy results back onto the 'device': arrays and numpy scalars become device arrays."""
    if isinstance(obj, (np.ndarray, np.generic)):
        return ndarray._of(np.asarray(obj))
    if isinstance(obj, tuple):
        return tuple(wrap(o) for o in obj)
    if isinstance(obj, list):
        return [wrap(o) for o in obj]
    return obj


_COMPARISONS = frozenset(
    {np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal}
)


def operands(ufunc: np.ufunc, inputs: tuple) -> list:
    """A ufunc's operands as CuPy takes them: device arrays and scalars (numpy scalars
    included); numpy arrays and lists refused, except 0-d arrays in comparisons."""
    out = []
    for x in inputs:
        if isinstance(x, ndarray):
            out.append(x._a)
        elif isinstance(x, np.ndarray) and x.ndim == 0 and ufunc in _COMPARISONS:
            out.append(x.item())
        elif isinstance(x, (np.ndarray, list, tuple)):
            raise unsupported(x)
        else:
            out.append(x)
    return out


def _has_array(key: Any) -> bool:
    items = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (ndarray, np.ndarray, list)) for k in items)


def _index(key: Any) -> Any:
    # CuPy copies numpy (and list) index arrays to the device itself: accepted.
    return unwrap(key, host_ok=True)


def _on_host(convert):
    return lambda self: convert(self._a)


class ndarray(NDArrayOperatorsMixin):  # noqa: N801 - CuPy's name
    """A device array (simulated). Construct through ``cupy.asarray`` and friends."""

    __slots__ = ("_a",)
    __module__ = "cupy"

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        self._a = np.empty(shape, dtype=dtype, order=order)

    @classmethod
    def _of(cls, a: np.ndarray) -> ndarray:
        obj = object.__new__(cls)
        obj._a = a
        return obj

    # -- the boundary --------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(IMPLICIT)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out")
        args = operands(ufunc, inputs)
        kw = unwrap_kwargs(kwargs)
        result = getattr(ufunc, method)(*args, **kw)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        import cupy

        impl = getattr(cupy, func.__name__, None)
        if impl is None:
            return NotImplemented
        return impl(*args, **kwargs)

    def get(self, stream=None, order="C", out=None) -> np.ndarray:
        """A host copy (CuPy's explicit device-to-host transfer)."""
        return np.array(self._a, order=order)

    def set(self, arr: np.ndarray, stream=None) -> None:
        """Copy a host array into this one."""
        self._a[...] = arr

    # -- array protocol ------------------------------------------------------------------
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: ndarray._of(self._a.T))

    def __getattr__(self, name: str) -> Any:
        if name == "_a" or name.startswith("__"):
            raise AttributeError(name)
        if name not in NDARRAY or not hasattr(self._a, name):
            raise AttributeError(f"'cupy.ndarray' object has no attribute {name!r}")
        attr = getattr(self._a, name)
        if not callable(attr):
            return wrap(attr)
        if name in _HOST_METHODS:
            return attr

        def method(*args, **kwargs):
            return wrap(attr(*unwrap(args), **unwrap_kwargs(kwargs)))

        method.__name__ = name
        return method

    def __getitem__(self, key):
        return wrap(self._a[_index(key)])

    def __setitem__(self, key, value):
        if isinstance(value, np.ndarray) and value.ndim and not _has_array(key):
            # CuPy fills basic-index views with a scalar only; array indices copy values over
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
        self._a[_index(key)] = unwrap(value, host_ok=True)

    # Python conversions copy to the host, as CuPy's do (they synchronize with the device)
    __len__ = _on_host(len)
    __float__ = _on_host(float)
    __int__ = _on_host(int)
    __bool__ = _on_host(bool)
    __complex__ = _on_host(complex)
    __repr__ = _on_host(repr)
    __str__ = _on_host(str)

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (wrap(v) for v in self._a)

    def __copy__(self) -> ndarray:
        return ndarray._of(self._a.copy())

    def __deepcopy__(self, memo) -> ndarray:
        return ndarray._of(_copy.deepcopy(self._a, memo))

    def __reduce__(self):
        return (_rebuild, (np.array(self._a),))


def _rebuild(a: np.ndarray) -> ndarray:
    return ndarray._of(a)
