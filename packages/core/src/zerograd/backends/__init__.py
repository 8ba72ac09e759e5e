"""Array backends: discovery through pluggy, dispatch by array type, conversions.

zerograd's engine never imports an array library. Each library is a plugin (see
:mod:`zerograd.backends.hookspecs`) found through the ``zerograd.backends`` entry points.

>>> import numpy as np
>>> from zerograd.backends import get_array_module
>>> get_array_module(np.ones(2)) is np
True
"""

from __future__ import annotations

import warnings
from typing import Any

from ..checks import flag
from . import contract, hookspecs
from .base import API_VERSION, Backend
from .errors import (
    BackendError,
    BackendMismatchError,
    BackendPluginError,
    BackendPluginWarning,
    NoBackendError,
)
from .hookspecs import ENTRY_POINT_GROUP, hookimpl, hookspec
from .names import INSTALL_EXTRA
from .names import install_advice as _install_advice
from .registry import BackendInfo, no_backend_message, registry

__all__ = [
    "contract",
    "API_VERSION",
    "Backend",
    "BackendError",
    "BackendInfo",
    "BackendMismatchError",
    "BackendPluginError",
    "BackendPluginWarning",
    "ENTRY_POINT_GROUP",
    "HOLOMORPHIC_RULE",
    "ORDERS_VALUES",
    "NoBackendError",
    "as_array_of",
    "as_cupy",
    "as_numpy",
    "backend_of",
    "device_of",
    "get_array_module",
    "get_backend",
    "gpu_backend",
    "hookimpl",
    "hookspec",
    "is_array_wrapper",
    "list_backends",
    "refresh",
    "register",
    "refuse_complex",
    "register_array_wrapper",
    "scatter_add",
    "set_strict",
    "sum_dtype_of",
]

_by_type = registry.by_type
_wrapper_types: tuple[type, ...] = ()  # only register_array_wrapper changes it


def register_array_wrapper(cls: type) -> None:
    """Declare that instances of ``cls`` hold a backend array in ``.data``.

    The functions of this module then look through such objects to their array, so
    ``backend_of(v)``, ``get_array_module(v)`` and ``as_numpy(v)`` work on them. zerograd
    registers :class:`zerograd.Variable` this way: the backends layer never imports the
    engine above it. Registering a class twice changes nothing.

    Args:
        cls: A class whose instances have a ``data`` attribute holding an array.

    Raises:
        TypeError: ``cls`` is not a class.

    Examples:
        >>> import numpy as np
        >>> class Box:
        ...     def __init__(self, data):
        ...         self.data = data
        >>> register_array_wrapper(Box)
        >>> get_array_module(Box(np.ones(2))) is np
        True
    """
    global _wrapper_types
    if not isinstance(cls, type):
        raise TypeError(
            f"register_array_wrapper: expected a class whose instances hold an array in "
            f".data, got {type(cls).__qualname__} ({cls!r})"
        )
    if cls not in _wrapper_types:
        _wrapper_types = (*_wrapper_types, cls)


def is_array_wrapper(x: Any) -> bool:
    """Whether ``x`` is an instance of a class declared by :func:`register_array_wrapper`.

    Args:
        x: Anything.

    Returns:
        True for a Variable (and any other registered wrapper), whose ``.data`` is an array.
    """
    return isinstance(x, _wrapper_types)


def _data(x: Any) -> Any:
    return x.data if isinstance(x, _wrapper_types) else x


def backend_of(x: Any) -> Backend:
    """Return the backend owning array ``x`` (or a Variable's data).

    Args:
        x: An array of an installed backend, or a Variable holding one.

    Returns:
        The owning backend.

    Raises:
        NoBackendError: No backend is installed at all.
        TypeError: ``x`` is not an array of any installed backend.

    Examples:
        >>> import numpy as np
        >>> backend_of(np.ones(2)).name
        'numpy'
    """
    x = _data(x)
    backend = _by_type.get(type(x)) or registry.resolve_type(type(x))
    if backend is None:
        registry.ensure_loaded()
        if not registry.backends:
            raise NoBackendError(no_backend_message())
        raise TypeError(
            f"zerograd: {type(x).__module__}.{type(x).__qualname__} is not an array of any "
            f"installed backend ({', '.join(sorted(registry.backends))}). Convert it first, "
            f"e.g. with zerograd.as_array(...) or numpy.asarray(...)."
        )
    return backend


