"""Discovery of backend plugins and the per-type dispatch cache.

Plugins come from the entry-point group ``zerograd.backends``. Each is imported in its own
``try`` and its ``zerograd_backend`` hook is called through pluggy on its own, so one broken
plugin (one that raises, or even calls ``sys.exit()``) is reported and skipped while the
others load. Environment switches (read when the registry loads, see :func:`refresh`):

- ``ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD=1``: load no entry points (register by hand);
- ``ZEROGRAD_BLOCK_PLUGINS=a,b``: skip the plugins whose entry-point name or distribution
  name is ``a`` or ``b``;
- ``ZEROGRAD_STRICT_PLUGINS=1``: a failing plugin is an error, not a warning.

The names of zerograd's own backends are reserved for their distributions (:data:`IN_TREE`):
a third-party plugin that claims one is reported by its distribution and skipped.
"""

from __future__ import annotations

import difflib
import inspect
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
from .names import (
    BY_HAND,
    IN_TREE,
    TRUE_WORDS,
    UNKNOWN_DIST,
    autoload_off,
    blocked_names,
    describe_error,
    describe_object,
    dist_of,
    intruder_message,
    is_in_tree,
    normalize_dist,
    origin,
    uninstall_advice,
    why_missing,
)
from .names import no_backend_message as _nothing_installed_message


