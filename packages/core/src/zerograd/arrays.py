"""Converting Python scalars, lists and library scalars to backend arrays (``as_array``)."""

from __future__ import annotations

from typing import Any

from . import backends as _backends
from .backends.registry import registry as _registry

_by_type = _registry.by_type

_KINDS = "biufc"  # the dtype kinds a Variable holds: bool, int, uint, float, complex


def _scalar_dtype(x: Any, dtype: Any, kind: str, backend: Any) -> Any:
    """Return the dtype a Python scalar takes next to an array of ``dtype``, of numpy ``kind``.

    Python numbers are weak (numpy 2's rule, NEP 50): they take the array's precision, so
    float32 stays float32 and a complex next to float16 or float32 is complex64. None means
    ``x``'s own dtype, or the backend's default for it.
    """
    if hasattr(x, "dtype"):  # a library scalar (np.float64 is a float) is a 0-d array
        return None
    if isinstance(x, (bool, int)):
        return dtype if kind in "iufcb" and not (kind == "b" and type(x) is not bool) else None
    if isinstance(x, float):
        return dtype if kind in "fc" else None
    if isinstance(x, complex):
        if kind == "f":  # float16 and float32 with complex64: complex64; float64: complex128
            return backend.xp.result_type(dtype, backend.resolve_dtype("complex64"))
        return dtype if kind == "c" else None
    return None


# Python scalars used as operands, converted once per (backend, dtype, type, value) and made
# read-only (Backend.read_only): zerograd never writes into an operand's array, and a user's
# forward that tries fails instead of changing every later use of the number. Zero is keyed
# by its repr, which keeps 0.0 and -0.0 apart (they are equal and hash alike); a NaN misses
# unless it is the same object, so its own bits are converted. Complex numbers are not
# cached: complex(1, 0.0) == complex(1, -0.0) and both are true.
_SCALARS = {int, float, bool}
_PLAIN = {int, float, bool, complex, list, tuple}  # what no backend owns: converted
_scalar_cache: dict[tuple, Any] = {}
_retired = [{}]  # the table as it was when last emptied (full): an array handed out just
# before then is still named by shared_scalar, whatever other threads convert meanwhile


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
    backend = _by_type.get(type(x))
    if backend is not None:  # an array: checked as the first one of its type was
        return _numeric(x, x, backend)
    if like is not None:
        backend = _by_type.get(type(like)) or _backends.backend_of(like)
        if backend.cache_scalars and type(x) in _SCALARS:
            key = (backend, like.dtype, type(x), x if x else repr(x))
            a = _scalar_cache.get(key)
            if a is None:
                if len(_scalar_cache) > 4096:
                    _retired[0] = _scalar_cache.copy()
                    _scalar_cache.clear()
                dtype = _scalar_dtype(x, like.dtype, backend.dtype_kind(like.dtype), backend)
                a = backend.read_only(_scalar_array(backend, x, dtype))
                _scalar_cache[key] = a
            return a
        if _backends.is_array_wrapper(x):  # a Variable: its array
            return as_array(x.data, array_module, like)
        owner = None if type(x) in _PLAIN else _registry.resolve_type(type(x))
        if owner is not None:  # an array of a type met for the first time: used as it is
            return _numeric(x, x, owner)  # (like's backend would convert it, or fail to)
        kind = backend.dtype_kind(like.dtype)
        dtype = _scalar_dtype(x, like.dtype, kind, backend)
        return _numeric(_scalar_array(backend, x, dtype), x, backend)
    if _backends.is_array_wrapper(x):
        return as_array(x.data, array_module, like)
    if array_module is not None:
        return array_module.asarray(x)
    backend = _registry.resolve_type(type(x)) or _registry.default()
    return _numeric(backend.asarray(x), x, backend)


def _scalar_array(backend: Any, x: Any, dtype: Any) -> Any:
    """Return ``backend.asarray(x, dtype=dtype)``, integers checked against the dtype.

    A Python int out of an integer dtype's range is refused with numpy 2's OverflowError on
    every numpy (numpy 1 wrapped it, with a warning) and every backend, before any
    conversion: no warning to silence (``warnings.catch_warnings`` swaps the filters of
    the whole process, every thread's).
    """
    if type(x) is int and dtype is not None and backend.dtype_kind(dtype) in "iu":
        info = backend.xp.iinfo(dtype)
        if not info.min <= x <= info.max:
            if not -(2**63) <= x < 2**63:  # beyond C long: numpy refuses in words of its own
                try:  # (and warns of nothing)
                    backend.asarray(x, dtype=dtype)
                except OverflowError:
                    raise
                except Exception:  # another library's refusal: the words below
                    pass
            name = str(dtype).rsplit(".", 1)[-1]  # torch.int8: int8, as numpy names it
            raise OverflowError(f"Python integer {x} out of bounds for {name}")
    return backend.asarray(x, dtype=dtype)


def wide_int(x: int, like: Any) -> Any:
    """Return the Python int ``x``, beyond the range of ``like``'s integer dtype, as an array.

    The array is ``like``'s backend's int64, or its float64 beyond int64's range: what
    numpy 2 divides integer data by (``int8_array / 300`` is float64, where ``+ 300``
    raises OverflowError). Called only after ``as_array(x, like=like)`` overflowed; None
    when ``like`` holds no integers (float data overflowed: ``10 ** 400`` is no float).
    """
    backend = _by_type.get(type(like)) or _backends.backend_of(like)
    if backend.dtype_kind(like.dtype) not in "iu":
        return None
    try:
        return _scalar_array(backend, x, backend.resolve_dtype("int64"))
    except OverflowError:
        return backend.asarray(float(x), dtype=backend.resolve_dtype("float64"))


def shared_scalar(a: Any) -> tuple[Any, ...]:
    """Return ``(number,)`` when ``a`` is the shared array made from that Python number.

    Errors name the number when a user's code tries to write into one (an empty tuple
    otherwise: ``a`` is not shared).
    """
    # (a copy: other threads add to the table; the retired one is never changed)
    for key, shared in (*_scalar_cache.copy().items(), *_retired[0].items()):
        if shared is a:
            value = key[3]
            if isinstance(value, str):  # a zero, keyed by its repr: "0", "False", "-0.0"
                value = False if value == "False" else key[2](value)
            return (value,)
    return ()


_last_numeric = [None]  # the dtype last found numeric: the usual case is one identity test


def _numeric(a: Any, x: Any, backend: Any) -> Any:
    """Return ``a`` (converted from ``x``) when its dtype is numeric; TypeError otherwise."""
    dtype = getattr(a, "dtype", None)
    if dtype is None or dtype is _last_numeric[0]:
        return a
    if backend.dtype_kind(dtype) in _KINDS:
        _last_numeric[0] = dtype
    else:
        text = repr(x)
        text = text if len(text) <= 60 else text[:57] + "..."
        raise TypeError(
            f"got {text} ({type(x).__name__}), which is not numeric data; zerograd computes "
            f"with bool, integer, float or complex values: give a Variable, an array, a "
            f"Python number or a (nested) list of numbers."
        )
    return a
