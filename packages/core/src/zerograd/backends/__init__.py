"""Array backends: discovery through pluggy, dispatch by array type, conversions.

zerograd's engine never imports an array library. Each library is a plugin (see
:mod:`zerograd.backends.hookspecs`) found through the ``zerograd.backends`` entry points.

>>> import numpy as np
>>> from zerograd.backends import get_array_module
>>> get_array_module(np.ones(2)) is np
True
"""

from __future__ import annotations

from typing import Any

from .base import API_VERSION, Backend
from .errors import (
    BackendError,
    BackendMismatchError,
    BackendPluginError,
    BackendPluginWarning,
    NoBackendError,
)
from .hookspecs import ENTRY_POINT_GROUP, hookimpl, hookspec
from .registry import BackendInfo, no_backend_message, registry

__all__ = [
    "API_VERSION",
    "Backend",
    "BackendError",
    "BackendInfo",
    "BackendMismatchError",
    "BackendPluginError",
    "BackendPluginWarning",
    "ENTRY_POINT_GROUP",
    "NoBackendError",
    "as_array_of",
    "as_cupy",
    "as_numpy",
    "backend_of",
    "get_array_module",
    "get_backend",
    "gpu_backend",
    "hookimpl",
    "hookspec",
    "list_backends",
    "refresh",
    "register",
    "scatter_add",
    "set_strict",
]

_by_type = registry.by_type
_wrapper_types: tuple[type, ...] = ()  # set to (Variable,) by zerograd.variable


def _data(x: Any) -> Any:
    return x.data if isinstance(x, _wrapper_types) else x


def backend_of(x: Any) -> Backend:
    """The backend owning array ``x`` (or a Variable's data); TypeError for other types."""
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
    """A backend by name (``'numpy'``), by one of its arrays, or the default when ``None``."""
    if x is None:
        return registry.default()
    if isinstance(x, str):
        return registry.get(x)
    return backend_of(x)


_xp_by_type = registry.xp_by_type


def get_array_module(x: Any) -> Any:
    """The array module (``numpy``, ``cupy``, ...) for ``x``; the default one for scalars.

    Same as DeZero's ``dezero.cuda.get_array_module``.
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


def scatter_add(a: Any, indices: Any, values: Any) -> Any:
    """Return ``a`` with ``values`` added at ``indices`` (repeated indices accumulate).

    A new array is returned; ``a`` is left untouched.
    """
    return backend_of(a).scatter_add(a, indices, values)


def as_array_of(x: Any, backend: str | Backend) -> Any:
    """Move array ``x`` (any backend, or a scalar/list) to ``backend``'s array type."""
    target = registry.get(backend) if isinstance(backend, str) else backend
    if not target.is_available():
        raise NoBackendError(
            f"zerograd: backend {target.name!r} is installed but cannot be used here: "
            f"{target.unavailable_reason() or 'it reports itself unavailable'}"
        )
    x = _data(x)
    source = _by_type.get(type(x)) or registry.resolve_type(type(x))
    if source is target:
        return x
    if source is None:
        return target.asarray(x)
    return target.from_numpy(source.to_numpy(x))


def as_numpy(x: Any) -> Any:
    """``x`` as a ``numpy.ndarray`` (DeZero's ``dezero.cuda.as_numpy``)."""
    x = _data(x)
    source = _by_type.get(type(x)) or registry.resolve_type(type(x))
    if source is None:
        import numpy  # only reached for scalars and lists

        return numpy.asarray(x)
    return source.to_numpy(x)


def as_cupy(x: Any) -> Any:
    """``x`` as a ``cupy.ndarray`` (DeZero's ``dezero.cuda.as_cupy``); needs zerograd-cupy."""
    return as_array_of(x, gpu_backend())


def gpu_backend() -> Backend:
    """The first installed backend on a GPU that can be used; clear error otherwise."""
    registry.ensure_loaded()
    gpus = [b for b in registry.backends.values() if b.device == "gpu"]
    for backend in gpus:
        if backend.is_available():
            return backend
    if not gpus:
        raise NoBackendError(
            "zerograd: no GPU backend is installed, so nothing can move to a GPU. "
            "Install one: pip install 'zerograd-cupy[cuda12]' (needs an NVIDIA GPU)."
        )
    reasons = "; ".join(f"{b.name}: {b.unavailable_reason() or 'unavailable'}" for b in gpus)
    raise NoBackendError(f"zerograd: no GPU backend can be used on this machine ({reasons}).")


def list_backends() -> list[BackendInfo]:
    """The installed backends: name, plugin, distribution, version, device, availability."""
    return registry.info()


def register(plugin: Any, name: str | None = None) -> None:
    """Register a plugin module or a :class:`Backend` instance by hand (no entry point)."""
    registry.ensure_loaded()
    registry.register(plugin, name=name)


def refresh() -> None:
    """Forget every loaded backend and load the plugins again (re-reads the environment)."""
    registry.reset()


def set_strict(strict: bool = True) -> None:
    """Make a failing plugin an error (:class:`BackendPluginError`) instead of a warning."""
    registry.strict = strict


def __getattr__(name: str) -> Any:
    if name == "gpu_enable":  # DeZero's dezero.cuda.gpu_enable, computed on demand
        try:
            gpu_backend()
        except NoBackendError:
            return False
        return True
    raise AttributeError(f"module 'zerograd.backends' has no attribute {name!r}")
