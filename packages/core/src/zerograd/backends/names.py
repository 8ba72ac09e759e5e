"""Names of plugins and distributions, the environment switches, and advice messages.

Advice always names the distribution to remove (``pip uninstall <dist>``): an entry-point
name can be shared (a fork that calls itself ``numpy``), so blocking by it could also block
the real backend.
"""

from __future__ import annotations

import os
import re
from importlib import metadata
from types import ModuleType

IN_TREE = {"numpy": "zerograd-numpy", "cupy": "zerograd-cupy"}
"""zerograd's own backends: backend (and entry-point) name -> the distribution that owns it."""

INSTALL_EXTRA = {"cupy": "cuda12"}
"""The extra that brings the array library with zerograd's own backend: zerograd-cupy alone
installs no CuPy (its wheel is per CUDA version: the extras ``cuda12`` and ``cuda13``)."""

BY_HAND = "registered by hand"
"""The distribution shown for plugins passed to ``zerograd.backends.register``."""

UNKNOWN_DIST = "unknown distribution"
"""The distribution shown for an entry point whose distribution cannot be found."""

TRUE_WORDS = {"1", "true", "yes", "on"}
"""Values of the ZEROGRAD_* switches that mean "on" (compared in lower case)."""


def normalize_dist(dist: str) -> str:
    """Return a distribution name as pip compares them (PEP 503).

    Args:
        dist: A distribution name.

    Returns:
        The name in lower case, each run of ``-``, ``_`` and ``.`` turned into ``-``.

    Examples:
        >>> normalize_dist("Zerograd_Numpy")
        'zerograd-numpy'
    """
    return re.sub(r"[-_.]+", "-", dist).lower()


def dist_of(ep: metadata.EntryPoint) -> str:
    """Return the name of the distribution that declares ``ep``.

    Args:
        ep: An entry point.

    Returns:
        The distribution's name, or :data:`UNKNOWN_DIST` if none is known.
    """
    dist = getattr(ep, "dist", None)
    return dist.name if dist is not None and dist.name else UNKNOWN_DIST


def is_in_tree(name: str, dist: str) -> bool:
    """Whether ``dist`` is the zerograd distribution that owns the backend name ``name``.

    Args:
        name: A backend name.
        dist: A distribution name.

    Returns:
        True when ``name`` is one of zerograd's own backends and ``dist`` provides it.
    """
    return IN_TREE.get(name) == normalize_dist(dist)


def uninstall_advice(dist: str, plugin: str | None = None) -> str:
    """Return advice that removes exactly ``dist`` (never a name another backend shares).

    Args:
        dist: The distribution name, :data:`BY_HAND` or :data:`UNKNOWN_DIST`.
        plugin: The entry point's name, used when the distribution is unknown.

    Returns:
        The advice, as a clause to put in a message.
    """
    if dist == BY_HAND:
        return "it was registered by hand: fix or drop that zerograd.backends.register() call"
    if dist == UNKNOWN_DIST:
        name = f" that declares the entry point {plugin!r}" if plugin else ""
        return f"find the installed package{name} and pip uninstall it"
    return f"pip uninstall {dist} (or keep it installed but unused: ZEROGRAD_BLOCK_PLUGINS={dist})"


def origin(dist: str) -> str:
    """Return where a plugin comes from, for a message: ``from <dist>`` or ``registered by hand``.

    Args:
        dist: The distribution name, or :data:`BY_HAND`.

    Returns:
        The phrase.
    """
    return dist if dist == BY_HAND else f"from {dist}"


def describe_object(obj: object) -> str:
    """Name what a plugin returned in place of a Backend, and what it should return instead.

    Args:
        obj: The object returned.

    Returns:
        A phrase such as ``the class MyBackend instead of an instance (return MyBackend())``.
    """
    if isinstance(obj, type):
        return f"the class {obj.__qualname__} instead of an instance (return {obj.__qualname__}())"
    if isinstance(obj, ModuleType):
        return f"the module {obj.__name__}, not a zerograd.backends.Backend"
    return f"{type(obj).__qualname__}, not a zerograd.backends.Backend"


