"""What py.typed promises: the annotations a user's type checker reads agree with the code.

Type checkers do not run code, so what zerograd installs at import (the operators and
tensor methods of Variable) must also be declared where they can read it; these tests
compare the declarations with what runs. Where mypy is importable, documented code is
also type-checked for real (skipped, saying so, where it is not).
"""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path
from typing import Any

import pytest

import zerograd.variable
from zerograd import Function, Variable
from zerograd.functions import arithmetic, broadcast, elementwise, join, linalg, reduction, shape
from zerograd.functions.ops import OP_METHODS, exported
from zerograd.testing.typecheck import run_mypy

OP_MODULES = [arithmetic, broadcast, elementwise, join, linalg, reduction, shape]


def _declared_for_type_checkers() -> dict[str, ast.FunctionDef]:
    """The functions of ``if TYPE_CHECKING:`` in Variable's class body, by name."""
    tree = ast.parse(Path(zerograd.variable.__file__).read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Variable"]
    return {
        f.name: f
        for block in cls.body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for f in block.body
        if isinstance(f, ast.FunctionDef)
    }


def _shape(sig: inspect.Signature, drop_first: bool) -> list[tuple[Any, bool]]:
    params = list(sig.parameters.values())[1 if drop_first else 0 :]
    return [(p.kind, p.default is not p.empty) for p in params]


def test_every_installed_method_and_operator_is_declared_for_type_checkers():
    declared = _declared_for_type_checkers()
    assert sorted(declared) == sorted(OP_METHODS)


@pytest.mark.parametrize("name", sorted(OP_METHODS))
def test_each_declaration_takes_what_the_installed_method_takes(name):
    stub = _declared_for_type_checkers().get(name)
    assert stub is not None, f"Variable.{name} is installed but not declared for type checkers"
    installed = OP_METHODS[name]
    is_property = any(ast.unparse(d) == "property" for d in stub.decorator_list)
    assert is_property == isinstance(installed, property)
    if is_property:
        return
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module([stub], []), "<stub>", "exec"), namespace)  # annotations are lazy
    mine = inspect.signature(namespace[name])
    theirs = inspect.signature(installed)
    assert _shape(mine, True) == _shape(theirs, True)
    if not name.startswith("__"):  # a method's keywords are its API; an operator's are not
        assert list(mine.parameters)[1:] == list(theirs.parameters)[1:]


def test_data_is_any_so_that_expressions_of_it_type_check():
    # __init__ assigns None or an array: inferred from there, x.data is "Any | None" and
    # a checker refuses -x.data, np.allclose(x.data, ...), x.data + 1
    assert typing.get_type_hints(Variable)["data"] is Any


def _all_statements(module: Any) -> list[ast.stmt]:
    tree = ast.parse(Path(module.__file__).read_text())
    return [
        n
        for n in tree.body
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        and "__all__"
        in {ast.unparse(t) for t in getattr(n, "targets", [getattr(n, "target", None)])}
    ]


@pytest.mark.parametrize("module", OP_MODULES, ids=lambda m: m.__name__)
def test_an_op_modules_all_is_a_literal_list_naming_each_of_its_ops(module):
    # a computed __all__ (exported(__name__)) is empty to mypy: `F.sin` was "Module has no
    # attribute", `from zerograd.functions import sin` an error
    (stmt,) = _all_statements(module)
    value = stmt.value
    assert isinstance(value, ast.List), f"{module.__name__}.__all__ = {ast.unparse(value)}"
    assert all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts)
    assert [e.value for e in value.elts] == module.__all__
    missing = sorted(set(exported(module.__name__)) - set(module.__all__))
    assert not missing, f"{module.__name__}: list {missing} in its __all__"


USER_CODE = """
import numpy as np
from zerograd import Function, Variable

x = Variable(np.array([1.0, 2.0]))
y = x * 2.0 + 1.0
y = 2.0 * x - x / 3.0 + 1.0 / x - 1.0
y = x**2 + 2.0**x - x
y = x @ np.ones((2, 2)) + np.ones((2, 2)) @ x
y = x[0] + x[np.array([0, 0])]
y = x.sum() + x.sum(axis=0, keepdims=True) + x.mean() + x.max() + x.min()
y = x.reshape(2, 1).transpose() + x.reshape((1, 2)).T + x.matmul(x) + x.dot(x)
y.backward()
print(-x.data + 1, np.allclose(x.data, 1.0), x.argmax())
"""

FUNCTIONS_CODE = """
import numpy as np
import zerograd.functions as F
from zerograd import Function, Variable
from zerograd.functions import exp, sin

x = Variable(np.array([1.0, 2.0]))
y = F.sin(x) * x + F.sum(F.exp(x)) + F.matmul(x, x) + F.reshape(x, (2, 1)).sum()
y = sin(x) + exp(x) + F.cos(x) + F.tanh(x) + F.concatenate([x, x]).sum()
"""


def test_mypy_accepts_variable_arithmetic_and_tensor_methods(tmp_path):
    result = run_mypy(USER_CODE, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_accepts_the_functions_of_zerograd_functions(tmp_path):
    result = run_mypy(FUNCTIONS_CODE, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", ["forward", "backward", "kernel"])
def test_a_method_subclasses_override_takes_anything_so_that_every_override_type_checks(name):
    # (self, *xs: Any) alone made pyright refuse the book's `def forward(self, x)`:
    # "Method forward overrides class Function in an incompatible manner"
    method = getattr(Function, name)
    params = list(inspect.signature(method).parameters.values())[1:]
    assert [p.kind for p in params] == [
        inspect.Parameter.VAR_POSITIONAL,
        inspect.Parameter.VAR_KEYWORD,
    ]
    hints = typing.get_type_hints(method)
    assert [hints[p.name] for p in params] == [Any, Any]
