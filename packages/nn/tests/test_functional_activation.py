"""Activations and linear: values against numpy, gradients against numerical ones."""

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Variable
from zerograd.backends import as_numpy
from zerograd.testing import check_backward


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_functional_reexports_core_functions():
    import zerograd.functions as core

    for name in core.__all__:
        assert getattr(F, name) is getattr(core, name)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_values_and_dtype(rand, to_np, dtype):
    x = rand(3, 4, dtype=dtype) * 10
    expected = 1 / (1 + np.exp(-to_np(x).astype("float64")))
    for f in (F.sigmoid, F.sigmoid_simple):
        y = f(x)
        assert as_numpy(y).dtype == dtype
        np.testing.assert_allclose(to_np(y), expected, rtol=1e-5, atol=1e-6)


def test_sigmoid_saturates_without_overflow(arr, to_np):
    y = F.sigmoid(arr([-1000.0, 1000.0], "float32"))
    np.testing.assert_array_equal(to_np(y), [0.0, 1.0])


@pytest.mark.parametrize("f", [F.sigmoid, F.sigmoid_simple])
@pytest.mark.parametrize("order", [1, 2])
def test_sigmoid_grad(rand, f, order):
    check_backward(f, rand(3, 4), order=order)


def test_sigmoid_grad_float32(rand):
    check_backward(F.sigmoid, rand(3, 4, dtype="float32"))


def test_relu_values_and_grad(rand, arr, to_np):
    x = arr([[-2.0, 0.5], [3.0, -0.1]], "float32")
    y = F.relu(x)
    assert as_numpy(y).dtype == np.float32
    np.testing.assert_array_equal(to_np(y), [[0.0, 0.5], [3.0, 0.0]])
    xv = Variable(x)
    F.sum(F.relu(xv)).backward()
    np.testing.assert_array_equal(to_np(xv.grad), [[0.0, 1.0], [1.0, 0.0]])
    check_backward(F.relu, rand(4, 5) + 0.01, order=1)


def test_leaky_relu(arr, rand, to_np):
    x = arr([-2.0, 0.0, 3.0], "float32")
    y = F.leaky_relu(x)
    assert as_numpy(y).dtype == np.float32
    np.testing.assert_allclose(to_np(y), [-0.4, 0.0, 3.0], rtol=1e-6)
    np.testing.assert_allclose(to_np(F.leaky_relu(x, slope=0.1)), [-0.2, 0.0, 3.0], rtol=1e-6)
    check_backward(lambda v: F.leaky_relu(v, 0.3), rand(3, 4))
    check_backward(lambda v: F.leaky_relu(v, 0.3), rand(3, 4), order=2)


@pytest.mark.parametrize("axis", [1, 0, -1, -2])
def test_softmax_values_any_axis(rand, to_np, axis):
    x = rand(3, 4, 5)
    expected = np_softmax(to_np(x), axis)
    np.testing.assert_allclose(to_np(F.softmax(x, axis=axis)), expected, rtol=1e-10)
    np.testing.assert_allclose(to_np(F.softmax_simple(x, axis=axis)), expected, rtol=1e-10)


def test_softmax_default_axis_is_one(rand, to_np):
    x = rand(2, 3, 4)
    np.testing.assert_allclose(to_np(F.softmax(x)), np_softmax(to_np(x), 1), rtol=1e-10)


def test_softmax_large_inputs_and_float32(arr, to_np):
    y = F.softmax(arr([[1000.0, 1000.0], [-1000.0, 0.0]], "float32"))
    assert as_numpy(y).dtype == np.float32
    np.testing.assert_allclose(to_np(y), [[0.5, 0.5], [0.0, 1.0]])


def test_softmax_bad_axis_message(rand):
    with pytest.raises(ValueError, match=r"softmax: axis 3 is out of range .* 2 dimensions"):
        F.softmax(rand(2, 3), axis=3)


