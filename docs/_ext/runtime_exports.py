"""A griffe extension for the docs build: a module's public names are its ``__all__`` at run time.

griffe reads ``__all__`` from the source without running it, and gives up on expressions it
cannot evaluate (``__all__ = list(_core_all) + [...]`` in ``zerograd_nn.functional``), which
leaves those names out of the API reference. This extension imports each module of a loaded
package that assigns ``__all__`` and sets griffe's exports to the real list, whatever
expression computes it. A module that cannot be imported keeps what griffe read, with a
warning (``mkdocs build --strict`` then fails).

The list is reordered, classes after everything else (each group in ``__all__``'s
order), so that a page rendered with ``members_order: [__all__, source]`` and
``group_by_category: false`` lists the functions users call before the ``Function``
classes behind them (docs/reference/functions.md, zerograd_nn_functional.md).

Loaded from ``mkdocs.yml`` (``plugins: mkdocstrings: handlers: python: options:
extensions``), next to ``rst_docstrings.py``.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from typing import Any

import griffe

_log = logging.getLogger("mkdocs.plugins.zerograd.runtime_exports")


def _modules(module: griffe.Module) -> list[griffe.Module]:
    found = [module]
    for member in module.modules.values():
        if not member.is_alias:
            found += _modules(member)
    return found


class RuntimeExports(griffe.Extension):
    """Replace each module's static ``__all__`` with the imported module's (see above)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Set the exports of every module of ``pkg`` that assigns ``__all__``."""
        for module in _modules(pkg):
            if "__all__" not in module.members:
                continue
            try:
                imported = importlib.import_module(module.path)
            except Exception as exc:  # noqa: BLE001 - any import failure: say which and why
                _log.warning("cannot import %s to read its __all__: %r", module.path, exc)
                continue
            names = [str(name) for name in imported.__all__]
            module.exports = sorted(names, key=lambda n: inspect.isclass(getattr(imported, n)))