def intruder_message(where: str, name: str, dist: str) -> str:
    """Return the report on a third-party plugin (``where``) that claims zerograd's ``name``.

    Args:
        where: The plugin, as the message should name it.
        name: The backend name it claims (one of zerograd's own).
        dist: The plugin's distribution.

    Returns:
        The message.
    """
    owner = IN_TREE[name]
    return (
        f"zerograd: {where} claims the name {name!r}, which belongs to zerograd's own backend "
        f"from {owner}; it was skipped and {name!r} stays {owner}'s. If you do not need "
        f"{dist}, remove it: {uninstall_advice(dist, name)}."
    )


def describe_error(exc: BaseException) -> str:
    """Return ``exc`` for a message: its type and text (``sys.exit()`` said in words).

    Args:
        exc: The exception.

    Returns:
        The description.
    """
    if isinstance(exc, SystemExit):
        return f"SystemExit (it called sys.exit({exc.code!r}))"
    return f"{type(exc).__name__}: {exc}"


def blocked_names() -> set[str]:
    """Return the names in ``ZEROGRAD_BLOCK_PLUGINS`` (plugin or distribution names).

    Returns:
        The set of names, empty when the variable is unset.
    """
    names = os.environ.get("ZEROGRAD_BLOCK_PLUGINS", "").split(",")
    return {n.strip() for n in names if n.strip()}


def autoload_off() -> bool:
    """Whether ``ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD`` switches entry-point loading off.

    Returns:
        True when the variable holds a true word (such as ``1``).
    """
    return os.environ.get("ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD", "").lower() in TRUE_WORDS


_AUTOLOAD_OFF = (
    "Plugin autoloading is switched off (ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD=1): register "
    "backends by hand with zerograd.backends.register(...), or unset the variable."
)


def why_missing(name: str) -> str:
    """Say why no backend called ``name`` is loaded, and what to do.

    Args:
        name: The backend name asked for.

    Returns:
        The explanation, a sentence for an error message.
    """
    if name in blocked_names():
        return (
            f"It is blocked by ZEROGRAD_BLOCK_PLUGINS="
            f"{os.environ['ZEROGRAD_BLOCK_PLUGINS']}; remove {name!r} from that list."
        )
    if autoload_off():
        return _AUTOLOAD_OFF
    if name in IN_TREE:
        return f"Install it {install_advice(name, INSTALL_EXTRA.get(name, ''))}."
    return (
        "Install the distribution that provides it (zerograd's own backends: "
        + ", ".join(f"{n!r} from {d}" for n, d in IN_TREE.items())
        + ")."
    )


def install_advice(name: str, extra: str = "") -> str:
    """Return how to install zerograd's own backend ``name``, from a checkout and from PyPI.

    zerograd is not on PyPI yet, so the command that works today (from a clone of the
    repository) comes first.

    Args:
        name: A key of :data:`IN_TREE`.
        extra: An extra of the distribution, such as ``"cuda12"``.

    Returns:
        A sentence with both commands.
    """
    if not extra:
        checkout, published = f"./packages/backend-{name}", IN_TREE[name]
    else:
        checkout, published = f"'./packages/backend-{name}[{extra}]'", f"'{IN_TREE[name]}[{extra}]'"
    return (
        f"from a zerograd checkout: pip install {checkout}   "
        f"(once published on PyPI: pip install {published})"
    )


def no_backend_message() -> str:
    """Return the error text for when no backend at all is loaded.

    Returns:
        The message, with the commands that install the numpy backend.
    """
    if autoload_off():
        return (
            "zerograd: no array backend is loaded. " + _AUTOLOAD_OFF + " If none is installed, "
            "install the numpy backend " + install_advice("numpy") + "."
        )
    return (
        "zerograd: no array backend is installed, so there is nothing to compute with. "
        "Install the numpy backend " + install_advice("numpy") + "."
    )
