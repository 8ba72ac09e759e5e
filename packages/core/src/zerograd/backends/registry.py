"""Discovery of backend plugins and the per-type dispatch cache.

Plugins come from the entry-point group ``zerograd.backends``; each is loaded in its
own ``try`` so one broken plugin never takes the others down. Environment switches
(read when the registry loads, see :func:`refresh`):

- ``ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD=1``: load no entry points (register by hand);
- ``ZEROGRAD_BLOCK_PLUGINS=a,b``: skip the plugins named ``a`` and ``b``;
- ``ZEROGRAD_STRICT_PLUGINS=1``: a failing plugin is an error, not a warning.
"""

from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import pluggy

from . import hookspecs
from .base import API_VERSION, Backend
from .errors import BackendPluginError, BackendPluginWarning, NoBackendError

_TRUE = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class BackendInfo:
    """One row of :func:`zerograd.backends.list_backends`."""

    name: str
    plugin: str
    distribution: str
    version: str
    device: str
    available: bool


class Registry:
    """The loaded backends and the cache that maps an array type to its backend."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.by_type: dict[type, Backend] = {}
        self.xp_by_type: dict[type, Any] = {}  # array type -> array module, filled lazily
        self._strict_call = False  # set_strict()
        self._strict_env = False  # ZEROGRAD_STRICT_PLUGINS, read at each load
        self.reset()

    @property
    def strict(self) -> bool:
        """Whether a failing plugin is an error: ``set_strict()`` or ZEROGRAD_STRICT_PLUGINS."""
        return self._strict_call or self._strict_env

    @strict.setter
    def strict(self, value: bool) -> None:
        self._strict_call = bool(value)

    def reset(self) -> None:
        """Forget every plugin; the next lookup loads them again (keeps ``set_strict``)."""
        with self._lock:
            self._loaded = False
            self.backends: dict[str, Backend] = {}
            self.sources: dict[str, tuple[str, str]] = {}  # name -> (plugin, distribution)
            self.by_type.clear()  # cleared in place: hot paths hold a reference to these dicts
            self.xp_by_type.clear()
            self.pm = pluggy.PluginManager(hookspecs.PROJECT)
            self.pm.add_hookspecs(hookspecs)

    # -- loading ------------------------------------------------------------------------
    def ensure_loaded(self) -> None:
        if not self._loaded:
            with self._lock:
                if not self._loaded:
                    try:
                        self._load()
                    except BaseException:
                        self.reset()  # nothing half loaded: the next call fails the same way
                        raise

    def _problem(self, message: str) -> None:
        if self.strict:
            raise BackendPluginError(message)
        warnings.warn(message, BackendPluginWarning, stacklevel=4)

    def _load(self) -> None:
        env = os.environ
        self._strict_env = env.get("ZEROGRAD_STRICT_PLUGINS", "").lower() in _TRUE
        blocked = _blocked()
        for name in blocked:
            self.pm.set_blocked(name)
        if not _autoload_off():
            for ep in metadata.entry_points(group=hookspecs.ENTRY_POINT_GROUP):
                if ep.name in blocked:
                    continue
                self._load_entry_point(ep)
        self._loaded = True

    def _load_entry_point(self, ep: metadata.EntryPoint) -> None:
        dist = ep.dist.name if ep.dist is not None else "unknown distribution"
        where = f"backend plugin {ep.name!r} ({ep.value}, from {dist})"
        if ep.name in self.sources or self.pm.has_plugin(ep.name):
            first = self.sources.get(ep.name, ("?", "?"))[1]
            self._problem(
                f"zerograd: {where} has the same name as the one from {first}; it was skipped. "
                f"Uninstall one of the two distributions (pip uninstall {dist})."
            )
            return
        try:
            plugin = ep.load()
        except Exception as exc:  # a plugin's import can raise anything
            self._problem(
                f"zerograd: {where} failed to import: {type(exc).__name__}: {exc}. It was "
                f"skipped and the other backends still work; reinstall or fix it, or block it "
                f"with ZEROGRAD_BLOCK_PLUGINS={ep.name}."
            )
            return
        self.register(plugin, name=ep.name, distribution=dist)

    def register(self, plugin: Any, name: str | None = None, distribution: str = "") -> None:
        """Register a plugin object (a module with ``zerograd_backend``) or a Backend."""
        if isinstance(plugin, Backend):
            backend = plugin
            self._add(backend, name or backend.name, distribution or "registered by hand")
            return
        where = f"backend plugin {name or plugin!r}"
        try:
            self.pm.register(plugin, name=name)
            self.pm.check_pending()
        except (ValueError, pluggy.PluginValidationError) as exc:
            if name is not None and self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            self._problem(
                f"zerograd: {where} does not fit this zerograd's hook specification (backend "
                f"API version {API_VERSION}): {exc}. It was skipped; install a version of the "
                f"plugin written for this zerograd."
            )
            return
        impls = [i for i in self.pm.hook.zerograd_backend.get_hookimpls() if i.plugin is plugin]
        for impl in impls:
            try:
                backend = impl.function()
            except Exception as exc:
                self._problem(
                    f"zerograd: {where} raised in zerograd_backend(): {type(exc).__name__}: "
                    f"{exc}. It was skipped; the other backends still work."
                )
                continue
            plugin_name = name or getattr(backend, "name", "?")
            self._add(backend, plugin_name, distribution or "registered by hand")

    def _add(self, backend: Any, plugin: str, distribution: str) -> None:
        if not isinstance(backend, Backend):
            self._problem(
                f"zerograd: backend plugin {plugin!r} returned {type(backend).__name__}, not a "
                f"zerograd.backends.Backend; it was skipped."
            )
            return
        if backend.api_version != API_VERSION:
            self._problem(
                f"zerograd: backend plugin {plugin!r} was written for backend API version "
                f"{backend.api_version}, but this zerograd speaks version {API_VERSION}; it was "
                f"skipped. Install a version of {distribution or plugin!r} that matches."
            )
            return
        if backend.name in self.backends:
            other = self.sources[backend.name]
            self._problem(
                f"zerograd: backend {backend.name!r} from plugin {plugin!r} ({distribution}) is "
                f"already provided by plugin {other[0]!r} ({other[1]}); the second was skipped. "
                f"Uninstall one, or block it with ZEROGRAD_BLOCK_PLUGINS={plugin}."
            )
            return
        self.backends[backend.name] = backend
        self.sources[backend.name] = (plugin, distribution)
        self.by_type.clear()
        self.xp_by_type.clear()

    # -- lookup -------------------------------------------------------------------------
    def resolve_type(self, array_type: type) -> Backend | None:
        """Find the backend of ``array_type`` (cached); ``None`` when no backend owns it."""
        backend = self.by_type.get(array_type)
        if backend is not None:
            return backend
        self.ensure_loaded()
        owners = [b for b in self.backends.values() if _owns(b, array_type)]
        if len(owners) > 1:
            names = ", ".join(f"{b.name!r} (plugin {self.sources[b.name][0]!r})" for b in owners)
            raise BackendPluginError(
                f"zerograd: arrays of type {_qualname(array_type)} are claimed by several "
                f"backends: {names}. Block all but one with ZEROGRAD_BLOCK_PLUGINS=<plugin>."
            )
        if not owners:
            return None
        self.by_type[array_type] = owners[0]
        return owners[0]

    def get(self, name: str) -> Backend:
        self.ensure_loaded()
        try:
            return self.backends[name]
        except KeyError:
            raise NoBackendError(
                f"zerograd: no backend named {name!r} is installed; installed: "
                f"{sorted(self.backends) or 'none'}. {_why_missing(name)}"
            ) from None

    def default(self) -> Backend:
        """The backend for data given as Python scalars or lists: numpy if installed."""
        self.ensure_loaded()
        if "numpy" in self.backends:
            return self.backends["numpy"]
        usable = [b for b in self.backends.values() if b.is_available()]
        cpu = [b for b in usable if b.device == "cpu"]
        if cpu or usable:
            return (cpu or usable)[0]
        raise NoBackendError(no_backend_message())

    def info(self) -> list[BackendInfo]:
        self.ensure_loaded()
        rows = []
        for name, backend in sorted(self.backends.items()):
            plugin, dist = self.sources[name]
            try:
                available = bool(backend.is_available())
                version = backend.version()  # installed-but-unusable shows its version too
            except Exception:
                available, version = False, "-"
            rows.append(BackendInfo(name, plugin, dist, version, backend.device, available))
        return rows


def _owns(backend: Backend, array_type: type) -> bool:
    try:
        return bool(backend.owns(array_type))
    except Exception:
        return False


def _qualname(t: type) -> str:
    return f"{t.__module__}.{t.__qualname__}"


def _blocked() -> set[str]:
    names = os.environ.get("ZEROGRAD_BLOCK_PLUGINS", "").split(",")
    return {n.strip() for n in names if n.strip()}


def _autoload_off() -> bool:
    return os.environ.get("ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD", "").lower() in _TRUE


_AUTOLOAD_OFF = (
    "Plugin autoloading is switched off (ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD=1): register "
    "backends by hand with zerograd.backends.register(...), or unset the variable."
)


def _why_missing(name: str) -> str:
    if name in _blocked():
        return (
            f"It is blocked by ZEROGRAD_BLOCK_PLUGINS="
            f"{os.environ['ZEROGRAD_BLOCK_PLUGINS']}; remove {name!r} from that list."
        )
    if _autoload_off():
        return _AUTOLOAD_OFF
    return f"Install it (pip install zerograd-{name} for zerograd's own backends)."


def no_backend_message() -> str:
    if _autoload_off():
        return (
            "zerograd: no array backend is loaded. " + _AUTOLOAD_OFF + " If none is installed: "
            "pip install zerograd-numpy   (or pip install 'zerograd[numpy]')."
        )
    return (
        "zerograd: no array backend is installed, so there is nothing to compute with. "
        "Run: pip install zerograd-numpy   (or pip install 'zerograd[numpy]')."
    )


registry = Registry()
