"""An op is defined once: its Function class and one line, and everything else follows."""

from __future__ import annotations

import inspect
import pydoc
from typing import Any

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Function, Variable, namespaces
from zerograd.backends import get_array_module
from zerograd.functions import ops
from zerograd.testing import gradient_check, numerical_grad


def test_generated_functions_have_the_signature_forward_and_init_give():
    assert str(inspect.signature(F.exp)) == "(x: 'ArrayLike') -> 'Variable'"
    assert str(inspect.signature(F.add)) == "(x0: 'ArrayLike', x1: 'ArrayLike') -> 'Variable'"
    assert list(inspect.signature(F.clip).parameters) == ["x", "x_min", "x_max"]
    assert list(inspect.signature(F.rsub).parameters) == ["x0", "x1"]
    # PyTorch's aliases follow the parameters; refused keywords are one catch-all
    assert list(inspect.signature(F.sum).parameters) == ["x", "axis", "keepdims", "dim", "keepdim"]
    assert str(inspect.signature(F.max)) == (
        "(x: 'ArrayLike', axis: 'Axis' = None, keepdims: 'bool' = False, **pytorch) -> 'Variable'"
    )


class _Scaled(Function):
    """Multiply by ``factor``."""

    def __init__(self, factor: float = 1.0) -> None:
        self.factor = factor

    def forward(self, x):
        return x * self.factor


def test_op_writes_pytorchs_aliases_and_refusals_into_the_function(monkeypatch):
    monkeypatch.setattr(ops, "OPS", dict(ops.OPS))  # the registry as it was, after the test
    scaled = ops.op(_Scaled, "scaled_alias", aliases={"scale": "factor"})
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(scaled(x, scale=3.0).data, [3.0, 6.0])
    np.testing.assert_array_equal(scaled(x, 2.0).data, [2.0, 4.0])
    with pytest.raises(ValueError, match=r"^scaled_alias: factor=2.0 and scale=3.0 name the same"):
        scaled(x, 2.0, scale=3.0)
    refusing = ops.op(_Scaled, "scaled_refusing", refuses={"alpha": "write factor="})
    with pytest.raises(TypeError) as caught:
        refusing(x, alpha=2.0)
    assert str(caught.value) == (
        "scaled_refusing: alpha= is PyTorch's keyword, not zerograd's (DeZero's): write factor=."
    )
    with pytest.raises(
        TypeError, match=r"^scaled_refusing\(\) got an unexpected keyword argument 'beta'$"
    ):
        refusing(x, beta=2.0)
    with pytest.raises(ValueError, match=r"the alias 'scale' must name a parameter of _Scaled"):
        ops.op(_Scaled, "scaled_bad", aliases={"scale": "size"})
    with pytest.raises(ValueError, match=r"^op: scaled_bad takes factor= itself"):
        ops.op(_Scaled, "scaled_bad", refuses={"factor": "no"})


def test_generated_functions_carry_their_docstring_into_help():
    doc = F.exp.__doc__
    assert doc.startswith("Compute e raised to the power of ``x``, elementwise.")
    assert "x: A Variable, array, scalar or list; integer data computes" in doc
    assert "A Variable of ``x``'s shape." in doc
    assert ">>> exp(np.array(0.0))\n    variable(1.0)" in doc
    # the class's own Args (its __init__'s) follow the input's
    clip = F.clip.__doc__
    where = [clip.index(t) for t in ("x: A Variable", "x_min: The lower", "Raises:")]
    assert where == sorted(where)
    text = pydoc.render_doc(F.tanh, renderer=pydoc.plaintext)
    assert "tanh(x: 'ArrayLike') -> 'Variable'" in text
    assert "Compute the hyperbolic tangent" in text


def test_the_examples_in_generated_docstrings_are_true():
    import doctest

    shown = [s.function for s in ops.OPS.values() if ">>>" in (s.function.__doc__ or "")]
    assert {F.exp, F.clip, F.add, F.div, F.sum} <= set(shown)
    for fn in shown:
        name = fn.__name__
        test = doctest.DocTestParser().get_doctest(fn.__doc__, {name: fn}, name, None, 0)
        result = doctest.DocTestRunner().run(test, out=lambda s: None)
        assert result.attempted and not result.failed, name


def test_generated_functions_compute_as_their_class():
    x = np.array([0.5, 1.5])
    assert np.array_equal(F.rsub(x, 2.0).data, 2.0 - x)
    assert np.array_equal(F.rdiv(x, 2.0).data, 2.0 / x)
    y = F.clip(Variable(np.array([-2.0, 0.5, 3.0])), 0.0, 1.0)
    assert isinstance(y.creator, F.Clip) and np.array_equal(y.data, [0.0, 0.5, 1.0])
    with pytest.raises(TypeError, match="give at least one of x_min and x_max"):
        F.clip(x, None, None)


def test_the_packages_names_and_variables_methods_follow_from_the_registry():
    for name, spec in ops.OPS.items():
        if spec.module.startswith("zerograd.functions."):
            assert name in F.__all__ and getattr(F, name) is spec.function, name
            for cls in spec.classes:
                assert cls.__name__ in F.__all__, cls
        for method in spec.methods:
            assert Variable.__dict__[method] is spec.function, method
    assert Variable.__add__ is F.add and Variable.__rmul__ is F.mul and Variable.sum is F.sum
    assert Variable.__rsub__ is F.rsub and Variable.__getitem__ is F.get_item