def get_backend(x: Any = None) -> Backend:
    """Return a backend by name (``'numpy'``), by one of its arrays, or the default.

    Args:
        x: A backend name, an array of an installed backend (or a Variable holding one),
            or None for the default backend.

    Returns:
        The backend.

    Raises:
        NoBackendError: No backend of that name is installed (the message says why).
        TypeError: ``x`` is neither a name, an array of an installed backend, nor None.

    Examples:
        >>> get_backend("numpy").device
        'cpu'
    """
    if x is None:
        return registry.default()
    if isinstance(x, str):
        return registry.get(x)
    try:
        return backend_of(x)
    except TypeError:
        raise TypeError(
            f"get_backend(x): x must be a backend name (str, e.g. 'numpy'), an array of an "
            f"installed backend (or a Variable holding one), or None for the default; got "
            f"{type(x).__qualname__} ({_short(x)}). Installed: "
            f"{', '.join(sorted(registry.backends))}."
        ) from None


_xp_by_type = registry.xp_by_type


def get_array_module(x: Any) -> Any:
    """Return the array module (``numpy``, ``cupy``, ...) for ``x``.

    Same as DeZero's ``dezero.cuda.get_array_module``.

    Args:
        x: An array, a Variable, or anything else (scalars get the default backend's).

    Returns:
        The array API namespace of ``x``'s backend. For a numpy array that is numpy itself
        on numpy 2, and on numpy 1.26, which lacks some of the standard's names,
        array-api-compat's numpy namespace (numpy's own names and the standard's).

    Examples:
        >>> import numpy as np
        >>> get_array_module(np.ones(2)).exp(np.zeros(2))
        array([1., 1.])
    """
    xp = _xp_by_type.get(type(x))
    if xp is not None:
        return xp
    x = _data(x)
    backend = registry.resolve_type(type(x))
    if backend is None:
        return registry.default().xp
    xp = _xp_by_type[type(x)] = backend.xp
    return xp


def device_of(x: Any) -> Any:
    """Return the device of array ``x``, for ``device=`` in creation calls.

    Args:
        x: An array.

    Returns:
        Its standard ``.device``, or None for arrays with none (numpy 1.26's), which their
        namespace reads as the default device.

    Examples:
        >>> import numpy as np
        >>> xp = get_array_module(np.ones(2))
        >>> xp.zeros(3, device=device_of(np.ones(2))).shape
        (3,)
    """
    return getattr(x, "device", None)


def sum_dtype_of(x: Any) -> Any:
    """Return the dtype that sums of ``x`` are added in where it is not ``x``'s own, or None.

    ``backend_of(x).sum_dtype(x.dtype)`` (:meth:`Backend.sum_dtype`): float32 for a float
    narrower than float32 (float16), None for every other dtype. A dtype of 4 bytes or more
    (float32, float64) is answered without asking the backend.

    Args:
        x: An array, or a Variable holding one.

    Returns:
        The backend's float32 dtype, or None.

    Examples:
        >>> import numpy as np
        >>> sum_dtype_of(np.ones(2, np.float16)), sum_dtype_of(np.ones(2, np.float32))
        (dtype('float32'), None)
    """
    x = _data(x)
    if getattr(x.dtype, "itemsize", 0) >= 4:
        return None
    return backend_of(x).sum_dtype(x.dtype)


_last_real: Any = None  # the dtype last found real: the usual case is one identity test

ORDERS_VALUES = "it compares values, and complex numbers have no order"
"""Why the functions that order values (max, min, clip, relu, pooling) refuse complex data."""

HOLOMORPHIC_RULE = (
    "zerograd differentiates complex data by the holomorphic convention (the derivative "
    "f'(z), as jax.grad(f, holomorphic=True))"
)
"""The rule complex gradients follow, as the errors that refuse complex data name it."""


def refuse_complex(op: str, x: Any, why: str) -> None:
    """Raise a TypeError when ``x`` holds complex data, which ``op`` refuses.

    For the functions that have no holomorphic derivative, or whose value means nothing on
    complex numbers (those that order values, the losses, the statistics): their error
    names the rule zerograd's complex gradients follow (:data:`HOLOMORPHIC_RULE`). Called
    before anything is computed or stored, so a refusal changes nothing.

    Args:
        op: The refusing function's name, for the message.
        x: An array, or a Variable holding one.
        why: What makes ``op`` meaningless on complex data (a sentence without its
            period, e.g. ``"it compares values, and complex numbers have no order"``).

    Raises:
        TypeError: ``x``'s dtype is complex.

    Examples:
        >>> import numpy as np
        >>> refuse_complex("relu", np.ones(2), "it compares values")  # real: nothing
    """
    global _last_real
    x = _data(x)
    dtype = x.dtype
    if dtype is _last_real:
        return
    if backend_of(x).dtype_kind(dtype) != "c":
        _last_real = dtype
        return
    raise TypeError(
        f"{op}: complex input ({dtype}) is refused: {why}. {HOLOMORPHIC_RULE}, which {op} "
        f"does not fit. Give real data: for example the real and imaginary parts as two real "
        f"arrays (x.data.real, x.data.imag), or a real function of them. Nothing was computed."
    )


