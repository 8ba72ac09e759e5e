"""Hook specifications that backend plugins implement (pluggy project ``zerograd``).

A plugin is any module or object with a ``zerograd_backend`` function marked by
:data:`hookimpl`; expose it through the entry-point group ``zerograd.backends``.
"""

from __future__ import annotations

import pluggy

PROJECT = "zerograd"
ENTRY_POINT_GROUP = "zerograd.backends"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marker for a plugin's hook functions: ``@hookimpl def zerograd_backend(): ...``."""


@hookspec
def zerograd_backend():  # type: ignore[empty-body]
    """Return the plugin's :class:`zerograd.backends.Backend` instance.

    Every plugin's result is collected (not first-result-wins); each backend must claim
    array types no other backend claims. Called once when the registry loads; the
    returned object is then used directly, never through the hook, on the hot path.
    """