@pytest.mark.parametrize("axis", [1, -1, 0])
@pytest.mark.parametrize("order", [1, 2])
def test_softmax_grad(rand, axis, order):
    check_backward(lambda v: F.softmax(v, axis), rand(3, 4), order=order)
    check_backward(lambda v: F.softmax_simple(v, axis), rand(3, 4), order=order)


def test_log_softmax_values(rand, to_np):
    x = rand(3, 5) * 50
    for axis in (1, -1, 0):
        expected = np.log(np_softmax(to_np(x), axis))
        np.testing.assert_allclose(to_np(F.log_softmax(x, axis)), expected, rtol=1e-9, atol=1e-9)


def test_log_softmax_no_log_of_zero(arr, to_np):
    y = F.log_softmax(arr([[0.0, 2000.0]], "float32"))
    assert as_numpy(y).dtype == np.float32
    np.testing.assert_allclose(to_np(y), [[-2000.0, 0.0]])


@pytest.mark.parametrize("order", [1, 2])
def test_log_softmax_grad(rand, order):
    check_backward(lambda v: F.log_softmax(v, axis=-1), rand(3, 4), order=order)
    check_backward(F.log_softmax, rand(3, 4, dtype="float32"), order=1)


def test_logsumexp_helper(rand, to_np):
    x = rand(2, 3) * 100
    ref = np.log(np.exp(to_np(x) - 300).sum(axis=1, keepdims=True)) + 300
    np.testing.assert_allclose(to_np(F.logsumexp(x, axis=1)), ref, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linear_values(rand, to_np, dtype):
    x, W, b = rand(4, 3, dtype=dtype), rand(3, 2, dtype=dtype, seed=1), rand(2, dtype=dtype)
    expected = to_np(x) @ to_np(W) + to_np(b)
    for f in (F.linear, F.linear_simple):
        y = f(x, W, b)
        assert as_numpy(y).dtype == dtype
        np.testing.assert_allclose(to_np(y), expected, rtol=1e-5)
    np.testing.assert_allclose(to_np(F.linear(x, W)), to_np(x) @ to_np(W), rtol=1e-5)


@pytest.mark.parametrize("order", [1, 2])
def test_linear_grad(rand, order):
    x, W, b = rand(4, 3), rand(3, 2, seed=1), rand(2, seed=2)
    check_backward(F.linear, x, W, b, order=order)
    check_backward(F.linear, x, W, order=order)
    check_backward(F.linear_simple, x, W, b, order=order)


def test_linear_grad_float32_and_batched(rand):
    check_backward(F.linear, rand(4, 3, dtype="float32"), rand(3, 2, dtype="float32", seed=1))
    check_backward(F.linear, rand(2, 4, 3), rand(3, 2, seed=1), rand(2, seed=2))


def test_linear_shape_error(rand):
    with pytest.raises(ValueError, match=r"linear: x of shape \(4, 3\) and W of shape \(2, 2\)"):
        F.linear(rand(4, 3), rand(2, 2))


def test_embed_id(rand, arr, to_np):
    W = rand(5, 3)
    ids = arr([[0, 4], [4, 2]], "int64")
    y = F.embed_id(ids, W)
    np.testing.assert_array_equal(to_np(y), to_np(W)[to_np(ids)])
    check_backward(lambda w: F.embed_id(ids, w), W)


# -- integer inputs compute in floating point (never truncate) ----------------------------

INT_X = [[-2, 0, 2], [1, 3, -1]]


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint8", "bool"])
@pytest.mark.parametrize("f", [F.sigmoid, F.sigmoid_simple])
def test_sigmoid_of_integers(arr, to_np, f, dtype):
    x = np.array(INT_X).astype(dtype)
    y = f(arr(x, dtype))
    assert as_numpy(y).dtype == np.float64
    np.testing.assert_allclose(to_np(y), 1 / (1 + np.exp(-x.astype("float64"))), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["int64", "int16"])
def test_leaky_relu_of_integers_keeps_the_slope(arr, to_np, dtype):
    xv = Variable(arr(INT_X, dtype))
    y = F.leaky_relu(xv, slope=0.2)
    assert as_numpy(y).dtype == np.float64
    np.testing.assert_allclose(to_np(y), [[-0.4, 0.0, 2.0], [1.0, 3.0, -0.2]], rtol=1e-12)
    F.sum(y).backward()
    np.testing.assert_allclose(to_np(xv.grad), [[0.2, 0.2, 1.0], [1.0, 1.0, 0.2]])


@pytest.mark.parametrize("dtype", ["int64", "int8"])
@pytest.mark.parametrize(
    "f, ref",
    [
        (F.softmax, lambda x: np_softmax(x, 1)),
        (F.softmax_simple, lambda x: np_softmax(x, 1)),
        (F.log_softmax, lambda x: np.log(np_softmax(x, 1))),
    ],
)
def test_softmax_family_of_integers_computes_in_float64(arr, to_np, f, ref, dtype):
    y = f(arr(INT_X, dtype))
    assert as_numpy(y).dtype == np.float64  # int8 data would give float16 through exp
    np.testing.assert_allclose(to_np(y), ref(np.array(INT_X, dtype="float64")), rtol=1e-12)


def test_relu_of_integers_stays_exact(arr, to_np):
    y = F.relu(arr(INT_X, "int64"))  # exact in integers: nothing to round
    assert as_numpy(y).dtype == np.int64 and to_np(y).tolist() == [[0, 0, 2], [1, 3, 0]]


def test_embed_id_refuses_out_of_range_ids_and_changes_nothing(rand, arr, to_np):
    W = Variable(rand(5, 3))
    before = to_np(W).copy()
    for ids, bad in (([0, -1], -1), ([[5, 1]], 5), ([4, 7, -2], -2)):
        with pytest.raises(
            ValueError,
            match=rf"^embed_id: id {bad} is out of range for W of shape \(5, 3\): valid ids "
            r"are 0\.\.4 \(EmbedID's in_size is 5\)",
        ):
            F.embed_id(arr(ids, "int64"), W)
    np.testing.assert_array_equal(to_np(W), before)
    assert W.grad is None


def test_embed_id_types_and_shapes(rand, arr, to_np):
    W = rand(5, 3)
    with pytest.raises(
        TypeError,
        match=r"^embed_id: ids x must be integers, got dtype (array_api_strict\.|torch\.)?float64",
    ):
        F.embed_id(arr([1.0, 2.0]), W)
    with pytest.raises(
        TypeError,
        match=r"^embed_id: ids x must be integers, got dtype (array_api_strict\.|torch\.)?bool",
    ):
        F.embed_id(arr([True], "bool"), W)
    with pytest.raises(ValueError, match=r"^embed_id: W must be 2-D \(in_size, out_size\), got"):
        F.embed_id(arr([1], "int64"), rand(5))
    np.testing.assert_array_equal(to_np(F.embed_id([4, 0], W)), to_np(W)[[4, 0]])  # a list
    np.testing.assert_array_equal(to_np(F.embed_id(2, W)), to_np(W)[2])  # one id (0-d)
    assert F.embed_id(arr(np.zeros((0,)), "int64"), W).shape == (0, 3)  # no ids


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint64])
def test_embed_id_takes_a_numpy_integer_as_one_id(rand, to_np, dtype):
    # the id a loop over a numpy array of ids gives (DeZero's W[x] takes it); it raised
    # "numpy.int64 is not an array of any installed backend"
    W = Variable(rand(5, 3))
    y = F.embed_id(dtype(3), W)
    assert y.shape == (3,)
    np.testing.assert_array_equal(to_np(y), to_np(W)[3])
    F.sum(y * 2.0).backward()
    expected = np.zeros((5, 3))
    expected[3] = 2.0
    np.testing.assert_array_equal(to_np(W.grad), expected)
    with pytest.raises(ValueError, match=r"^embed_id: id 5 is out of range for W of shape"):
        F.embed_id(dtype(5), W)


