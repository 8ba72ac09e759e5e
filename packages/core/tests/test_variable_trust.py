"""The Variable API as PyTorch and DeZero users use it: no silent sharing, clear errors."""

from __future__ import annotations

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Parameter, Variable


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("seed_kind", ["variable", "array"])
def test_a_preset_seed_is_not_handed_on_as_a_leaf_gradient(create_graph, seed_kind):
    # add passes its output gradient through unchanged: the leaf must get its own copy,
    # not the user's seed (which y no longer holds once backward cleared it)
    x = Variable(np.array([1.0, 2.0]))
    y = x + 1.0
    seed = np.array([3.0, 5.0])
    g = Variable(seed) if seed_kind == "variable" else seed
    y.grad = g
    y.backward(create_graph=create_graph)
    assert x.grad is not g
    np.testing.assert_array_equal(x.grad.data, [3.0, 5.0])
    x.grad.data += 10.0  # the user's in-place edit of one gradient
    np.testing.assert_array_equal(seed, [3.0, 5.0])


def test_a_preset_seed_stays_y_s_own_under_retain_grad():
    x = Variable(np.array([1.0, 2.0]))
    y = x + 1.0
    g = Variable(np.array([3.0, 5.0]))
    y.grad = g
    y.backward(retain_grad=True)
    assert y.grad is g
    x.grad.data += 10.0
    np.testing.assert_array_equal(g.data, [3.0, 5.0])


def test_backward_of_a_variable_without_data_says_so():
    x = Variable(None)
    with pytest.raises(TypeError, match=r"backward\(\) of a Variable whose data is None"):
        x.backward()
    assert x.grad is None


@pytest.mark.parametrize("prop", ["shape", "ndim", "size", "dtype"])
def test_array_properties_of_a_variable_without_data_say_so(prop):
    x = Variable(None)
    with pytest.raises(AttributeError, match=rf"x\.{prop} of a Variable whose data is None"):
        getattr(x, prop)
    assert not hasattr(x, prop)  # still an AttributeError: getattr(x, prop, default) works


def test_len_of_a_variable_without_data_says_so():
    with pytest.raises(TypeError, match=r"len\(\) of a Variable whose data is None"):
        len(Variable(None))


def _reshaped_sum(a, b):
    return F.reshape(a, (1, 2)) + F.reshape(b, (1, 2))


def _transposed_sum(a, b):
    return a + F.transpose(b)


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize(("shape", "join"), [((2,), _reshaped_sum), ((2, 2), _transposed_sum)])
def test_leaf_gradients_never_share_memory(create_graph, shape, join):
    """A gradient object belongs to one variable, its memory too: the reshape and transpose
    derivatives give views of the one gradient add passes on, and changing one leaf's in
    place (a.grad.data *= 0.5) silently changed the other's."""
    a = Variable(np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape))
    b = Variable(np.full(shape, 2.0))
    y = join(a, b)
    F.sum(y * y).backward(create_graph=create_graph)
    want_b = np.array(b.grad.data, copy=True)
    assert not np.shares_memory(a.grad.data, b.grad.data)
    a.grad.data *= 0.5
    np.testing.assert_array_equal(b.grad.data, want_b)


def test_a_retained_gradient_and_a_leaf_view_of_it_are_apart():
    x = Variable(np.arange(4.0).reshape(2, 2))
    y = F.reshape(x, (4,))
    F.sum(y * y).backward(retain_grad=True)
    assert not np.shares_memory(x.grad.data, y.grad.data)
    np.testing.assert_array_equal(x.grad.data, 2 * np.arange(4.0).reshape(2, 2))


@pytest.mark.parametrize("create_graph", [False, True])
def test_every_leaf_gradient_is_writable(create_graph):
    """sum's derivative broadcasts (a read-only view of stride 0): x.grad.data += 1 met
    numpy's "output array is read-only", where PyTorch's gradients are plain tensors."""
    x = Variable(np.ones(3))
    y = Variable(np.ones((2, 3)))
    F.sum(x).backward(create_graph=create_graph)
    F.sum(y + x).backward(create_graph=create_graph)
    for v, want in ((x, 3.0), (y, 1.0)):
        v.grad.data += 1
        np.testing.assert_array_equal(v.grad.data, np.full(v.shape, want + 1))


