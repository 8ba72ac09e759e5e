"""Every package's modules import each other in one direction: no circle, even held closed
by an import inside a function.

Core's order, bottom to top: config, the leaf modules shapes and checks, backends (the
plugin surface: it imports only the leaves), arrays, variable, function, functions,
namespaces, backprop, wiring. What Variable and Function run from above them (the operators
and tensor methods, ``Variable._engine``, ``Function._graph_ops``) is installed by one module,
``zerograd.wiring``, and by no other.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import zerograd

SRC = Path(zerograd.__file__).parent
PACKAGES = Path(__file__).resolve().parents[2]
ROOTS = sorted(p for p in PACKAGES.glob("*/src/*") if (p / "__init__.py").is_file())
# imports inside a function that are allowed: an optional dependency, imported where used
OPTIONAL = {
    ("zerograd_nn.models", "zerograd_viz"): "zerograd-viz draws the model (plot), optional",
    ("zerograd_nn.dezero.utils", "zerograd_viz"): "DeZero's utils.plot_dot_graph, optional",
}


def _modules() -> dict[str, Path]:
    """Every module of the repository's packages: dotted name -> file."""
    if not ROOTS:
        pytest.skip(f"needs the repository's package sources, not found under {PACKAGES}")
    found = {}
    for root in ROOTS:
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root.parent).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:`` (never run)."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            ids.update(id(n) for b in node.body for n in ast.walk(b))
    return ids


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, bool, int]]:
    """``(imported module, inside a function, line)`` for each import of a module that
    ``modules`` holds, as ``name`` (defined in ``path``) writes it."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_checking_only(tree)
    local = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        for n in ast.walk(f)
    }
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]  # fmt: skip
        for t in targets:
            while t and t not in modules and "." in t:
                t = t.rpartition(".")[0]
            if t in modules and t != name:
                out.append((t, id(node) in local, node.lineno))
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {n: {t for t, _, _ in _imports(n, p, modules)} for n, p in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (its modules in order), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


def test_the_cycle_finder_finds_a_circle_and_passes_a_dag():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_package_has_an_import_circle():
    circle = _cycle(_graph())
    assert circle is None, f"import circle: {' -> '.join(circle)}"


def test_no_module_imports_another_inside_a_function():
    modules = _modules()
    found = [
        f"{path.relative_to(PACKAGES)}:{line} imports {t}"
        for name, path in modules.items()
        for t, inside, line in _imports(name, path, modules)
        if inside and (name, t.split(".")[0]) not in OPTIONAL
    ]
    assert not found, "imports inside functions (import at the top, or install late):\n" + (
        "\n".join(found)
    )


def test_the_backends_import_only_themselves_and_the_leaf_modules():
    graph = _graph()
    allowed = {"zerograd.shapes", "zerograd.checks"}
    for name, targets in graph.items():
        if name.startswith("zerograd.backends"):
            bad = {t for t in targets if not t.startswith("zerograd.backends")} - allowed
            assert not bad, f"{name} imports {bad}: the plugin surface must stay below the engine"
    for leaf in allowed:
        assert not graph[leaf], f"{leaf} imports {graph[leaf]}: it must stay a leaf"


def test_variable_and_function_import_no_function():
    for name in ("variable.py", "function.py"):
        modules = {f"zerograd.{p.stem}": p for p in SRC.glob("*.py")}
        modules.update({f"zerograd.functions.{p.stem}": p for p in SRC.glob("functions/*.py")})
        modules["zerograd.functions"] = SRC / "functions" / "__init__.py"
        bad = {t for t, _, _ in _imports(f"zerograd.{name[:-3]}", SRC / name, modules)}
        bad = {t for t in bad if t.startswith("zerograd.functions")}
        assert not bad, f"zerograd/{name} imports {bad}: zerograd.wiring must install them"


def test_the_engine_is_installed_below_as_the_operators_are():
    from zerograd import Function, Variable, backprop, namespaces
    from zerograd.functions import ops

    assert Variable._engine is backprop.backward
    assert Function._graph_ops is namespaces.VARIABLE_OPS
    for name, attribute in ops.OP_METHODS.items():
        assert Variable.__dict__[name] is attribute, name


def test_only_the_wiring_module_sets_attributes_on_variable_or_function():
    """A reader following ``Variable.__add__`` finds its installer in one module.

    (variable.py itself swaps ``Variable.data``'s property while a static-graph recording
    watches it: its own attribute, not one from above.)
    """
    own = {"Variable": "variable.py", "Function": "function.py"}
    places = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr":
                target = ast.unparse(node.args[0]) if node.args else ""
                if own.get(target, path.name) != path.name:
                    places.append(f"{path.relative_to(SRC)}:{node.lineno}")
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if (
                        isinstance(t, ast.Attribute)
                        and own.get(ast.unparse(t.value), path.name) != path.name
                    ):
                        places.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert places and all(p.startswith("wiring.py:") for p in places), places


def test_operators_and_engine_are_installed_by_importing_any_module():
    code = (
        "import zerograd.variable as v, sys\n"
        "assert 'zerograd.functions' in sys.modules\n"  # the package import brings them
        "import numpy as np\n"
        "x = v.Variable(np.array([1.0, 2.0]))\n"
        "y = (x * 2 + 1) @ x\n"
        "y.backward(create_graph=True)\n"
        "print(y.data, x.T.shape, x.sum().data, x.grad.data, x.grad.creator is not None)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["13.0", "(2,)", "3.0", "[5.", "9.]", "True"], out.stderr