# -- wrong types, empty and 0-d inputs -----------------------------------------------------


def test_leaky_relu_slope_must_be_a_number(rand, to_np):
    with pytest.raises(TypeError, match=r"^leaky_relu: slope must be a real number, got 'a'"):
        F.leaky_relu(rand(2, 2), "a")
    with pytest.raises(TypeError, match=r"^leaky_relu: slope must be a real number, got True"):
        F.leaky_relu(rand(2, 2), True)
    y = F.leaky_relu(rand(2, 2), np.float32(0.5))
    np.testing.assert_allclose(
        to_np(y), np.where(to_np(rand(2, 2)) > 0, 1, 0.5) * to_np(rand(2, 2))
    )


@pytest.mark.parametrize("f", [F.softmax, F.log_softmax])
def test_softmax_axis_errors(rand, f):
    name = f.__name__
    with pytest.raises(TypeError, match=rf"^{name}: axis must be an int, got 1.5"):
        f(rand(2, 3), axis=1.5)
    with pytest.raises(ValueError, match=rf"^{name}: the input is 0-d, it has no axis 1"):
        f(rand())
    assert f(rand(2, 3), axis=np.int64(0)).shape == (2, 3)


@pytest.mark.parametrize("f", [F.softmax, F.log_softmax, F.softmax_simple])
@pytest.mark.parametrize("shape", [(3, 0), (0, 4)])
def test_softmax_of_empty_input_is_empty(arr, to_np, f, shape):
    x = Variable(arr(np.zeros(shape)))
    y = f(x)
    assert y.shape == shape and as_numpy(y).dtype == np.float64
    F.sum(y).backward()
    assert x.grad.shape == shape