def scatter_add(a: Any, indices: Any, values: Any) -> Any:
    """Return a copy of ``a`` with ``values`` added at ``indices``; ``a`` is left untouched.

    Repeated indices accumulate.

    Args:
        a: An array of an installed backend.
        indices: An index, as for ``a[indices]``.
        values: The values to add, broadcastable to ``a[indices]``.

    Returns:
        A new array of ``a``'s shape.

    Examples:
        >>> import numpy as np
        >>> scatter_add(np.zeros(3), np.array([0, 0, 2]), 1.0)
        array([2., 0., 1.])
    """
    return backend_of(a).scatter_add(a, indices, values)


def as_array_of(x: Any, backend: str | Backend) -> Any:
    """Move array ``x`` (any backend, or a scalar or list) to ``backend``'s array type.

    Args:
        x: An array, a Variable, or a Python number or (nested) list of numbers.
        backend: A backend name (``'numpy'``) or a :class:`Backend`.

    Returns:
        ``x`` itself when it already is that backend's, else a converted array.

    Raises:
        TypeError: ``backend`` is not a name or a Backend, or ``x`` is not numbers.
        NoBackendError: The backend is not installed or cannot be used here.
        BackendPluginError: The backend's ``is_available()`` raised.
    """
    if isinstance(backend, str):
        target = registry.get(backend)
    elif isinstance(backend, Backend):
        target = backend
    else:
        raise TypeError(
            f"as_array_of(x, backend): backend must be a backend name (str, e.g. 'numpy') or "
            f"a zerograd.backends.Backend, got {type(backend).__qualname__} ({_short(backend)})"
        )
    if not registry.is_available(target):
        raise NoBackendError(
            f"zerograd: backend {target.name!r} is installed but cannot be used here: "
            f"{target.unavailable_reason() or 'it reports itself unavailable'}"
        )
    x = _data(x)
    source = _by_type.get(type(x)) or registry.resolve_type(type(x))
    if source is target:
        return x
    if source is None:
        return _plain_to_array("as_array_of", x, target.asarray, target.dtype_kind)
    return target.from_numpy(source.to_numpy(x))


def as_numpy(x: Any) -> Any:
    """Return ``x`` as a ``numpy.ndarray`` (DeZero's ``dezero.cuda.as_numpy``), 0-d included.

    Args:
        x: An array of an installed backend, a Variable, or a Python number or (nested) list
            of numbers.

    Returns:
        A numpy array.

    Raises:
        TypeError: ``x`` is none of those.
        ModuleNotFoundError: numpy is not installed (the message says how to install it).

    Examples:
        >>> as_numpy([1, 2])
        array([1, 2])
    """
    x = _data(x)
    source = _by_type.get(type(x)) or registry.resolve_type(type(x))
    if source is None:
        try:
            import numpy  # as_numpy's whole point: imported on first need, never at start-up
        except ImportError:
            raise ModuleNotFoundError(
                "zerograd.backends.as_numpy makes numpy arrays, and numpy is not installed; "
                "the numpy backend brings it: install it " + _install_advice("numpy") + "."
            ) from None
        return _plain_to_array("as_numpy", x, numpy.asarray, lambda dt: dt.kind)
    out = source.to_numpy(x)
    return out if type(out) is _ndarray else _to_ndarray(out)


_ndarray: type | None = None  # numpy.ndarray, once as_numpy has imported numpy


def _to_ndarray(a: Any) -> Any:
    """``a`` as an ndarray: a numpy scalar (numpy.float64, ...) becomes a 0-d array."""
    global _ndarray
    import numpy

    _ndarray = numpy.ndarray
    return numpy.asarray(a)


def _plain_to_array(op: str, x: Any, asarray: Any, kind: Any) -> Any:
    """``asarray(x)`` for Python data; one TypeError for what is not numbers."""
    try:
        a = asarray(x)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"{op}: cannot make an array of {type(x).__qualname__} ({_short(x)}): "
            f"{str(e).rstrip('.')}. Give "
            f"an array, a Variable, a number or nested lists of numbers of equal lengths."
        ) from None
    if kind(a.dtype) == "O":
        raise TypeError(
            f"{op}: {type(x).__qualname__} ({_short(x)}) is not an array, a Variable, a "
            f"number or a list of numbers; convert it first"
        )
    return a


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def as_cupy(x: Any) -> Any:
    """Return ``x`` as a ``cupy.ndarray`` (DeZero's ``dezero.cuda.as_cupy``).

    Args:
        x: An array, a Variable, or a Python number or (nested) list of numbers.

    Returns:
        An array of the GPU backend.

    Raises:
        NoBackendError: No GPU backend (zerograd-cupy) is installed and usable.
    """
    return as_array_of(x, gpu_backend())