def test_the_names_a_vjp_may_call_follow_from_the_registry():
    in_vjp = {n for n, s in ops.OPS.items() if s.in_vjp}
    assert {"exp", "tanh", "matmul", "reshape", "sum", "sum_to"} <= in_vjp
    assert in_vjp <= set(namespaces.NAMES)
    assert namespaces.NAMES["exp"] == "Compute e raised to the power of ``x``, elementwise."
    assert namespaces.VARIABLE_OPS.exp is F.exp


# -- an op of one's own, in one place ----------------------------------------------------
class Softplus(Function):
    """Compute ``log(1 + exp(x))``, elementwise."""

    vjp_reads_outputs = False

    def forward(self, x: Any) -> Any:
        xp = get_array_module(x)
        return xp.maximum(x, 0) + xp.log(1 + xp.exp(-abs(x)))

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        (x,) = xs
        return gy / (1 + xp.exp(-x))


@pytest.fixture
def softplus():
    before = dict(ops.OPS), dict(ops.OP_METHODS)
    fn = ops.op(Softplus, methods=("softplus",))
    yield fn
    ops.OPS.clear()
    ops.OPS.update(before[0])
    ops.OP_METHODS.clear()
    ops.OP_METHODS.update(before[1])
    del Variable.softplus


def test_an_op_of_ones_own_is_a_function_a_method_and_differentiable(softplus):
    x = np.array([-3.0, -0.5, 0.0, 2.0, 30.0])
    assert np.allclose(softplus(x).data, np.log1p(np.exp(x)))
    v = Variable(x)
    y = v.softplus()
    assert isinstance(y.creator, Softplus)
    assert gradient_check(lambda t: softplus(t), x)
    # second order through the Variable namespace: d2/dx2 softplus = s(x) (1 - s(x))
    v = Variable(np.array([0.3, -1.2]))
    (g,) = [softplus(v)]
    g.backward(create_graph=True)
    gx = v.grad
    v.cleargrad()
    F.sum(gx).backward()
    s = 1 / (1 + np.exp(-v.data))
    assert np.allclose(v.grad.data, s * (1 - s))
    num = numerical_grad(lambda t: F.sum(softplus(t)), np.array([0.7]))
    assert np.allclose(num, 1 / (1 + np.exp(-0.7)), atol=1e-6)


def test_defining_an_op_again_in_its_module_replaces_it(softplus):
    # a notebook cell run twice: the same module defines the same name again
    again = ops.op(Softplus, methods=("softplus",))
    assert again is not softplus
    assert ops.OPS["softplus"].function is again and Variable.softplus is again


def test_a_clashing_name_or_method_is_refused_and_changes_nothing():
    before = dict(ops.OPS), dict(ops.OP_METHODS)

    class Exp(Function):
        def forward(self, x: Any) -> Any:
            return x

    with pytest.raises(ValueError, match="'exp' is already defined by zerograd.functions.elem"):
        ops.op(Exp)
    with pytest.raises(ValueError, match=r"Variable.__add__ is already defined by zerograd"):
        ops.op(Exp, "my_exp", methods=("__add__",))
    assert (dict(ops.OPS), dict(ops.OP_METHODS)) == before
    assert Variable.__add__ is F.add
    with pytest.raises(TypeError, match="op: give a Function subclass"):
        ops.op(len)

    class Optional(Function):
        def forward(self, x: Any, b: Any = None) -> Any:
            return x

    with pytest.raises(TypeError, match=r"Optional.forward's parameter 'b' is optional"):
        ops.op(Optional, "optional_op")
    assert "optional_op" not in ops.OPS


def test_a_malformed_definition_is_one_clear_error_and_registers_nothing():
    before = dict(ops.OPS), dict(ops.OP_METHODS)
    backward, data = Variable.backward, Variable.__dict__["data"]

    class NoForward(Function):
        pass

    cases = [
        (lambda: ops.op(NoForward), TypeError, r"^op: NoForward defines no forward; an op's"),
        (
            lambda: ops.op(Softplus, "soft plus"),
            ValueError,
            r"^op: its name must be a Python identifier, got 'soft plus'$",
        ),
        (lambda: ops.op(Softplus, "lambda"), ValueError, r"identifier, got 'lambda'$"),
        (
            lambda: ops.op(Softplus, methods="softplus"),
            TypeError,
            r"^op: methods must be a tuple of method names, e.g. methods=\('__add__',\)",
        ),
        (
            lambda: ops.op(Softplus, methods=("fine", "not fine")),
            ValueError,
            r"^op: a method name must be a Python identifier, got 'not fine'$",
        ),
        (
            lambda: ops.op(Softplus, methods=("backward",)),
            ValueError,
            r"^op: Variable.backward is Variable's own; give softplus another method name$",
        ),
        (lambda: ops.op(Softplus, methods=("data",)), ValueError, r"Variable.data is Variable's"),
        (lambda: ops.op(Softplus, methods=("__hash__",)), ValueError, r"__hash__ is Variable's"),
        (lambda: ops.op(Softplus, methods=("grad",)), ValueError, r"Variable.grad is Variable's"),
        (lambda: ops.op(Softplus, methods=("__eq__",)), ValueError, r"__eq__ is Variable's"),
        (lambda: ops.op(Softplus, doc=3), TypeError, r"^op: doc must be a string or None, got int"),
        (lambda: ops.op(Softplus, example="x"), TypeError, r"^op: example must be \(expression"),
        (lambda: ops.defines(methods="x"), TypeError, r"^op: methods must be a tuple"),
        (lambda: ops.variable_method("a b"), ValueError, r"^op: a method name must be a Python"),
    ]
    for make, error, message in cases:
        with pytest.raises(error, match=message):
            make()
    assert (dict(ops.OPS), dict(ops.OP_METHODS)) == before
    assert Variable.backward is backward and Variable.__dict__["data"] is data
    assert not hasattr(Variable, "fine")
