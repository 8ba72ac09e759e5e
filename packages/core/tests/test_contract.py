"""The contract lists in zerograd.backends.contract match what core and nn really call."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from zerograd.backends import Backend, contract
from zerograd.namespaces import NAMES

PACKAGES = Path(__file__).resolve().parents[2]
SOURCES = [PACKAGES / "core" / "src" / "zerograd", PACKAGES / "nn" / "src" / "zerograd_nn"]
NAMESPACE_ONLY = set(NAMES) - set(contract.XP_NAMES)


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


def _vjp_namespace_uses(tree: ast.AST) -> set[int]:
    """ids of the ``xp.<name>`` nodes inside ``vjp`` methods that name a namespace-only name.

    There ``xp`` is a :mod:`zerograd.namespaces` namespace, whose NAMES include a few that
    are not the standard's (``sum_to``, ``apply``): those are not array-module calls.
    """
    ids: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name == "vjp":
            for node in ast.walk(fn):
                if isinstance(node, ast.Attribute) and node.attr in NAMESPACE_ONLY:
                    ids.add(id(node))
    return ids


def _xp_names(root: Path) -> dict[str, list[str]]:
    """Every ``<array module>.<name>`` in the sources under ``root``: name -> places."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        in_vjp = _vjp_namespace_uses(tree)
        for node in ast.walk(tree):
            if id(node) in in_vjp:
                continue
            if isinstance(node, ast.Attribute) and _module_expr(node.value):
                where = f"{path.relative_to(PACKAGES)}:{node.lineno}"
                found.setdefault(node.attr, []).append(where)
    return found


def test_core_and_nn_call_only_the_listed_standard_names_on_xp():
    roots = [r for r in SOURCES if r.is_dir()]
    if len(roots) < 2:
        pytest.skip(f"needs the repository's sources of core and nn, not found under {PACKAGES}")
    used: dict[str, list[str]] = {}
    for root in roots:
        for name, places in _xp_names(root).items():
            used.setdefault(name, []).extend(places)
    used.pop("linalg", None)  # xp.linalg.<name>: checked below against XP_LINALG_NAMES
    extra = {n: p for n, p in used.items() if n not in contract.XP_NAMES}
    assert not extra, (
        f"names called on xp outside the contract (add them or remove the call): {extra}"
    )
    unused = set(contract.XP_NAMES) - set(used)
    assert not unused, f"contract names no longer called (remove them from XP_NAMES): {unused}"


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
