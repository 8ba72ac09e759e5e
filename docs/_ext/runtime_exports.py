"""A griffe extension for the docs build: a module's public names are its ``__all__`` at run time.

griffe reads ``__all__`` from the source without running it, and gives up on expressions it
cannot evaluate (``__all__ = list(_core_all) + [...]`` in ``zerograd_nn.functional``), which
leaves those names out of the API reference. This extension imports each module of a loaded
package that assigns ``__all__`` and sets griffe's exports to the real list, whatever
expression computes it. A module that cannot be imported keeps what griffe read, with a
warning (``mkdocs build --strict`` then fails).

It does so as each module's members are read, before griffe expands the wildcard imports
that use those lists (``zerograd.functions`` gathers its op modules with ``import *``).
And a function that ``zerograd.functions.ops.op`` writes from a Function class
(``exp = op(Exp, ...)``) reads as an attribute in the source: it is documented as the
function it is at run time, with its signature and docstring.

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


def _function(name: str, obj: Any, where: griffe.Attribute, agent: Any) -> griffe.Function:
    """A griffe Function for the run-time function ``obj`` that ``where`` binds (its
    docstring parsed as ``agent``, the source's reader, parses the others)."""
    kinds = {
        inspect.Parameter.POSITIONAL_ONLY: griffe.ParameterKind.positional_only,
        inspect.Parameter.POSITIONAL_OR_KEYWORD: griffe.ParameterKind.positional_or_keyword,
        inspect.Parameter.VAR_POSITIONAL: griffe.ParameterKind.var_positional,
        inspect.Parameter.KEYWORD_ONLY: griffe.ParameterKind.keyword_only,
        inspect.Parameter.VAR_KEYWORD: griffe.ParameterKind.var_keyword,
    }
    signature = inspect.signature(obj)
    parameters = griffe.Parameters(
        *[
            griffe.Parameter(
                p.name,
                annotation=None if p.annotation is p.empty else str(p.annotation),
                kind=kinds[p.kind],
                default=None if p.default is p.empty else repr(p.default),
            )
            for p in signature.parameters.values()
        ]
    )
    returns = signature.return_annotation
    function = griffe.Function(
        name,
        parameters=parameters,
        returns=None if returns is signature.empty else str(returns),
        lineno=where.lineno,
        endlineno=where.endlineno,
    )
    function.docstring = griffe.Docstring(
        inspect.getdoc(obj) or "",
        lineno=where.lineno,
        endlineno=where.endlineno,
        parent=function,
        parser=getattr(agent, "docstring_parser", None),
        parser_options=getattr(agent, "docstring_options", None),
    )
    return function


class RuntimeExports(griffe.Extension):
    """Replace each module's static ``__all__`` with the imported module's (see above)."""

    def on_module_members(self, *, mod: griffe.Module, agent: Any = None, **kwargs: Any) -> None:
        """Set ``mod``'s exports from the imported module; document generated op functions."""
        if "__all__" not in mod.members:
            return
        try:
            imported = importlib.import_module(mod.path)
        except Exception as exc:  # noqa: BLE001 - any import failure: say which and why
            _log.warning("cannot import %s to read its __all__: %r", mod.path, exc)
            return
        names = [str(name) for name in imported.__all__]
        mod.exports = sorted(names, key=lambda n: inspect.isclass(getattr(imported, n)))
        for name, member in list(mod.members.items()):
            obj = getattr(imported, name, None)
            if not member.is_alias and member.is_attribute and hasattr(obj, "__wrapped_op__"):
                mod.set_member(name, _function(name, obj, member, agent))
