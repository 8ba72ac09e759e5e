"""Which kernels serve a backend: zerograd-nn's kernel plugins, loaded once, asked once.

Plugins are found through the entry-point group :data:`~.hookspecs.ENTRY_POINT_GROUP`, each
loaded in its own ``try``; core's switches apply to them as to backend plugins
(``ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD``, ``ZEROGRAD_BLOCK_PLUGINS``, strict mode). The answer for
a backend is kept until :func:`register` or :func:`refresh`, so a kernel call costs one
dictionary lookup.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from importlib import metadata
from typing import Any

import pluggy

from zerograd.backends import Backend, BackendPluginError, BackendPluginWarning, backend_of
from zerograd.backends.names import (
    BY_HAND,
    autoload_off,
    blocked_names,
    describe_error,
    dist_of,
    normalize_dist,
)
from zerograd.backends.registry import call_alone
from zerograd.backends.registry import registry as backend_registry

from . import hookspecs
from .generic import Kernels


class KernelRegistry:
    """zerograd-nn's kernel plugins and the kernels chosen for each backend so far."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.reset()

    def reset(self) -> None:
        """Forget every plugin and every choice; the next lookup loads the plugins again."""
        with self._lock:
            self._loaded = False
            self.pm = pluggy.PluginManager(hookspecs.PROJECT)
            self.pm.add_hookspecs(hookspecs)
            self.sources: dict[str, str] = {}  # plugin name -> distribution
            self.chosen: weakref.WeakKeyDictionary[Backend, Kernels] = weakref.WeakKeyDictionary()

    def _problem(self, message: str) -> None:
        if backend_registry.strict:
            raise BackendPluginError(message)
        warnings.warn(message, BackendPluginWarning, stacklevel=5)

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if autoload_off():
            return
        blocked = blocked_names()
        blocked_dists = {normalize_dist(n) for n in blocked}
        for ep in metadata.entry_points(group=hookspecs.ENTRY_POINT_GROUP):
            dist = dist_of(ep)
            if ep.name in blocked or normalize_dist(dist) in blocked_dists:
                continue
            try:
                plugin = ep.load()
            except Exception as exc:  # noqa: BLE001 - a broken plugin never stops nn
                self._problem(
                    f"zerograd-nn: kernel plugin {ep.name!r} ({ep.value}, from {dist}) failed to "
                    f"import: {describe_error(exc)}. It was skipped: its backend uses the generic "
                    f"kernels."
                )
                continue
            self._register(plugin, ep.name, dist)

    def _register(self, plugin: Any, name: str, dist: str) -> None:
        try:  # pluggy checks every hook function before it registers any
            self.pm.register(plugin, name=name)
        except (ValueError, pluggy.PluginValidationError) as exc:
            self._problem(
                f"zerograd-nn: kernel plugin {name!r} (from {dist}) does not fit zerograd-nn's "
                f"hook specification: {exc}. It was skipped."
            )
            return
        self.sources[name] = dist

    def register(self, plugin: Any, name: str | None = None) -> None:
        """Register a kernel plugin by hand (a module or object with hook functions).

        Args:
            plugin: An object whose ``zerograd_nn_kernels`` is marked with ``hookimpl``.
            name: The plugin's name; pluggy's default when None.
        """
        with self._lock:
            self._ensure_loaded()
            self._register(plugin, name or self.pm.get_canonical_name(plugin), BY_HAND)
            self.chosen = weakref.WeakKeyDictionary()

    def kernels_for(self, backend: Backend) -> Kernels:
        """The kernels for ``backend``: the first plugin's answer, else the generic ones."""
        found = self.chosen.get(backend)
        if found is None:
            with self._lock:
                self._ensure_loaded()
                found = self._ask(backend) or Kernels(backend)
                self.chosen[backend] = found
        return found

    def _ask(self, backend: Backend) -> Kernels | None:
        plugins = [p for _, p in self.pm.list_name_plugin()]
        for plugin in reversed(plugins):  # pluggy's order: the last registered first
            name = self.pm.get_name(plugin)
            where = f"kernel plugin {name!r} (from {self.sources.get(name, BY_HAND)})"
            results = call_alone(self.pm, plugin, "zerograd_nn_kernels", backend=backend)
            if isinstance(results, BaseException):
                self._problem(
                    f"zerograd-nn: {where} raised in zerograd_nn_kernels() for backend "
                    f"{backend.name!r}: {describe_error(results)}. It was skipped."
                )
                continue
            for result in results:
                if isinstance(result, Kernels) and result.backend is backend:
                    return result
                self._problem(
                    f"zerograd-nn: {where} returned {result!r} for backend {backend.name!r}, not "
                    f"a zerograd_nn.kernels.Kernels bound to it. It was skipped."
                )
        return None


registry = KernelRegistry()
"""The one kernel registry of this process."""


def kernels_of(x: Any) -> Kernels:
    """Return the kernels for the backend of ``x`` (an array or a Variable).

    Args:
        x: An array of a backend, or a Variable holding one.

    Returns:
        The backend's :class:`Kernels`: a plugin's, else the generic ones.

    Examples:
        >>> import numpy as np
        >>> kernels_of(np.zeros(2)).backend.name
        'numpy'
    """
    return registry.kernels_for(backend_of(x))


def kernels_for(backend: Backend) -> Kernels:
    """Return the kernels for ``backend`` (what :func:`kernels_of` returns for its arrays).

    Args:
        backend: A backend of :mod:`zerograd.backends`.

    Returns:
        Its :class:`Kernels`.
    """
    return registry.kernels_for(backend)


def register(plugin: Any, name: str | None = None) -> None:
    """Register a kernel plugin that no entry point names (tests, notebooks).

    The kernels chosen so far are forgotten, so the next lookup asks the new plugin too.

    Args:
        plugin: A module or object whose ``zerograd_nn_kernels`` is marked with
            :data:`~.hookspecs.hookimpl`.
        name: The plugin's name; pluggy's default when None.
    """
    registry.register(plugin, name)


def refresh() -> None:
    """Forget every kernel plugin and choice; the next lookup loads the entry points again."""
    registry.reset()
