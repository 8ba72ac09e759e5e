"""Assigning ``data`` and ``grad`` by hand, and handing Variables to numpy."""

import copy
import pickle
import re

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Parameter, Variable


@pytest.mark.parametrize(
    "value, text",
    [
        ("abc", r"^Parameter\.data = \.\.\.: data must be an array of an installed backend, got "),
        ([1.0, 2.0], r"^Parameter\.data = \.\.\.: data must be an array .* got builtins\.list"),
        (np.array(["a", "b"]), r"^Parameter\.data = \.\.\.: data has dtype <U1, which zerograd"),
        (Variable(np.ones(2)), r"^Parameter\.data = \.\.\.: got a Variable .* assign its array"),
    ],
)
def test_parameter_data_assignments_are_checked_and_change_nothing(value, text):
    p = Parameter(np.array([1.0, 2.0]), name="W")
    before = p.data
    with pytest.raises(TypeError, match=text):
        p.data = value
    assert p.data is before
    np.testing.assert_array_equal(p.data, [1.0, 2.0])


def test_a_numpy_scalar_assigned_to_parameter_data_becomes_a_0d_array():
    p = Parameter(np.ones((2, 2)))
    p.data = np.float64(2.0)
    assert type(p.data) is np.ndarray and p.data.shape == () and p.data == 2.0
    assert (p * 3).data == 6.0
    p.data = None  # DeZero's way of releasing memory stays allowed
    assert p.data is None


def test_parameter_grad_must_be_a_variable_or_none():
    p = Parameter(np.ones((2, 2)))
    g = Variable(np.full((2, 2), 3.0))
    p.grad = g
    for bad, kind in ((np.ones((2, 2)), "numpy.ndarray"), ("xyz", "builtins.str")):
        with pytest.raises(
            TypeError,
            match=rf"^Parameter\.grad = \.\.\.: a gradient must be a Variable or None, got "
            rf"{kind}; wrap an array as Variable\(array\)\.$",
        ):
            p.grad = bad
        assert p.grad is g
    p.grad = None
    assert p.grad is None


def test_checked_parameters_still_train_pickle_and_deepcopy():
    p = Parameter(np.array([1.0, 2.0]), name="w")
    F.sum(p * p).backward()
    np.testing.assert_array_equal(p.grad.data, [2.0, 4.0])
    for q in (pickle.loads(pickle.dumps(p)), copy.deepcopy(p)):
        assert type(q) is Parameter and q.name == "w"
        np.testing.assert_array_equal(q.data, [1.0, 2.0])
        np.testing.assert_array_equal(q.grad.data, [2.0, 4.0])
        with pytest.raises(TypeError, match=r"Parameter\.data = \.\.\."):
            q.data = "abc"


def test_data_that_is_not_an_array_is_named_at_the_next_operation():
    x = Variable(np.array([1.0, 2.0]))
    x.data = "abc"  # plain Variables are not checked on assignment: the hot path stays fast
    for op, name in ((F.exp, "Exp"), (lambda v: v + 1, "Add")):
        with pytest.raises(
            TypeError,
            match=rf"^{name}: input 0 is a Variable whose data is builtins\.str \('abc'\), "
            rf"not an array of an installed backend; assign arrays to x\.data",
        ):
            op(x)


def test_a_grad_that_is_not_a_variable_is_named_by_backward_and_grads_are_restored():
    x = Variable(np.array([1.0, 2.0]), name="x")
    h = x * 2
    y = F.sum(h + x)
    x.grad = "xyz"
    with pytest.raises(
        TypeError,
        match=r"^backward: the variable 'x' holds a grad of type builtins\.str, not a "
        r"Variable; a gradient must be a Variable or None",
    ):
        y.backward()
    assert x.grad == "xyz" and h.grad is None and y.grad is None
    x.cleargrad()
    y.backward()
    np.testing.assert_array_equal(x.grad.data, [3.0, 3.0])


def test_numpy_array_of_a_variable_is_its_data():
    x = Variable(np.array([1.0, 2.0]))
    a = np.array(x)
    assert a.dtype == np.float64 and a.shape == (2,)
    np.testing.assert_array_equal(a, [1.0, 2.0])
    a[0] = 9.0  # np.array copies: the Variable is untouched
    np.testing.assert_array_equal(x.data, [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(x, dtype=np.float32), np.float32([1.0, 2.0]))
    np.testing.assert_array_equal(np.array([Variable(np.array(1.0)), 2.0]), [1.0, 2.0])
    with pytest.raises(TypeError, match=r"numpy\.asarray\(\) of a Variable whose data is None"):
        np.asarray(Variable(None))


@pytest.mark.parametrize("func", [np.sum, np.mean, np.concatenate, np.allclose])
def test_numpy_functions_refuse_variables_clearly(func):
    x = Variable(np.ones(2))
    args = ([x, x],) if func is np.concatenate else (x, x) if func is np.allclose else (x,)
    with pytest.raises(
        TypeError,
        match=rf"^numpy\.{func.__name__}\(\) got a zerograd Variable, and numpy functions do "
        rf"not record gradients: use zerograd's own function",
    ):
        func(*args)


def test_item_of_a_variable_with_several_elements_names_the_shape():
    assert Variable(np.array([[2.5]])).item() == 2.5
    with pytest.raises(
        TypeError, match=r"^item\(\) of a Variable needs exactly one element, got shape \(2,\)"
    ):
        Variable(np.ones(2)).item()


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("bad", [(1,), (2, 2)])
def test_a_held_grad_of_another_shape_is_refused_and_nothing_changes(create_graph, bad):
    # adding onto it would broadcast: (1,) to the variable's (2,), or (2, 2) past it
    x = Variable(np.array([1.0, 2.0]), name="x")
    held = Variable(np.full(bad, 5.0))
    x.grad = held
    y = F.sum(x * 3.0)
    with pytest.raises(
        ValueError,
        match=rf"^backward: the variable 'x' of shape \(2,\) holds a grad of shape "
        rf"{re.escape(str(bad))}; the new gradient is added onto the one held, so it must "
        rf"have the variable's shape\. Assign one of shape \(2,\), or call cleargrad\(\)",
    ):
        y.backward(create_graph=create_graph)
    assert x.grad is held and y.grad is None
    np.testing.assert_array_equal(held.data, np.full(bad, 5.0))
    x.grad = Variable(np.array([1.0, 1.0]))  # the right shape accumulates, as in DeZero
    y.backward(create_graph=create_graph)
    np.testing.assert_array_equal(x.grad.data, [4.0, 4.0])