@pytest.mark.parametrize(
    ("compare", "op"),
    [
        (lambda x: x < 1, "<"),
        (lambda x: x <= 1, "<="),
        (lambda x: x > 1, ">"),
        (lambda x: x >= 1, ">="),
        (lambda x: 1 < x, ">"),  # Python asks x.__gt__(1)
        (lambda x: np.array(1.0) >= x, "<="),
        (lambda x: Variable(np.ones(2)) < x, "<"),  # the other operand has no data
    ],
)
def test_comparisons_of_a_variable_without_data_say_so(compare, op):
    # they said "'>' not supported between instances of 'NoneType' and 'int'"
    x = Variable(None)
    with pytest.raises(TypeError, match=rf"^x {op} \.\.\. of a Variable whose data is None; give"):
        compare(x)
    assert x.data is None
    assert (Variable(np.array([0.0, 2.0])) < 1).tolist() == [True, False]


def _roundtrip(v):
    import pickle

    return pickle.loads(pickle.dumps(v))


@pytest.mark.parametrize("how", ["pickle", "deepcopy", "copy"])
def test_a_copy_of_a_non_leaf_is_a_leaf_with_its_data_name_and_grad(how):
    """pickle.dumps(y) failed ("cannot pickle 'weakref.ReferenceType' object"), and a
    deepcopy kept a copy of the creator whose outputs are the original's, so its
    backward() said the graph was used again."""
    import copy

    copier = {"pickle": _roundtrip, "deepcopy": copy.deepcopy, "copy": copy.copy}[how]
    x = Variable(np.array([1.0, 2.0]))
    y = x * x
    y.name = "y"
    F.sum(y).backward(retain_grad=True)
    z = copier(y)
    assert type(z) is Variable and z.creator is None and z.generation == 0
    assert z.name == "y"
    np.testing.assert_array_equal(z.data, [1.0, 4.0])
    np.testing.assert_array_equal(z.grad.data, [1.0, 1.0])
    assert np.shares_memory(z.data, y.data) == (how == "copy")  # copy.copy: shallow
    assert y.creator is not None and y.generation == 1  # the original keeps its graph
    z.cleargrad()
    F.sum(z * z).backward()  # z is a leaf now
    np.testing.assert_array_equal(z.grad.data, [2.0, 8.0])
    x.cleargrad()
    y.cleargrad()  # retained by the first backward
    F.sum(y).backward()  # the original graph still works
    np.testing.assert_array_equal(x.grad.data, [2.0, 4.0])


def test_a_copied_gradient_of_a_second_order_graph_has_no_graph_either():
    import copy

    x = Variable(np.array(3.0))
    y = x**3
    y.backward(create_graph=True)
    assert x.grad.creator is not None
    g = _roundtrip(x)
    assert g.grad.creator is None
    assert float(g.grad.data) == 27.0
    assert copy.deepcopy(x).grad.creator is None


@pytest.mark.parametrize("kind", [Variable, Parameter])
def test_a_shallow_copy_has_a_gradient_variable_of_its_own_on_the_same_array(kind):
    """copy.copy(x) stored x's gradient Variable in two places: rebinding the copy's
    gradient array (x2.grad.data = ..., as Variable.to() does) rebound the original's,
    and a gradient recorded with create_graph=True kept its graph in the copy."""
    import copy

    x = kind(np.array([1.0, 2.0]))
    F.sum(x**3).backward(create_graph=True)
    x2 = copy.copy(x)
    assert type(x2) is kind and x2.data is x.data  # shallow: the same arrays
    assert x2.grad is not x.grad and x2.grad.data is x.grad.data
    assert x2.grad.creator is None and x.grad.creator is not None
    x2.grad.data = np.zeros(2)
    np.testing.assert_array_equal(x.grad.data, [3.0, 12.0])
