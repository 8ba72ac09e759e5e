"""The engine as a user meets it, adversarially: book-style Functions that misbehave,
user vjps that break their own promises, ``op()`` given bad names, ``unchain()`` midway,
a Function object called twice. Each case checks the value (against a hand derivative),
the error's words, and that a refused call changed nothing."""

import sys

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Function, Variable
from zerograd.functions.ops import OP_METHODS, OPS, op


class _Twice(Function):
    """A book-style Function whose backward returns a raw array (the book's step 9 style)."""

    def forward(self, x):
        return x * 2

    def backward(self, gy):
        return 2 * gy.data


def test_a_book_backward_returning_an_array_gives_a_variable_grad_under_create_graph():
    x = Variable(np.array([1.0, 2.0, 3.0]))
    _Twice()(x).sum().backward(create_graph=True)
    assert isinstance(x.grad, Variable)
    np.testing.assert_array_equal(x.grad.data, [2.0, 2.0, 2.0])
    x2 = Variable(np.array([1.0, 2.0, 3.0]))
    _Twice()(x2).sum().backward()  # first order: as before
    assert isinstance(x2.grad, Variable)
    np.testing.assert_array_equal(x2.grad.data, [2.0, 2.0, 2.0])


def test_unchain_makes_a_held_intermediate_a_leaf_for_the_lean_function_after_it():
    """DeZero: after ``a.unchain()`` a is a leaf, and a backward through exp gives it exp(a)."""
    x = Variable(np.array([0.5, -1.0]))
    a = x * 2.0
    y = F.sum(F.exp(a))  # exp keeps only a's creator, not a
    a.unchain()
    y.backward()
    assert x.grad is None
    np.testing.assert_allclose(a.grad.data, np.exp([1.0, -2.0]), rtol=1e-15)
    assert y.creator.inputs[0].creator.inputs[0] is a  # the graph reads a back, unchained
    del a
    y.backward()  # dropped now: its gradient goes nowhere, and not past the cut
    assert x.grad is None


def test_unchain_backward_makes_a_held_intermediate_a_leaf_for_a_branch_it_did_not_walk():
    """DeZero: ``z.unchain_backward()`` makes every variable upstream of ``z`` a leaf, so a
    backward from another branch (``w``, fed by ``h`` but not upstream of ``z``) gives
    ``h`` its gradient and stops there."""
    x = Variable(np.array([0.5, -1.0]))
    h = F.sin(x)
    z = F.exp(h)
    w = F.sum(F.tanh(h))  # tanh keeps only h's creator, and z's walk never passes tanh
    z.unchain_backward()
    w.backward()
    assert x.grad is None
    np.testing.assert_allclose(h.grad.data, 1 - np.tanh(np.sin([0.5, -1.0])) ** 2, rtol=1e-15)
    del h, z
    w.backward()  # dropped now: its gradient goes nowhere, and not past the cut
    assert x.grad is None


@pytest.mark.parametrize(
    "method", ["__setattr__", "__getattr__", "__class__", "__init_subclass__", "__repr__"]
)
def test_op_refuses_methods_that_python_itself_looks_up_and_changes_nothing(method):
    class Plus1(Function):
        def forward(self, x):
            return x + 1

        def vjp(self, xp, xs, y, gy):
            return gy

    before = (dict(OP_METHODS), dict(OPS), Variable.__dict__.get(method))
    with pytest.raises(ValueError, match=f"Variable.{method} is Variable's own"):
        op(Plus1, "plus1_trust", methods=(method,))
    assert (dict(OP_METHODS), dict(OPS), Variable.__dict__.get(method)) == before
    x = Variable(np.array(1.0))  # Variable still works
    assert (x * 2).data == 2.0


class _LeanSquare(Function):
    vjp_reads_inputs = False  # a promise its vjp breaks

    def forward(self, x):
        return x * x

    def vjp(self, xp, xs, y, gy):
        return 2 * xs[0] * gy


class _ExpNoY(Function):
    vjp_reads_outputs = False  # a promise its vjp breaks

    def forward(self, x):
        return np.exp(x)

    def vjp(self, xp, xs, y, gy):
        return y * gy


