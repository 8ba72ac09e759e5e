"""Converting Python scalars, lists and library scalars to backend arrays (``as_array``)."""

from __future__ import annotations

from typing import Any

from . import backends as _backends
from .backends.registry import registry as _registry

_by_type = _registry.by_type

_KINDS = "biufc"  # the dtype kinds a Variable holds: bool, int, uint, float, complex


def _scalar_dtype(x: Any, dtype: Any, kind: str) -> Any:
    """Return the dtype a Python scalar takes next to an array of ``dtype``, of numpy ``kind``.

    This keeps float32 float32.
    """
    if isinstance(x, (bool, int)):
        return dtype if kind in "iufcb" and not (kind == "b" and type(x) is not bool) else None
    if isinstance(x, float):
        return dtype if kind in "fc" else None
    if isinstance(x, complex):
        return dtype if kind == "c" else None
    return None


_SCALARS = {int, float, bool, complex}
# Python scalars used as operands, converted once per (backend, dtype, value). Safe because
# zerograd never writes into an operand's array.
_scalar_cache: dict[tuple, Any] = {}


def as_array(x: Any, array_module: Any = None, like: Any = None) -> Any:
    """Return ``x`` as an array: arrays pass through, scalars and lists are converted.

    Args:
        x: An array, a Variable (its data is returned), a Python number or a (nested)
            list of numbers.
        array_module: The module to convert with (DeZero's signature), or None.
        like: An array whose backend and dtype a Python scalar should follow, or None.

    Returns:
        An array of an installed backend.

    Raises:
        TypeError: ``x`` converts to non-numeric data (None, strings, objects).

    Examples:
        >>> import numpy as np
        >>> as_array(2.0, like=np.ones(1, np.float32)).dtype
        dtype('float32')
    """
    if type(x) in _by_type:
        return x
    if like is not None:
        backend = _by_type.get(type(like)) or _backends.backend_of(like)
        if backend.cache_scalars and type(x) in _SCALARS:
            key = (backend, like.dtype, type(x), x)
            a = _scalar_cache.get(key)
            if a is None:
                if len(_scalar_cache) > 4096:
                    _scalar_cache.clear()
                dtype = _scalar_dtype(x, like.dtype, backend.dtype_kind(like.dtype))
                a = _scalar_cache[key] = backend.asarray(x, dtype=dtype)
            return a
        if isinstance(x, _backends._wrapper_types):  # a Variable: its array
            return as_array(x.data, array_module, like)
        kind = backend.dtype_kind(like.dtype)
        return _numeric(backend.asarray(x, dtype=_scalar_dtype(x, like.dtype, kind)), x, backend)
    if isinstance(x, _backends._wrapper_types):
        return as_array(x.data, array_module, like)
    if array_module is not None:
        return array_module.asarray(x)
    backend = _registry.resolve_type(type(x)) or _registry.default()
    return _numeric(backend.asarray(x), x, backend)


def _numeric(a: Any, x: Any, backend: Any) -> Any:
    """Return ``a`` (converted from ``x``) when its dtype is numeric; TypeError otherwise."""
    dtype = getattr(a, "dtype", None)
    if dtype is not None and backend.dtype_kind(dtype) not in _KINDS:
        text = repr(x)
        text = text if len(text) <= 60 else text[:57] + "..."
        raise TypeError(
            f"got {text} ({type(x).__name__}), which is not numeric data; zerograd computes "
            f"with bool, integer, float or complex values: give a Variable, an array, a "
            f"Python number or a (nested) list of numbers."
        )
    return a