def call_alone(pm: pluggy.PluginManager, plugin: Any, hook: str, **kwargs: Any) -> Any:
    """Call the hook ``hook`` of ``plugin`` alone, through pluggy; a failure is returned.

    pluggy stops a hook call at the first exception, so a call over all plugins would let
    one broken plugin hide every other. A caller limited to ``plugin`` (pluggy's
    ``subset_hook_caller``) keeps pluggy's machinery (monitoring, tracing, the plugin's own
    wrappers) and isolates failures.

    Args:
        pm: the plugin manager ``plugin`` is registered with.
        plugin: the plugin to call.
        hook: the hook's name.
        **kwargs: the hook's arguments.

    Returns:
        The list of results (pluggy drops None), or the exception the plugin raised:
        anything but KeyboardInterrupt, SystemExit included, since a plugin never ends the
        program.
    """
    try:
        others = [p for _, p in pm.list_name_plugin() if p is not plugin]
        return pm.subset_hook_caller(hook, remove_plugins=others)(**kwargs)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - see Returns
        return exc


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
        # every per-type cache, emptied in place when backends change (hot paths hold them)
        self.type_caches: list[dict] = [self.by_type, self.xp_by_type]
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
            self.plugins: dict[str, str] = {}  # plugin (entry-point) name -> distribution
            self.blocked: list[tuple[str, str]] = []  # (plugin, distribution) left out by name
            # plugin or backend name -> why it is not loaded (the problem reported)
            self.failed: dict[str, str] = {}
            # plugin name -> distribution, for plugins whose hook answered None
            self.empty: dict[str, str] = {}
            for cache in self.type_caches:
                cache.clear()
            self.pm = pluggy.PluginManager(hookspecs.PROJECT)
            self.pm.add_hookspecs(hookspecs)

    # -- loading ------------------------------------------------------------------------
    def ensure_loaded(self) -> None:
        """Load the plugins unless already loaded (thread-safe; all or nothing in strict mode)."""
        if not self._loaded:
            with self._lock:
                if not self._loaded:
                    try:
                        self._load()
                    except BaseException:
                        self.reset()  # nothing half loaded: the next call fails the same way
                        raise

    def _problem(self, message: str, *names: Any) -> None:
        """Report ``message`` (a warning, an error in strict mode), remembered for ``names``.

        :meth:`get` repeats it to whoever asks for one of ``names`` (plugin and backend
        names) by name, so a plugin that failed is never called "not installed".
        """
        for name in names:
            if isinstance(name, str) and name:
                self.failed.setdefault(name, message)
        if self.strict:
            raise BackendPluginError(message)
        warnings.warn(message, BackendPluginWarning, stacklevel=4)

    def _load(self) -> None:
        env = os.environ
        self._strict_env = env.get("ZEROGRAD_STRICT_PLUGINS", "").lower() in TRUE_WORDS
        blocked = blocked_names()
        for name in blocked:
            self.pm.set_blocked(name)
        if not autoload_off():
            found = metadata.entry_points(group=hookspecs.ENTRY_POINT_GROUP)
            # zerograd's own plugins first, so an intruder can never take their names
            blocked_dists = {normalize_dist(n) for n in blocked}
            for ep in sorted(found, key=lambda ep: not is_in_tree(ep.name, dist_of(ep))):
                if ep.name in blocked or normalize_dist(dist_of(ep)) in blocked_dists:
                    self.blocked.append((ep.name, dist_of(ep)))
                    continue
                self._load_entry_point(ep)
        self._loaded = True

    def _load_entry_point(self, ep: metadata.EntryPoint) -> None:
        dist = dist_of(ep)
        where = f"backend plugin {ep.name!r} ({ep.value}, from {dist})"
        if ep.name in IN_TREE and not is_in_tree(ep.name, dist):
            self._problem(intruder_message(where, ep.name, dist))
            return  # not even imported
        if ep.name in self.plugins or ep.name in self.sources or self.pm.has_plugin(ep.name):
            first = self.plugins.get(ep.name) or self.sources.get(ep.name, ("", UNKNOWN_DIST))[1]
            self._problem(
                f"zerograd: {where} has the same name as the one from {first}; it was skipped. "
                f"Uninstall one of the two distributions: {uninstall_advice(dist)}."
            )
            return
        try:
            plugin = ep.load()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # an import can raise anything, SystemExit included
            self._problem(
                f"zerograd: {where} failed to import: {describe_error(exc)}. It was skipped and "
                f"the other backends still work. Reinstall or fix it, or remove it: "
                f"{uninstall_advice(dist, ep.name)}.",
                ep.name,
            )
            return
        self.register(plugin, name=ep.name, distribution=dist)

    def register(self, plugin: Any, name: str | None = None, distribution: str = "") -> None:
        """Register a plugin object (a module with ``zerograd_backend``) or a Backend.

        A plugin that fails is reported (a warning, or an error in strict mode) and skipped.

        Args:
            plugin: A :class:`Backend` instance, or an object with a ``zerograd_backend`` hook.
            name: The plugin's name; by default the backend's or the object's.
            distribution: The distribution that provides it (``""``: registered by hand).

        Raises:
            BackendPluginError: In strict mode, the plugin failed.
        """
        distribution = distribution or BY_HAND
        if isinstance(plugin, Backend):
            self._add(plugin, name or plugin.name, distribution)
            return
        where = f"backend plugin {name or plugin!r}"
        if distribution != BY_HAND:
            where += f" (from {distribution})"
        if name is not None and self.pm.has_plugin(name):
            self._problem(
                f"zerograd: {where} was not registered: a plugin named {name!r} (from "
                f"{self.plugins.get(name, UNKNOWN_DIST)}) is already loaded. Use another name."
            )
            return
        if self.pm.is_registered(plugin) and distribution == BY_HAND:
            first = self.pm.get_name(plugin)
            self._problem(
                f"zerograd: {where} is already loaded as {first!r} "
                f"({origin(self.plugins.get(first, UNKNOWN_DIST))}); nothing was changed. Drop "
                f"this zerograd.backends.register() call: an installed plugin is found through "
                f"its entry point."
            )
            return
        if self.pm.is_registered(plugin):  # one module installed under two plugin names
            first = self.pm.get_name(plugin)
            self._problem(
                f"zerograd: {where} is the plugin already loaded as {first!r} (from "
                f"{self.plugins.get(first, UNKNOWN_DIST)}); it was skipped. Uninstall one of "
                f"the two distributions: {uninstall_advice(distribution)}."
            )
            return
        try:
            registered = self.pm.register(plugin, name=name)
            self.pm.check_pending()
        except (ValueError, pluggy.PluginValidationError) as exc:
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            self._problem(
                f"zerograd: {where} does not fit this zerograd's hook specification (backend "
                f"API version {API_VERSION}): {exc}.{_hook_hint(plugin)} It was skipped; "
                f"install a version of the "
                f"plugin written for this zerograd, or remove it: "
                f"{uninstall_advice(distribution)}.",
                name,
            )
            return
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # e.g. a module __getattr__ that raises or exits
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            self._problem(
                f"zerograd: {where} raised while pluggy registered it: {describe_error(exc)}. "
                f"It was skipped. Fix or remove it: {uninstall_advice(distribution)}.",
                name,
            )
            return
        if registered is None:  # blocked by name
            return
        unmarked = getattr(plugin, "zerograd_backend", None)
        if callable(unmarked) and not hasattr(unmarked, f"{hookspecs.PROJECT}_impl"):
            self.pm.unregister(plugin)
            self._problem(
                f"zerograd: {where} has a zerograd_backend function that is not marked with "
                f"@zerograd.backends.hookimpl, so pluggy does not see it; it was skipped. Mark "
                f"it (the plugin's author), or remove it: {uninstall_advice(distribution)}.",
                name,
            )
            return
        plugin_name = name or self.pm.get_name(plugin) or repr(plugin)
        backends = self._call_backend_hook(plugin, where, distribution, plugin_name)
        if backends is None:
            self.pm.unregister(plugin)
            return
        self.plugins[plugin_name] = distribution
        if not backends:
            self.empty[plugin_name] = distribution
            return
        added: list[str] = []
        try:
            for backend in backends:
                if self._add(backend, plugin_name, distribution):
                    added.append(backend.name)
        finally:
            if not added or (self.strict and len(added) < len(backends)):
                # nothing of it is kept: fixed, it can be registered again under its name
                for kept in added:
                    del self.backends[kept], self.sources[kept]
                del self.plugins[plugin_name]
                self.pm.unregister(plugin)
                for cache in self.type_caches:
                    cache.clear()

    def _call_backend_hook(
        self, plugin: Any, where: str, distribution: str, plugin_name: str
    ) -> list | None:
        """Return ``plugin``'s backends, from ``zerograd_backend`` (see :func:`call_alone`).

        Returns None if the call failed. Each plugin is called once, when it is registered.
        """
        results = call_alone(self.pm, plugin, "zerograd_backend")
        if isinstance(results, BaseException):
            self._problem(
                f"zerograd: {where} raised in zerograd_backend(): {describe_error(results)}. It "
                f"was skipped; the other backends still work. Fix or remove it: "
                f"{uninstall_advice(distribution)}.",
                plugin_name,
            )
            return None
        backends: list = []
        for result in results:  # pluggy has already dropped the plugins that returned None
            backends.extend(result if isinstance(result, (list, tuple)) else [result])
        return backends

    def _add(self, backend: Any, plugin: str, distribution: str) -> bool:
        """Keep ``backend`` from ``plugin``; report it and return False if it is refused."""
        where = f"backend plugin {plugin!r} ({origin(distribution)})"
        if not isinstance(backend, Backend):
            self._problem(
                f"zerograd: {where} returned {describe_object(backend)} from zerograd_backend(); "
                f"it was skipped. Fix or remove it: {uninstall_advice(distribution)}.",
                plugin,
            )
            return False
        name = backend.name
        if backend.api_version != API_VERSION:
            fix = (
                "write it for this version"
                if distribution == BY_HAND
                else f"install a version of {distribution} that matches"
            )
            self._problem(
                f"zerograd: {where} was written for backend API version "
                f"{backend.api_version}, but this zerograd speaks version {API_VERSION}; it was "
                f"skipped. {fix[0].upper() + fix[1:]}, or remove it: "
                f"{uninstall_advice(distribution)}.",
                plugin,
                name,
            )
            return False
        if not isinstance(name, str) or not name:
            self._problem(
                f"zerograd: {where} returned a {type(backend).__name__} "
                f"whose name is {name!r}; a backend needs a non-empty string name. It was "
                f"skipped. Fix or remove it: {uninstall_advice(distribution)}.",
                plugin,
            )
            return False
        # read only when it is a value: a property may load the array library (the JAX
        # example's asks JAX for its default device), which registering must not do
        device = inspect.getattr_static(backend, "device", None)
        if not isinstance(device, property) and device not in ("cpu", "gpu"):
            self._problem(
                f"zerograd: {where} returned backend {name!r} whose device is {device!r}; a "
                f"backend's device is 'cpu' or 'gpu' (to_cpu() and to_gpu() pick backends by "
                f"it). It was skipped. Fix or remove it: {uninstall_advice(distribution)}.",
                plugin,
                name,
            )
            return False
        if name in IN_TREE and distribution != BY_HAND and not is_in_tree(name, distribution):
            self._problem(
                intruder_message(
                    f"backend plugin {plugin!r} (from {distribution})", name, distribution
                )
            )
            return False
        if name in self.backends:
            other = self.sources[name]
            self._problem(
                f"zerograd: backend {name!r} from plugin {plugin!r} ({distribution}) is "
                f"already provided by plugin {other[0]!r} ({other[1]}); the second was skipped. "
                f"Keep one of the two: {uninstall_advice(distribution)}."
            )
            return False
        taken = self._taken_type(backend)
        if taken is not None:
            owner = self.by_type[taken]
            self._problem(
                f"zerograd: backend {name!r} (plugin {plugin!r}, {origin(distribution)}) claims "
                f"arrays of type {_qualname(taken)}, which backend {owner.name!r} (plugin "
                f"{self.sources[owner.name][0]!r}, {origin(self.sources[owner.name][1])}) "
                f"owns; it was skipped. An array type belongs to one backend: make owns() "
                f"answer False for it. Or remove it: {uninstall_advice(distribution)}.",
                plugin,
                name,
            )
            return False
        self.backends[name] = backend
        self.sources[name] = (plugin, distribution)
        self.failed.pop(name, None)  # registered again, fixed
        self.failed.pop(plugin, None)
        for cache in self.type_caches:
            if cache is not self.by_type:  # its owners stay: the newcomer claims none of them
                cache.clear()
        return True

    def _taken_type(self, backend: Backend) -> type | None:
        """An array type in use (resolved before) that ``backend`` claims too, or None.

        Checked before a backend joins, so that registering one by hand while arrays exist
        cannot make their types ambiguous and break the backend that owns them.
        """
        for array_type, owner in list(self.by_type.items()):  # (a copy: threads add types)
            try:
                if owner is not backend and backend.owns(array_type):
                    return array_type
            except Exception:  # noqa: BLE001 - owns() raising is reported at lookup
                continue
        return None

    # -- lookup -------------------------------------------------------------------------
    def resolve_type(self, array_type: type) -> Backend | None:
        """Find the backend of ``array_type`` (cached).

        Args:
            array_type: The type of an array.

        Returns:
            The backend that owns it, or None when no backend does.
        """
        backend = self.by_type.get(array_type)
        if backend is not None:
            return backend
        self.ensure_loaded()
        # (a copy: another thread may register a backend while owns() runs)
        owners = [b for b in list(self.backends.values()) if self._owns(b, array_type)]
        if len(owners) > 1:
            names = ", ".join(
                f"{b.name!r} (plugin {self.sources[b.name][0]!r}, "
                f"{origin(self.sources[b.name][1])})"
                for b in owners
            )
            ndarray_subclass = any(
                c.__module__ == "numpy" and c.__name__ == "ndarray" for c in array_type.__mro__[1:]
            )
            if ndarray_subclass and "numpy" in {b.name for b in owners}:
                fix = (
                    "The numpy backend owns numpy.ndarray and every subclass of it, so a "
                    "backend's arrays cannot subclass numpy.ndarray: give them a type of their "
                    "own (one that holds the ndarray in an attribute)."
                )
            else:
                dists = [self.sources[b.name][1] for b in owners]
                extra = [d for d, b in zip(dists, owners) if b.name not in IN_TREE] or dists
                fix = f"Keep one of them: {uninstall_advice(extra[-1])}."
            raise BackendPluginError(
                f"zerograd: arrays of type {_qualname(array_type)} are claimed by several "
                f"backends: {names}. {fix}"
            )
        if not owners:
            return None
        self.by_type[array_type] = owners[0]
        return owners[0]

    def _owns(self, backend: Backend, array_type: type) -> bool:
        try:
            return bool(backend.owns(array_type))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            plugin, dist = self.sources[backend.name]
            self._problem(
                f"zerograd: backend {backend.name!r} (plugin {plugin!r}, from {dist}) raised in "
                f"owns({_qualname(array_type)}): {describe_error(exc)}; it is taken as not owning "
                f"that type. Fix or remove it: {uninstall_advice(dist)}."
            )
            return False

    def get(self, name: str) -> Backend:
        """Return the installed backend called ``name``.

        Args:
            name: The backend's name, such as ``'numpy'``.

        Returns:
            The backend.

        Raises:
            NoBackendError: No backend of that name is installed (the message says why).
        """
        self.ensure_loaded()
        try:
            return self.backends[name]
        except KeyError:
            raise NoBackendError(self.missing_message(name)) from None

    def missing_message(self, name: str) -> str:
        """Say why no backend called ``name`` is loaded: its plugin failed, or is absent.

        Args:
            name: The backend name asked for.

        Returns:
            The message for a :class:`NoBackendError`.
        """
        for plugin, dist in self.blocked:
            if plugin == name:  # blocked by its entry-point name or by its distribution's
                listed = os.environ.get("ZEROGRAD_BLOCK_PLUGINS", "")
                entry = next(
                    (
                        e
                        for e in blocked_names()
                        if e == plugin or normalize_dist(e) == normalize_dist(dist)
                    ),
                    plugin,
                )
                return (
                    f"zerograd: no backend named {name!r} is loaded: its plugin {plugin!r} "
                    f"({origin(dist)}) is blocked by ZEROGRAD_BLOCK_PLUGINS={listed}; remove "
                    f"{entry!r} from that list."
                )
        problem = self.failed.get(name)
        if problem is not None:
            return (
                f"zerograd: backend {name!r} is installed but could not be loaded: "
                f"{problem.removeprefix('zerograd: ')}"
            )
        if name in self.empty:
            return (
                f"zerograd: backend {name!r} is installed but provides nothing on this machine: "
                f"its plugin {name!r} ({origin(self.empty[name])}) answered zerograd_backend() "
                f"with None. Ask its documentation what it needs here."
            )
        close = difflib.get_close_matches(name, list(self.backends), n=1)
        # zerograd's own names are meant as they are ('cupy' is not a misspelled 'numpy')
        guess = f"Did you mean {close[0]!r}? " if close and name not in IN_TREE else ""
        return (
            f"zerograd: no backend named {name!r} is installed; installed: "
            f"{sorted(self.backends) or 'none'}. {guess}{why_missing(name)}"
        )

    def default(self) -> Backend:
        """Return the backend for data given as Python scalars or lists: numpy if installed.

        Otherwise the first usable backend, preferring CPU ones.

        Returns:
            The default backend.

        Raises:
            NoBackendError: No usable backend is installed.
        """
        self.ensure_loaded()
        if "numpy" in self.backends:
            return self.backends["numpy"]
        usable = self.usable(self.backends.values())
        cpu = [b for b in usable if b.device == "cpu"]
        if cpu or usable:
            return (cpu or usable)[0]
        raise NoBackendError(no_backend_message())

    def is_available(self, backend: Backend) -> bool:
        """Ask ``backend.is_available()``; a plugin that raises there is one clear error.

        Args:
            backend: A loaded backend.

        Returns:
            Whether it can compute on this machine.

        Raises:
            BackendPluginError: Its ``is_available()`` raised (or exited); the message names
                the backend, its plugin and distribution, the error and what to do.
        """
        try:
            return bool(backend.is_available())
        except (Exception, SystemExit) as exc:
            plugin, dist = self.sources.get(backend.name, (backend.name, BY_HAND))
            source = dist if dist == BY_HAND else f"from {dist}"
            raise BackendPluginError(
                f"zerograd: backend {backend.name!r} (plugin {plugin!r}, {source}) failed to "
                f"say whether it can run on this machine: its is_available() raised "
                f"{describe_error(exc)}. Reinstall or fix it (a GPU plugin may need its driver "
                f"or toolkit), or remove it: {uninstall_advice(dist, plugin)}."
            ) from exc

    def usable(self, backends: Any) -> list[Backend]:
        """Return those of ``backends`` that can compute on this machine, in order.

        One whose ``is_available()`` raises is reported (a warning, an error in strict mode)
        and left out: a broken plugin never takes the others down.

        Args:
            backends: Loaded backends.

        Returns:
            The available ones.

        Raises:
            BackendPluginError: In strict mode, one's ``is_available()`` raised.
        """
        out = []
        for backend in backends:
            try:
                if self.is_available(backend):
                    out.append(backend)
            except BackendPluginError as exc:
                self._problem(str(exc))
        return out

    def info(self) -> list[BackendInfo]:
        """Describe every installed backend, for ``zerograd.backends.info()``.

        Returns:
            One :class:`BackendInfo` row per backend, sorted by name; a backend whose checks
            fail shows as unavailable.
        """
        self.ensure_loaded()
        rows = []
        for name, backend in sorted(self.backends.items()):
            plugin, dist = self.sources[name]
            try:
                available = bool(backend.is_available())
                version = backend.version()  # installed-but-unusable shows its version too
            except KeyboardInterrupt:
                raise
            except BaseException:  # a listing never ends the program, whatever a plugin does
                available, version = False, "-"
            rows.append(BackendInfo(name, plugin, dist, version, backend.device, available))
        return rows


