"""Names of plugins and distributions, and the advice messages built from them.

Advice always names the distribution to remove (``pip uninstall <dist>``): an entry-point
name can be shared (a fork that calls itself ``numpy``), so blocking by it could also block
the real backend.
"""

from __future__ import annotations

import re
from importlib import metadata

IN_TREE = {"numpy": "zerograd-numpy", "cupy": "zerograd-cupy"}
"""zerograd's own backends: backend (and entry-point) name -> the distribution that owns it."""

BY_HAND = "registered by hand"
"""The distribution shown for plugins passed to ``zerograd.backends.register``."""

UNKNOWN_DIST = "unknown distribution"
"""The distribution shown for an entry point whose distribution cannot be found."""


def normalize_dist(dist: str) -> str:
    """A distribution name as pip compares them (PEP 503): lower case, runs of -_. as -."""
    return re.sub(r"[-_.]+", "-", dist).lower()


def dist_of(ep: metadata.EntryPoint) -> str:
    """The name of the distribution that declares ``ep`` (:data:`UNKNOWN_DIST` if none)."""
    dist = getattr(ep, "dist", None)
    return dist.name if dist is not None and dist.name else UNKNOWN_DIST


def is_in_tree(name: str, dist: str) -> bool:
    """Whether ``dist`` is the zerograd distribution that owns the backend name ``name``."""
    return IN_TREE.get(name) == normalize_dist(dist)


def uninstall_advice(dist: str, plugin: str | None = None) -> str:
    """Advice that removes exactly ``dist`` (never a name another backend shares)."""
    if dist == BY_HAND:
        return "it was registered by hand: fix or drop that zerograd.backends.register() call"
    if dist == UNKNOWN_DIST:
        name = f" that declares the entry point {plugin!r}" if plugin else ""
        return f"find the installed package{name} and pip uninstall it"
    return f"pip uninstall {dist} (or keep it installed but unused: ZEROGRAD_BLOCK_PLUGINS={dist})"


def intruder_message(where: str, name: str, dist: str) -> str:
    """The report on a third-party plugin (``where``) that claims zerograd's ``name``."""
    owner = IN_TREE[name]
    return (
        f"zerograd: {where} claims the name {name!r}, which belongs to zerograd's own backend "
        f"from {owner}; it was skipped and {name!r} stays {owner}'s. If you do not need "
        f"{dist}, remove it: {uninstall_advice(dist, name)}."
    )


def describe_error(exc: BaseException) -> str:
    """``exc`` in a message: its type and text (``sys.exit()`` said in words)."""
    if isinstance(exc, SystemExit):
        return f"SystemExit (it called sys.exit({exc.code!r}))"
    return f"{type(exc).__name__}: {exc}"
