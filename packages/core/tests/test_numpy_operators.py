"""numpy meeting a Variable: operators (a graph for new results, the data in place), numpy()."""

import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zerograd import Parameter, Variable
from zerograd.backends import as_numpy

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]
IN_PLACE = [operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ipow]


@pytest.mark.parametrize("op", BINARY + [operator.matmul])
def test_array_op_variable_records_a_graph(op):
    a = np.array([[1.5, 2.0], [0.5, 3.0]])
    x = Variable(np.array([[2.0, 0.5], [1.0, 1.5]]))
    y = op(a, x)
    assert isinstance(y, Variable) and y.creator is not None
    np.testing.assert_allclose(y.data, op(a, x.data), rtol=1e-15)
    y.sum().backward()
    eps = 1e-6
    for i in np.ndindex(x.shape):  # central differences of sum(op(a, x)) in each element
        hi, lo = x.data.copy(), x.data.copy()
        hi[i] += eps
        lo[i] -= eps
        want = (op(a, hi).sum() - op(a, lo).sum()) / (2 * eps)
        assert x.grad.data[i] == pytest.approx(want, rel=1e-6)


def test_numpy_scalar_op_variable_keeps_float32_and_the_graph():
    x = Variable(np.array([1.0, 2.0], np.float32))
    y = np.float32(3.0) * x
    assert isinstance(y, Variable) and y.creator is not None and y.dtype == np.float32
    np.testing.assert_array_equal(y.data, np.float32([3.0, 6.0]))


@pytest.mark.parametrize("op", IN_PLACE)
def test_in_place_array_op_variable_updates_the_array_with_the_data(op):
    a = np.array([1.5, 2.0, 4.0], np.float32)
    before = a
    x = Variable(np.array([2.0, 0.5, 0.25], np.float32))
    want = op(a.copy(), x.data)
    a = op(a, x)
    assert a is before and type(a) is np.ndarray and a.dtype == np.float32
    np.testing.assert_array_equal(a, want)
    np.testing.assert_array_equal(x.data, np.float32([2.0, 0.5, 0.25]))  # the operand: as is


def test_the_books_update_on_a_variable_and_a_parameter():
    for cls in (Variable, Parameter):
        x = cls(np.array(3.0))
        (x * x).backward()
        data = x.data
        x.data -= 0.1 * x.grad  # steps 28 and 29: the gradient is a Variable
        assert x.data is data and x.data == pytest.approx(3.0 - 0.1 * 6.0)
        assert type(x.data) is np.ndarray and x.creator is None


def test_comparisons_give_arrays_and_equality_stays_identity():
    a = np.array([1.0, 2.0, 3.0])
    x = Variable(np.array([2.0, 2.0, 2.0]))
    np.testing.assert_array_equal(a < x, [True, False, False])
    np.testing.assert_array_equal(a <= x, [True, True, False])
    np.testing.assert_array_equal(a > x, [False, False, True])
    np.testing.assert_array_equal(a >= x, [False, True, True])
    assert (a == x) is False and (a != x) is True  # as Variable == Variable: identity


def test_ufunc_at_and_out_read_the_variables_data():
    a = np.zeros(3)
    np.add.at(a, [0, 0, 2], Variable(np.array([1.0, 2.0, 5.0])))
    np.testing.assert_array_equal(a, [3.0, 0.0, 5.0])
    out = np.empty(2)
    assert np.exp(Variable(np.array([0.0, 1.0])), out=out) is out
    np.testing.assert_allclose(out, [1.0, np.e])


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda x: np.exp(x), "exp"),
        (lambda x: np.add.reduce(x), r"add\.reduce"),
        (lambda x: np.ones(2) // x, "floor_divide"),
        (lambda x: np.add(np.ones(2), x, dtype="float32"), "add"),  # not an operator: no dtype
    ],
)
def test_other_ufuncs_on_a_variable_are_refused_clearly(call, name):
    x = Variable(np.array([1.0, 2.0]))
    with pytest.raises(
        TypeError,
        match=rf"^numpy\.{name}\(\) got a zerograd Variable, and numpy functions do not record "
        rf"gradients: use zerograd's own function",
    ):
        call(x)


def test_a_variable_as_out_is_refused_and_nothing_changes():
    x = Variable(np.array([1.0, 2.0]))
    data = x.data.copy()
    with pytest.raises(TypeError, match=r"^numpy\.add\(\): a Variable cannot be written into"):
        np.add(np.ones(2), np.ones(2), out=(x,))
    np.testing.assert_array_equal(x.data, data)


def test_an_in_place_update_that_numpy_cannot_cast_changes_nothing():
    a = np.array([1, 2, 3])
    with pytest.raises(TypeError, match=r"Cannot cast ufunc 'subtract' output"):
        a -= Variable(np.array([0.5, 0.5, 0.5]))
    np.testing.assert_array_equal(a, [1, 2, 3])
    with pytest.raises(TypeError, match=r"a numpy in-place operation got a Variable whose data"):
        a += Variable(None)
    np.testing.assert_array_equal(a, [1, 2, 3])


@pytest.mark.parametrize("shape", [(), (1,), (2, 3)])
def test_numpy_gives_the_data_as_a_host_numpy_array(arr, to_np, shape):
    values = np.arange(float(np.prod(shape))).reshape(shape).astype(np.float32)
    x = Variable(arr(values, "float32"))
    y = x * 2
    a = y.numpy()
    assert type(a) is np.ndarray and a.shape == shape and a.dtype == np.float32
    np.testing.assert_array_equal(a, values * 2)
    np.testing.assert_array_equal(a, to_np(y))
    if type(y.data) is np.ndarray:  # on the numpy backend: the data itself, as torch shares
        assert a is y.data
    assert y.creator is not None  # reading the values leaves the graph alone
    assert as_numpy(x).shape == shape


def test_numpy_of_an_empty_variable_says_so():
    with pytest.raises(TypeError, match=r"^numpy\(\) of a Variable whose data is None; give it"):
        Variable(None).numpy()


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=1, base_shape=(2, 3), max_dims=3),
    op=st.sampled_from(IN_PLACE),
    dtype=st.sampled_from(["float32", "float64"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_in_place_updates_with_a_variable_match_those_with_its_array(shapes, op, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 2.0, shapes.result_shape).astype(dtype)
    b = rng.uniform(0.5, 2.0, shapes.input_shapes[0]).astype(dtype)
    want = op(a.copy(), b)
    got = a
    got = op(got, Variable(b))
    assert got is a and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # bit for bit: the same numpy operation