def _hook_hint(plugin: Any) -> str:
    """Name zerograd's hooks, and the one each unknown marked function was likely meant as."""
    known = sorted(
        n for n in vars(hookspecs) if hasattr(getattr(hookspecs, n), f"{hookspecs.PROJECT}_spec")
    )
    hint = f" zerograd's hooks are {', '.join(known)}"
    try:
        marked = [
            n for n in dir(plugin) if hasattr(getattr(plugin, n, None), f"{hookspecs.PROJECT}_impl")
        ]
    except Exception:  # noqa: BLE001 - a hint only
        marked = []
    for name in marked:
        close = difflib.get_close_matches(name, known, n=1)
        if name not in known and close:
            hint += f"; did you mean {close[0]} for {name}?"
    return hint if hint.endswith("?") else hint + "."


def _qualname(t: type) -> str:
    return f"{t.__module__}.{t.__qualname__}"


registry = Registry()


def no_backend_message() -> str:
    """Return the error text for when no backend is loaded.

    It names the blocked plugins when there are some (they are installed; installing them
    again would not help), else says how to install one.

    Returns:
        The message.
    """
    if not registry.blocked:
        return _nothing_installed_message()
    listed = ", ".join(f"{name!r} (from {dist})" for name, dist in registry.blocked)
    return (
        f"zerograd: no array backend is loaded: the installed ones are blocked by "
        f"ZEROGRAD_BLOCK_PLUGINS={os.environ.get('ZEROGRAD_BLOCK_PLUGINS', '')!r}: {listed}. "
        f"Remove them from that variable (or unset it) to compute with them."
    )