def gpu_backend() -> Backend:
    """Return the first installed GPU backend that can be used.

    Returns:
        The backend.

    Raises:
        NoBackendError: None is installed, or none can be used here (the reasons are named).
        BackendPluginError: A GPU plugin's ``is_available()`` raised.
    """
    registry.ensure_loaded()
    gpus = [b for b in registry.backends.values() if b.device == "gpu"]
    if not gpus:
        raise NoBackendError(
            "zerograd: no GPU backend is installed, so nothing can move to a GPU. Install one "
            "(it needs an NVIDIA GPU) " + _install_advice("cupy", INSTALL_EXTRA["cupy"]) + "."
        )
    problems: list[BackendPluginError] = []
    for backend in gpus:
        try:
            if registry.is_available(backend):
                break
        except BackendPluginError as exc:
            problems.append(exc)
    else:
        if problems:  # a plugin that cannot answer is what to fix first: named, with the fix
            raise BackendPluginError(" ".join(map(str, problems))) from problems[0].__cause__
        reasons = "; ".join(f"{b.name}: {b.unavailable_reason() or 'unavailable'}" for b in gpus)
        raise NoBackendError(f"zerograd: no GPU backend can be used on this machine ({reasons}).")
    for problem in problems:  # a broken plugin never hides a working one: said, then skipped
        warnings.warn(str(problem), BackendPluginWarning, stacklevel=2)
    return backend


def list_backends() -> list[BackendInfo]:
    """List the installed backends.

    Returns:
        One :class:`BackendInfo` per backend: name, plugin, distribution, version, device
        and availability.
    """
    return registry.info()


def register(plugin: Any, name: str | None = None) -> None:
    """Register a plugin module or a :class:`Backend` instance by hand (no entry point).

    Args:
        plugin: A :class:`Backend` instance, or a module/object with a ``zerograd_backend``
            function marked with :data:`hookimpl`.
        name: The plugin's name (default: the backend's name, or the module's).

    Raises:
        TypeError: ``plugin`` is neither, or ``name`` is not a non-empty str.
    """
    if name is not None and (not isinstance(name, str) or not name):
        raise TypeError(f"register: name must be a non-empty str or None, got {name!r}")
    if not isinstance(plugin, Backend) and not _has_hooks(plugin):
        hint = (
            f" To use an installed backend by name, call get_backend({plugin!r})."
            if isinstance(plugin, str)
            else ""
        )
        raise TypeError(
            f"register: expected a zerograd.backends.Backend instance or a plugin (a module "
            f"or object with a zerograd_backend function marked with "
            f"@zerograd.backends.hookimpl), got {type(plugin).__qualname__} "
            f"({_short(plugin)}).{hint}"
        )
    registry.ensure_loaded()
    with registry._lock:  # not while another thread loads or registers
        registry.register(plugin, name=name)


def _has_hooks(plugin: Any) -> bool:
    marker = f"{hookspecs.PROJECT}_impl"  # the attribute pluggy's hookimpl marker sets
    try:
        return any(hasattr(getattr(plugin, n, None), marker) for n in dir(plugin))
    except Exception:
        return False


def refresh() -> None:
    """Forget every loaded backend and load the plugins again (re-reads the environment)."""
    registry.reset()


def set_strict(strict: bool = True) -> None:
    """Make a failing plugin an error (:class:`BackendPluginError`) instead of a warning.

    Args:
        strict: True for errors, False for warnings.

    Raises:
        TypeError: ``strict`` is not True or False (numpy's bools count).
    """
    registry.strict = flag("set_strict", "strict", strict)


def __getattr__(name: str) -> Any:
    if name == "gpu_enable":  # DeZero's dezero.cuda.gpu_enable, computed on demand
        try:
            gpu_backend()
        except NoBackendError:
            return False
        except BackendPluginError as exc:  # to_gpu() would raise it: said, and no GPU
            warnings.warn(str(exc), BackendPluginWarning, stacklevel=2)
            return False
        return True
    raise AttributeError(f"module 'zerograd.backends' has no attribute {name!r}")