def test_linear_bias_must_have_one_value_per_output(rand):
    with pytest.raises(
        ValueError,
        match=r"^linear: b of shape \(3,\) does not fit W of shape \(4, 2\); expected \(2,\)",
    ):
        F.linear(rand(3, 4), rand(4, 2), rand(3))
    assert F.linear(rand(3, 4), rand(4, 2), rand(2)).shape == (3, 2)


@pytest.mark.parametrize("f", [F.sigmoid_simple, F.softmax_simple])
def test_simple_forms_refuse_non_arrays(f):
    with pytest.raises(TypeError, match=rf"^{f.__name__}: x must be a numeric array, a Variable"):
        f(None)
    with pytest.raises(TypeError, match=r"must be a numeric array, .* got an array of dtype <U3"):
        f(np.array(["abc"]))


def test_softmax_simple_of_large_inputs_matches_softmax(arr, to_np):
    x = arr([[1e4, -1e4], [1000.0, 1000.0], [-1e4, -1e4 + 1.0]])
    expected = [[1.0, 0.0], [0.5, 0.5], [1 / (1 + np.e), np.e / (1 + np.e)]]
    np.testing.assert_allclose(to_np(F.softmax_simple(x)), expected, rtol=1e-12)
    y = Variable(x) if not isinstance(x, Variable) else x
    g = F.softmax_simple(y)
    (g * arr([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])).sum().backward()
    assert np.all(np.isfinite(to_np(y.grad)))
    check_backward(lambda v: F.softmax_simple(v), arr([[30.0, -30.0, 1.0], [700.0, 699.0, 0.0]]))


@pytest.mark.parametrize(
    "x, text",
    [
        (np.array(1.5), r"^softmax_simple: the input is 0-d, it has no axis 1"),
        (np.ones(3), r"^softmax_simple: axis 1 is out of range for an input of 1 dimensions"),
    ],
)
def test_softmax_simple_names_itself_for_a_bad_axis(x, text):
    with pytest.raises(ValueError, match=text):
        F.softmax_simple(x)
    np.testing.assert_allclose(F.softmax_simple(np.log([1.0, 3.0]), axis=0).data, [0.25, 0.75])