@pytest.mark.skipif(
    sys.version_info < (3, 11), reason="the flag is named in an exception note (Python 3.11+)"
)
def test_a_vjp_reading_what_it_said_it_does_not_read_names_the_flag():
    x = Variable(np.array(3.0))
    y = _LeanSquare()(x)
    with pytest.raises(TypeError) as info:
        y.backward()
    assert "vjp_reads_inputs = False" in "\n".join(getattr(info.value, "__notes__", []))
    assert x.grad is None and y.grad is None
    x = Variable(np.array(1.0))
    y = _ExpNoY()(x) + 1.0  # add keeps only the creator: the output's array is gone
    with pytest.raises(TypeError) as info:
        y.backward()
    assert "vjp_reads_outputs = False" in "\n".join(getattr(info.value, "__notes__", []))
    assert x.grad is None


class _Square(Function):
    def forward(self, x):
        return x**2

    def backward(self, gy):
        (x,) = self.inputs
        return 2 * x * gy


def test_a_function_object_called_twice_is_an_error_not_a_missing_gradient():
    f = _Square()
    x1, x2 = Variable(np.array(2.0)), Variable(np.array(3.0))
    y1 = f(x1)
    y2 = f(x2)
    with pytest.raises(RuntimeError, match=r"_Square .*called again"):
        y1.backward()
    assert x1.grad is None and x2.grad is None and y1.grad is None
    y2.backward()  # its latest call is a graph as any other
    assert x2.grad.data == 6.0


@pytest.mark.parametrize("make", [F.Exp, F.Tanh, F.Add])
def test_a_built_in_function_object_reused_then_joined_is_an_error_not_misrouted(make):
    """zerograd's lean functions (exp, tanh, add) keep only their inputs' creators: a
    reused object's two outputs summed sent both gradients to the latest call's input (and
    none to the first's), silently."""
    f = make()
    x1, x2 = Variable(np.array(1.0)), Variable(np.array(2.0))
    args = (lambda x: (x,)) if make is not F.Add else (lambda x: (x, x))
    y1, y2 = f(*args(x1)), f(*args(x2))
    z = y1 + y2
    with pytest.raises(
        RuntimeError, match=rf"the {make.__name__} that made a variable .*called again"
    ):
        z.backward()
    assert x1.grad is None and x2.grad is None and z.grad is None


def test_a_function_object_called_on_its_own_output_is_an_error_not_a_hang():
    # f(f(x)): f's latest call reads f's own output, so the graph is a cycle that a walk
    # would go round for ever; a cycle below the start (f -> g -> f under a new op) leaves
    # a gradient no function takes, which the walk names as above
    for make in (_Square, F.Exp):
        f = make()
        x = Variable(np.array(0.5))
        b = f(f(x))
        with pytest.raises(RuntimeError, match=rf"cycle through {make.__name__}: one"):
            b.backward()
        assert x.grad is None and b.grad is None
    f, g = _Square(), _Square()
    x = Variable(np.array(0.5))
    h = g(f(g(x)))  # g's latest call reads f's output, which reads g's first output
    y = F.exp(h)
    with pytest.raises(RuntimeError, match=r"called again"):
        y.backward()
    assert x.grad is None and y.grad is None


class _Words(Function):
    """A book-style Function whose backward returns something that is not numbers."""

    def __init__(self, what):
        self.what = what

    def forward(self, x):
        return x * 2

    def backward(self, gy):
        return self.what


@pytest.mark.parametrize("what", ["abc", object()], ids=["str", "object"])
@pytest.mark.parametrize("shape", [(), (2,)])
def test_a_gradient_that_is_not_numbers_is_refused_with_nothing_stored(what, shape):
    # a 0-d input took a string as its gradient (x.grad was variable(abc)); a vector one
    # got a shape error about shape ()
    x = Variable(np.ones(shape))
    y = F.sum(_Words(what)(x))
    refused = r"_Words.backward returned a gradient of dtype .*, not numbers"
    with pytest.raises(TypeError, match=refused):
        y.backward()
    assert x.grad is None and y.grad is None
