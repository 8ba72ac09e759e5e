"""Variable: properties, operators with every operand kind, dtype rules, errors."""

import numpy as np
import pytest

import zerograd
import zerograd.functions as F
from zerograd import Parameter, Variable, as_array, as_variable


def test_properties_and_repr():
    x = Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), name="x")
    assert (x.shape, x.ndim, x.size, x.dtype, len(x)) == ((2, 3), 2, 6, np.float64, 2)
    assert repr(x) == "variable([[1. 2. 3.]\n          [4. 5. 6.]])"
    assert repr(Variable(None)) == "variable(None)"
    assert x.T.shape == (3, 2)
    assert x.reshape(3, 2).shape == x.reshape((3, 2)).shape == (3, 2)
    assert x.transpose().shape == (3, 2) and x.transpose(1, 0).shape == (3, 2)
    assert Variable(np.array(2.5)).item() == 2.5
    assert isinstance(Parameter(np.ones(1)), Variable)
    m = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(x.matmul(m.T).data, x.data @ m.T)
    np.testing.assert_array_equal(x.dot(m.T).data, x.data @ m.T)


@pytest.mark.parametrize(
    "expr, expected",
    [
        (lambda x: x + 1, 4.0),
        (lambda x: 1 + x, 4.0),
        (lambda x: x - 1, 2.0),
        (lambda x: 1 - x, -2.0),
        (lambda x: x * 2, 6.0),
        (lambda x: 2 * x, 6.0),
        (lambda x: x / 2, 1.5),
        (lambda x: 6 / x, 2.0),
        (lambda x: x**2, 9.0),
        (lambda x: 2**x, 8.0),
        (lambda x: -x, -3.0),
        (lambda x: np.array([1.0]) + x, 4.0),
        (lambda x: x + np.array([1.0]), 4.0),
        (lambda x: np.array([2.0]) * x, 6.0),
        (lambda x: np.array([6.0]) / x, 2.0),
        (lambda x: np.array([1.0]) - x, -2.0),
        (lambda x: np.array([2.0]) ** x, 8.0),
    ],
)
def test_operators_with_scalars_and_arrays_on_either_side(expr, expected):
    y = expr(Variable(np.array([3.0])))
    assert isinstance(y, Variable)
    np.testing.assert_allclose(y.data, [expected])


def test_numpy_array_on_the_left_of_matmul_gives_variable():
    y = np.eye(2) @ Variable(np.ones((2, 2)))
    assert isinstance(y, Variable)
    np.testing.assert_array_equal(y.data, np.ones((2, 2)))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_python_scalars_keep_the_dtype(dtype):
    x = Variable(np.ones(3, dtype))
    for y in (x + 1.0, 1.0 + x, x * 2, 2.5 * x, x / 3.0, 1.0 / x, x - 1, 1 - x, x**2, 2.0**x):
        assert y.dtype == np.dtype(dtype)
    y = F.sum(x * 3.0 + 1)
    y.backward()
    assert x.grad.dtype == np.dtype(dtype)


def test_int_scalar_with_int_array_stays_int_and_float_scalar_promotes():
    x = Variable(np.arange(3, dtype=np.int32))
    assert (x + 1).dtype == np.int32
    assert (x * 0.5).dtype == np.float64


def test_as_array_and_as_variable():
    assert isinstance(as_array(1.0), np.ndarray)
    assert as_array(1.0, like=np.ones(1, np.float32)).dtype == np.float32
    assert as_array([1, 2], np).tolist() == [1, 2]
    v = Variable(np.ones(1))
    assert as_variable(v) is v
    assert isinstance(as_variable(np.ones(1)), Variable)


@pytest.mark.parametrize("bad", [1.0, [1.0, 2.0], "text", {"a": 1}])
def test_variable_rejects_non_arrays_with_a_hint(bad):
    with pytest.raises(TypeError, match=r"Variable\(data\): data must be an array .*Wrap"):
        Variable(bad)


def test_shape_mismatch_names_operation_and_shapes():
    a, b = Variable(np.ones((2, 3))), Variable(np.ones((4, 3)))
    with pytest.raises(ValueError, match=r"Add: shapes \(2, 3\) and \(4, 3\) do not broadcast"):
        _ = a + b
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(4, 3\) do not line up"):
        F.matmul(a, b)
    with pytest.raises(ValueError, match=r"reshape: cannot reshape an array of shape \(2, 3\)"):
        F.reshape(a, (4, 2))
    with pytest.raises(ValueError, match=r"sum: axis 2 is out of range"):
        F.sum(a, axis=2)
    with pytest.raises(ValueError, match=r"transpose: axes \(0, 0\) are not a permutation"):
        F.transpose(a, (0, 0))
    with pytest.raises(ValueError, match=r"broadcast_to: cannot go from shape \(2, 3\) to"):
        F.broadcast_to(a, (3, 3))
    with pytest.raises(ValueError, match=r"sum_to: cannot go from shape \(2, 3\) to \(4,\)"):
        F.sum_to(a, (4,))
    with pytest.raises(ValueError, match=r"concatenate: shapes .* differ outside axis 0"):
        F.concatenate([a, Variable(np.ones((2, 2)))])
    with pytest.raises(ValueError, match=r"stack: all inputs must have one shape"):
        F.stack([a, b])


def test_failed_op_leaves_graph_untouched():
    a = Variable(np.ones((2, 3)))
    with pytest.raises(ValueError):
        F.matmul(a, Variable(np.ones((2, 3))))
    assert a.creator is None and a.generation == 0
    y = a * 2
    y.backward()
    np.testing.assert_array_equal(a.grad.data, np.full((2, 3), 2.0))


def test_public_names_of_dezero_exist():
    for name in (
        "Variable",
        "Parameter",
        "Function",
        "Config",
        "using_config",
        "no_grad",
        "test_mode",
        "as_variable",
        "as_array",
    ):
        assert hasattr(zerograd, name), name


@pytest.mark.parametrize("fn", [F.tanh, F.sin, F.cos, F.exp, F.square, lambda v: v**2])
def test_zero_d_float32_gradients_stay_float32(fn):
    x = Variable(np.array(0.5, np.float32))
    fn(x).backward()
    assert x.grad.dtype == np.float32


def test_dropping_an_intermediate_array_keeps_broadcast_backward_working():
    x, b = Variable(np.ones((2, 3))), Variable(np.ones(3))
    t = x * 2.0
    y = t + b
    t.data = None  # DeZero's memory trick in linear_simple
    y.backward()
    np.testing.assert_array_equal(b.grad.data, [2.0, 2.0, 2.0])


def test_len_and_item_need_no_array_methods():
    assert len(Variable(np.zeros((3, 2)))) == 3
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d variable"):
        len(Variable(np.array(1.0)))
    assert Variable(np.array([2.5], np.float32)).item() == 2.5


def test_backend_answers_dtype_kind_and_indexing():
    b = zerograd.backends.get_backend("numpy")
    kinds = [b.dtype_kind(np.dtype(t)) for t in ("bool", "int8", "uint8", "float32", "complex64")]
    assert kinds == ["b", "i", "u", "f", "c"]
    x = np.arange(6.0).reshape(3, 2)
    assert b.getitem(x, np.array([0, 0, 2])).tolist() == [[0, 1], [0, 1], [4, 5]]
