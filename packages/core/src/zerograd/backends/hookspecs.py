"""Hook specifications that backend plugins implement (pluggy project ``zerograd``).

A plugin is a module (or any object) with hook functions marked by :data:`hookimpl`,
named by an entry point in the group ``zerograd.backends``::

    # pyproject.toml
    [project.entry-points."zerograd.backends"]
    mylib = "zerograd_mylib"

zerograd calls the hooks through pluggy (``pm.hook.<name>``), so pluggy's calling rules
hold: every implementation runs unless a hook says "first result", a ``None`` result is
dropped from the list of results, ``tryfirst``/``trylast`` order implementations, and
wrappers, call monitoring and tracing see the calls. Each hook below states when zerograd
calls it and what a result means. Hooks run only while plugins load; operations on arrays
never call a hook (the backend is cached per array type).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .base import Backend

PROJECT = "zerograd"
"""pluggy's project name for zerograd's hooks (the markers below are bound to it)."""

ENTRY_POINT_GROUP = "zerograd.backends"
"""The entry-point group zerograd loads plugins from."""

hookspec = pluggy.HookspecMarker(PROJECT)
"""Marker for hook specifications (used by zerograd itself)."""

hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marker for a plugin's hook functions: ``@hookimpl def zerograd_backend(): ...``."""


@hookspec
def zerograd_backend() -> Backend | Sequence[Backend] | None:  # type: ignore[empty-body]
    """Return the backend(s) this plugin provides.

    **Calling semantics:** called once per plugin, when the plugin is registered (at the
    first use of zerograd's backends, or by :func:`zerograd.backends.register`), through a
    hook caller limited to that plugin. All results are kept (not first-result-wins). A
    plugin whose implementation raises (``SystemExit`` included; ``KeyboardInterrupt`` is
    let through) is reported with a :class:`BackendPluginWarning` naming it and its
    distribution, and skipped; the other plugins load normally (in strict mode it is a
    :class:`BackendPluginError`). Each backend must have a unique name and claim array
    types no other backend claims; the names of zerograd's own backends (``numpy``,
    ``cupy``) belong to their distributions. The returned objects are then used directly,
    never through the hook, on the hot path.

    Returns:
        A :class:`zerograd.backends.Backend`, a list or tuple of them (a plugin may provide
        several backends, e.g. one per device), or ``None`` to provide nothing on this
        machine (the plugin is then silently absent from :func:`list_backends`).

    Examples:
        >>> from zerograd.backends import Backend, hookimpl
        >>> class MyBackend(Backend):
        ...     name = "mylib"
        >>> @hookimpl
        ... def zerograd_backend():
        ...     return MyBackend()
    """
