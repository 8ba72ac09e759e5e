"""The contract lists in zerograd.backends.contract match what core and nn really call."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from zerograd.backends import Backend, contract

PACKAGES = Path(__file__).resolve().parents[2]
SOURCES = [PACKAGES / "core" / "src" / "zerograd", PACKAGES / "nn" / "src" / "zerograd_nn"]


def _module_expr(node: ast.AST) -> bool:
    """Whether ``node`` evaluates to an array module: ``xp``, ``<...>.xp`` or
    ``get_array_module(...)``."""
    if isinstance(node, ast.Name):
        return node.id == "xp"
    if isinstance(node, ast.Attribute):
        return node.attr == "xp"
    if isinstance(node, ast.Call):
        f = node.func
        return getattr(f, "id", getattr(f, "attr", None)) == "get_array_module"
    return False


VJP_METHODS = {"vjp", "grad0", "grad1"}  # their ``xp`` is a zerograd.namespaces namespace


def _xp_names(root: Path, in_vjp: bool = False) -> dict[str, list[str]]:
    """Every ``<array module>.<name>`` in the sources under ``root``: name -> places.

    With ``in_vjp``, only those inside derivative methods (whose ``xp`` is the namespace
    of :mod:`zerograd.namespaces`); without, only those outside them.
    """
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        inside = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in VJP_METHODS:
                inside.update(id(n) for n in ast.walk(node))
        for node in ast.walk(tree):
            if (id(node) in inside) != in_vjp:
                continue
            if isinstance(node, ast.Attribute) and _module_expr(node.value):
                where = f"{path.relative_to(PACKAGES)}:{node.lineno}"
                found.setdefault(node.attr, []).append(where)
    return found


def test_derivatives_call_only_the_namespace_names():
    from zerograd import namespaces

    roots = [r for r in SOURCES if r.is_dir()]
    if len(roots) < 2:
        pytest.skip(f"needs the repository's sources of core and nn, not found under {PACKAGES}")
    allowed = set(namespaces.NAMES) | {"graph"}
    for root in roots:
        extra = {n: p for n, p in _xp_names(root, in_vjp=True).items() if n not in allowed}
        assert not extra, f"names a vjp calls outside zerograd.namespaces.NAMES: {extra}"


def test_every_listed_backend_method_is_declared_with_a_docstring():
    for name in (
        contract.REQUIRED_METHODS + contract.NN_REQUIRED_METHODS + contract.OPTIONAL_METHODS
    ):
        method = getattr(Backend, name)
        doc = inspect.getdoc(method) or ""
        assert doc, f"Backend.{name} has no docstring"
    declared = {n for n, v in vars(Backend).items() if callable(v) and not n.startswith("_")}
    listed = set(
        contract.REQUIRED_METHODS + contract.NN_REQUIRED_METHODS + contract.OPTIONAL_METHODS
    )
    assert declared == listed, f"Backend methods not in the contract lists: {declared ^ listed}"


class _Incomplete(Backend):
    """A plugin as a beginner might write it: a numpy-1-style module, no random numbers."""

    name = "incomplete"

    def load_module(self):
        import types

        return types.SimpleNamespace(asarray=None, reshape=None, transpose=None)


def test_conformance_names_what_a_plugin_lacks():
    from zerograd.testing import conformance as suite

    b = _Incomplete()
    with pytest.raises(AssertionError, match=r"'incomplete'.* lacks \[.*'permute_dims'.*'concat'"):
        suite.test_array_module_has_every_standard_name_zerograd_calls(b)
    with pytest.raises(AssertionError, match=r"does not implement Backend.randn, .*random numbers"):
        suite.test_required_backend_methods_are_implemented(b, "randn")
    with pytest.raises(AssertionError, match=r"does not implement Backend.to_numpy, which every"):
        suite.test_required_backend_methods_are_implemented(b, "to_numpy")
