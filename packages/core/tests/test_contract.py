"""The contract lists in zerograd.backends.contract match what core and nn really call."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import numpy as np
import pytest

from zerograd.backends import Backend, contract
from zerograd_numpy import NumpyBackend

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


# their ``xp`` is a zerograd.namespaces namespace: derivatives, and helpers they hand it to
VJP_METHODS = {"vjp", "grad0", "grad1", "in_gradient_dtype", "_as_float"}


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

    nn_suite = pytest.importorskip(
        "zerograd_nn.testing.conformance", reason="zerograd-nn checks the random numbers"
    )

    b = _Incomplete()
    with pytest.raises(AssertionError, match=r"'incomplete'.* lacks \[.*'permute_dims'.*'concat'"):
        suite.test_array_module_has_every_standard_name_zerograd_calls(b)
    with pytest.raises(AssertionError, match=r"does not implement Backend.randn, .*random numbers"):
        nn_suite.test_random_number_methods_are_implemented(b, "randn")
    # a backend for core alone needs no random numbers: the core suite asks for none
    (mark,) = suite.test_required_backend_methods_are_implemented.pytestmark
    assert mark.args == ("name", contract.REQUIRED_METHODS)
    assert not {"randn", "rand", "permutation"} & set(contract.REQUIRED_METHODS)
    with pytest.raises(AssertionError, match=r"does not implement Backend.to_numpy, which every"):
        suite.test_required_backend_methods_are_implemented(b, "to_numpy")


# calls whose result is a raw backend array (besides ``<array module>.<name>(...)``)
_ARRAY_MAKERS = {"data_of", "_data", "_raw", "array_arg", "float_data", "as_array"}


def _holds_raw_array(node: ast.AST) -> bool:
    """Whether the expression ``node`` surely evaluates to a raw backend array."""
    if isinstance(node, ast.Attribute):
        return node.attr == "data"  # a Variable's data
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and _module_expr(f.value):
            return True
        return getattr(f, "id", getattr(f, "attr", None)) in _ARRAY_MAKERS
    return False


def _raw_size_reads(path: Path) -> list[str]:
    """``.size`` reads in ``path`` on an expression that surely holds a raw array.

    Sure means: ``<...>.data``, an array-making call, a parameter of a class's ``forward``
    (a Function's forward gets arrays), or a name assigned from one of those in the same
    function. What holds an array in general is not decidable from the source: the tests in
    test_array_size.py check the behaviour on torch tensors, whose ``size`` is a method.
    """
    tree = ast.parse(path.read_text(), str(path))
    methods = {
        id(f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body
    }  # fmt: skip
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        raw = set()
        if fn.name == "forward" and id(fn) in methods:
            raw.update(a.arg for a in fn.args.args[1:])
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and _holds_raw_array(node.value):
                raw.update(t.id for t in node.targets if isinstance(t, ast.Name))
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Attribute) and node.attr == "size"):
                continue
            v = node.value
            if _holds_raw_array(v) or (isinstance(v, ast.Name) and v.id in raw):
                found.append(f"{path.relative_to(PACKAGES)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_size_attribute_read_on_a_raw_array():
    roots = [r for r in SOURCES if r.is_dir()]
    if len(roots) < 2:
        pytest.skip(f"needs the repository's sources of core and nn, not found under {PACKAGES}")
    found = sorted({f for r in roots for p in sorted(r.rglob("*.py")) for f in _raw_size_reads(p)})
    assert not found, (
        "these read .size on a raw backend array (torch.Tensor.size is a method; the standard "
        f"allows None): count with zerograd.utils.size_of(x) instead: {found}"
    )


class _Sloppy(NumpyBackend):
    """A numpy plugin with one mistake per method, chosen by ``mistake``."""

    name = "sloppy"

    def __init__(self, mistake):
        self.mistake = mistake

    def asarray(self, obj, dtype=None):
        return np.asarray(obj) if self.mistake == "asarray" else super().asarray(obj, dtype)

    def astype(self, x, dtype):
        return x if self.mistake == "astype" else super().astype(x, dtype)

    def to_numpy(self, x):
        return x.tolist() if self.mistake == "to_numpy" else x

    def owns(self, t):
        return True if self.mistake == "owns" else super().owns(t)

    def compute_into(self, op, x1, x2=None, *, out):
        if self.mistake == "compute_into":  # the result made, out left as it was
            return getattr(np, op)(x1) if x2 is None else getattr(np, op)(x1, x2)
        return super().compute_into(op, x1, x2, out=out)


@pytest.mark.parametrize(
    "mistake, check, words",
    [
        ("asarray", "test_asarray_and_astype", r"asarray\(\[1, 2, 3\], dtype=float32\) gave int64"),
        ("astype", "test_asarray_and_astype", r"astype\(x, float32\) gave float64"),
        ("to_numpy", "test_numpy_round_trip_keeps_values_and_dtype", r"to_numpy\(x\) gave list"),
        ("owns", "test_owns_its_arrays_and_no_foreign_ones", r"owns\(list\) is True"),
        (
            "compute_into",
            "test_compute_into_writes_numpys_result_where_writable",
            r"compute_into\('add', \.\.\., out=out\) left out unchanged: it must write its "
            r"result into out",
        ),
    ],
)
def test_conformance_names_the_broken_method(mistake, check, words):
    from zerograd.testing import conformance as suite

    args = (_Sloppy(mistake),) + (("add",) if mistake == "compute_into" else ())
    with pytest.raises(AssertionError, match=r"^backend 'sloppy': " + words):
        getattr(suite, check)(*args)


class _Listy(Backend):
    """Arrays that are plain lists in a box: no shape, no dtype."""

    name = "listy"

    def from_numpy(self, a):
        box = type("Box", (), {})()
        box.values = a.tolist()
        return box


def test_conformance_names_missing_array_attributes():
    from zerograd.testing import conformance as suite

    with pytest.raises(
        AssertionError,
        match=r"^backend 'listy': its arrays \(Box\) lack \['shape', 'ndim', 'dtype'\], which "
        r"the array API standard gives every array and zerograd reads$",
    ):
        suite.test_arrays_have_the_standard_attributes(_Listy())


# -- docs/backend-plugins.md shows these lists as tables -------------------------------------
PAGE = PACKAGES.parent / "docs" / "backend-plugins.md"
ATTRIBUTES = {"name", "device", "cache_scalars", "api_version"}  # the table's non-methods


def _table_after(header: str) -> list[str]:
    """The first cell of each row of the page's table whose header row is ``header``."""
    if not PAGE.is_file():
        pytest.skip(f"{PAGE} not found (tests run outside the repository checkout)")
    rows = PAGE.read_text(encoding="utf-8").split(header + "\n", 1)[1].split("\n\n", 1)[0]
    return [line.strip("|").split("|")[:2] for line in rows.splitlines()[1:]]


def test_the_page_lists_the_standard_names_the_contract_holds():
    """backend-plugins.md, "What zerograd calls on xp": the names are XP_NAMES and the
    linalg extension's, no more (it listed ``bool``, which nothing calls)."""
    listed = set()
    for _, names in _table_after("| group | names |"):
        listed |= set(re.findall(r"`([\w.]+)`", re.sub(r"\([^)]*\)", "", names)))
    want = set(contract.XP_NAMES) | {f"linalg.{n}" for n in contract.XP_LINALG_NAMES}
    assert listed == want, f"on the page only: {listed - want}; missing: {want - listed}"


def test_the_page_lists_every_backend_method_of_the_contract():
    """backend-plugins.md's table of Backend methods: one row per method of the contract
    (it lacked ``flatten_into``), "yes" in the required column for the required ones."""
    listed, required = set(), set()
    for names, needed in _table_after("| name | required | returns | default |"):
        for name in re.findall(r"`(\w+)", names):
            listed.add(name)
            if needed.strip().startswith("yes"):
                required.add(name)
    methods = contract.REQUIRED_METHODS + contract.NN_REQUIRED_METHODS + contract.OPTIONAL_METHODS
    assert listed - ATTRIBUTES == set(methods)
    assert required - ATTRIBUTES == set(contract.REQUIRED_METHODS + contract.NN_REQUIRED_METHODS)
