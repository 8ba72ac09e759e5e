"""A CPU simulation of CuPy, for zerograd's test sessions only. This is not CuPy.

It runs zerograd's cupy backend, and everything above it, without a GPU: device arrays
are numpy arrays behind CuPy's host/device boundary (see ``_array``), the numpy functions
CuPy also has are offered under their names (see ``_names``), and ``ElementwiseKernel``
compiles its CUDA C body as C++ for the CPU (see ``_kernel``). nox puts this folder on
``PYTHONPATH`` in the ``tests(...-cupysim-...)`` sessions; it is never installed.

What a pass here shows: the code keeps host and device arrays apart, moves data where it
must, and gets the same numbers as on numpy, through the same code paths the GPU takes.
What it cannot show: anything CUDA does (see packages/backend-cupy/GPU_RUN.md).
"""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as _np

from . import _names, cuda
from ._array import IMPLICIT, ndarray, operands, unwrap, unwrap_kwargs, wrap
from ._kernel import ElementwiseKernel

__version__ = "0.0.0+cpu.simulator"
SIMULATOR = True

__all__ = ["ElementwiseKernel", "cuda", "ndarray", "random", "linalg"]


def _device_function(fn):
    """``fn`` on device arrays: numpy operands refused, results kept on the device."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        return wrap(fn(*unwrap(args), **unwrap_kwargs(kwargs)))

    return call


class _Ufunc:
    """A numpy ufunc that takes and gives device arrays (``cupy.add.at`` included)."""

    def __init__(self, uf: _np.ufunc) -> None:
        self._uf = uf
        self.__name__ = uf.__name__

    def __call__(self, *args, **kwargs):
        out = kwargs.get("out")
        result = self._uf(*operands(self._uf, args), **unwrap_kwargs(kwargs))
        if out is not None:
            return out[0] if isinstance(out, tuple) and len(out) == 1 else out
        return wrap(result)

    def at(self, a, indices, b=None) -> None:
        """In-place ``a[indices] op= b``, repeated indices applied each time (``add.at``)."""
        if self._uf is not _np.add:
            raise NotImplementedError(f"`{self.__name__}.at` is not supported by the simulator")
        if not isinstance(a, ndarray):
            raise TypeError(f"Unsupported type {type(a)}")
        if a.dtype.name not in _ADD_AT_DTYPES:
            raise TypeError(f"cupy.add.at only supports {', '.join(sorted(_ADD_AT_DTYPES))}")
        self._uf.at(a._a, unwrap(indices, host_ok=True), unwrap(b, host_ok=True))

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._uf, name)
        return _device_function(attr) if callable(attr) else attr


# CuPy 14's add.at dtypes (13.x lacks int64)
_ADD_AT_DTYPES = frozenset({"int32", "int64", "uint32", "uint64", "float16", "float32", "float64"})


class _Namespace(types.ModuleType):
    """A numpy submodule (``random``, ``linalg``) whose functions give device arrays; only
    the names CuPy has."""

    def __init__(self, name: str, source: types.ModuleType, names: frozenset) -> None:
        super().__init__(name)
        self._source = source
        self._names = names

    def __getattr__(self, name: str) -> Any:
        if name not in self._names or not hasattr(self._source, name):
            raise _missing(self.__name__, name)
        return _lift(getattr(self._source, name))


def _missing(module: str, name: str) -> AttributeError:
    return AttributeError(
        f"module {module!r} has no attribute {name!r} (the CPU simulator offers only the "
        f"names CuPy has)"
    )


def _lift(attr: Any) -> Any:
    if isinstance(attr, _np.ufunc):
        return _Ufunc(attr)
    if isinstance(attr, type) or not callable(attr):
        return attr  # dtypes, constants (pi, inf, newaxis)
    return _device_function(attr)


random = _Namespace("cupy.random", _np.random, _names.RANDOM)
linalg = _Namespace("cupy.linalg", _np.linalg, _names.LINALG)


# -- host <-> device (the only functions that accept numpy arrays) -------------------------
def _host_or_device(obj):
    """``obj``'s data for numpy; a sequence mixing device arrays with anything else is refused,
    as CuPy refuses it (it would need an implicit device-to-host copy)."""
    if isinstance(obj, (list, tuple)) and any(isinstance(o, ndarray) for o in obj):
        if not all(isinstance(o, ndarray) for o in obj):
            raise TypeError(IMPLICIT)
    return unwrap(obj, host_ok=True)


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0):
    """A new device array from host or device data."""
    data = _host_or_device(obj)
    return ndarray._of(_np.array(data, dtype=dtype, copy=True, order=order, ndmin=ndmin))


def asarray(a, dtype=None, order=None):
    """``a`` on the device: device arrays as they are (cast if asked), host data copied."""
    if isinstance(a, ndarray):
        return a if dtype is None or a.dtype == _np.dtype(dtype) else a.astype(dtype)
    return ndarray._of(_np.array(_host_or_device(a), dtype=dtype, order=order))


asanyarray = asarray


def asnumpy(a, stream=None, order="C", out=None):
    """A host copy of a device array (other inputs through ``numpy.asarray``)."""
    if isinstance(a, ndarray):
        return a.get(order=order)
    return _np.asarray(a, order=order)


def get_array_module(*args):
    """This module when any argument is a device array, else numpy."""
    import sys

    if any(isinstance(a, ndarray) for a in args):
        return sys.modules[__name__]
    return _np


def __getattr__(name: str) -> Any:
    if name not in _names.MODULE or not hasattr(_np, name):
        raise _missing("cupy", name)
    attr = getattr(_np, name)
    lifted = _lift(attr)
    globals()[name] = lifted  # looked up once
    return lifted
