"""Losses and accuracy: values against numpy, gradients of first and second order."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis.extra import numpy as hnp

import zerograd_nn.functional as F
from zerograd import Variable
from zerograd.backends import as_numpy
from zerograd.testing import check_backward


def np_log_softmax(x):
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mean_squared_error(rand, to_np, dtype):
    x0, x1 = rand(4, 3, dtype=dtype), rand(4, 3, dtype=dtype, seed=1)
    expected = ((to_np(x0) - to_np(x1)) ** 2).sum() / 4
    for f in (F.mean_squared_error, F.mean_squared_error_simple):
        y = f(x0, x1)
        assert y.shape == () and as_numpy(y).dtype == dtype
        np.testing.assert_allclose(to_np(y), expected, rtol=1e-5)


@pytest.mark.parametrize("order", [1, 2])
def test_mean_squared_error_grad(rand, order):
    x0, x1 = rand(4, 3), rand(4, 3, seed=1)
    check_backward(F.mean_squared_error, x0, x1, order=order)
    check_backward(F.mean_squared_error_simple, x0, x1, order=order)
    check_backward(F.mean_squared_error, rand(4, 1), rand(4, 1, seed=1), order=order)


def test_softmax_cross_entropy_values(rand, arr, to_np):
    x = rand(5, 4) * 3
    t = arr([0, 3, 1, 1, 2], "int64")
    expected = -np_log_softmax(to_np(x))[np.arange(5), to_np(t)].mean()
    for f in (F.softmax_cross_entropy, F.softmax_cross_entropy_simple):
        np.testing.assert_allclose(to_np(f(x, t)), expected, rtol=1e-10)


def test_softmax_cross_entropy_is_stable_and_float32(arr, to_np):
    x = arr([[1000.0, 0.0], [0.0, -1000.0]], "float32")
    y = F.softmax_cross_entropy(x, arr([1, 1], "int32"))
    assert as_numpy(y).dtype == np.float32
    np.testing.assert_allclose(to_np(y), 1000.0, rtol=1e-6)
    xv = Variable(x)
    F.softmax_cross_entropy(xv, arr([[1], [1]], "int64")).backward()  # (N, 1) labels work
    assert as_numpy(xv.grad).dtype == np.float32
    np.testing.assert_allclose(to_np(xv.grad), [[0.5, -0.5], [0.5, -0.5]], atol=1e-6)


@pytest.mark.parametrize("order", [1, 2])
def test_softmax_cross_entropy_grad(rand, arr, order):
    t = arr([2, 0, 1], "int64")
    check_backward(lambda v: F.softmax_cross_entropy(v, t), rand(3, 4), order=order)
    check_backward(lambda v: F.softmax_cross_entropy_simple(v, t), rand(3, 4), order=order)


def test_softmax_cross_entropy_gradient_is_the_same_from_a_second_backward(rand, arr, to_np):
    # the first backward reuses (and writes over) the softmax the forward computed; a
    # second one over the same graph computes it again: the same bits, the scores untouched
    x = Variable(rand(6, 5, dtype="float32") * 4)
    before = to_np(x.data).copy()
    loss = F.softmax_cross_entropy(x, arr([4, 0, 1, 1, 3, 2], "int64"))
    loss.backward()
    first = to_np(x.grad.data).copy()
    x.cleargrad()
    loss.backward()
    assert to_np(x.grad.data).tobytes() == first.tobytes()
    assert to_np(x.data).tobytes() == before.tobytes()
    p = np.exp(np_log_softmax(before.astype(np.float64)))
    p[np.arange(6), [4, 0, 1, 1, 3, 2]] -= 1
    np.testing.assert_allclose(first, p / 6, rtol=1e-5, atol=1e-7)


def test_softmax_cross_entropy_float32_grad(rand, arr):
    t = arr([2, 0, 1], "int64")
    check_backward(lambda v: F.softmax_cross_entropy(v, t), rand(3, 4, dtype="float32"))


def test_softmax_cross_entropy_bad_labels(rand, arr):
    with pytest.raises(TypeError, match="labels t must be integers"):
        F.softmax_cross_entropy(rand(2, 3), arr([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"3 labels for 2 rows"):
        F.softmax_cross_entropy(rand(2, 3), arr([0, 1, 2], "int64"))
    with pytest.raises(ValueError, match=r"class ids in 0..2 .*got labels from 0 to 5"):
        F.softmax_cross_entropy(rand(2, 3), arr([0, 5], "int64"))
    with pytest.raises(ValueError, match=r"got labels from -1 to 1"):
        F.softmax_cross_entropy_simple(rand(2, 3), arr([-1, 1], "int64"))


def np_bce_logits(x, t):
    p = 1 / (1 + np.exp(-x))
    return -(t * np.log(p) + (1 - t) * np.log(1 - p)).sum() / len(x)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_cross_entropy(rand, arr, to_np, dtype):
    x = rand(4, 1, dtype=dtype)
    t = arr([1, 0, 1, 1], "int64")  # flat labels are reshaped like x
    y = F.sigmoid_cross_entropy(x, t)
    assert as_numpy(y).dtype == dtype
    ref = np_bce_logits(to_np(x).astype("float64").ravel(), to_np(t))
    np.testing.assert_allclose(to_np(y), ref, rtol=1e-5)


def test_sigmoid_cross_entropy_large_logits(arr, to_np):
    y = F.sigmoid_cross_entropy(arr([[100.0], [-100.0]], "float32"), arr([[0], [1]], "int32"))
    np.testing.assert_allclose(to_np(y), 100.0, rtol=1e-6)  # exact, not log(1e-15)-clipped


@pytest.mark.parametrize("order", [1, 2])
def test_sigmoid_cross_entropy_grad(rand, arr, order):
    t = arr([[1, 0], [0, 0], [1, 1]], "int64")
    check_backward(lambda v: F.sigmoid_cross_entropy(v, t), rand(3, 2) * 2 + 0.05, order=order)


def test_binary_cross_entropy(arr, to_np):
    p = arr([0.9, 0.2, 0.6], "float32")
    t = arr([1, 0, 0], "int64")
    ref = -(np.log(0.9) + np.log(0.8) + np.log(0.4)) / 3
    y = F.binary_cross_entropy(p, t)
    assert as_numpy(y).dtype == np.float32
    np.testing.assert_allclose(to_np(y), ref, rtol=1e-5)
    # DeZero clips p into [1e-15, 0.999]
    clipped = F.binary_cross_entropy(arr([1.0], "float64"), arr([0], "int64"))
    np.testing.assert_allclose(to_np(clipped), -np.log(0.001), rtol=1e-9)


@pytest.mark.parametrize("order", [1, 2])
def test_binary_cross_entropy_grad(arr, order):
    t = arr([1, 0, 1, 0], "int64")
    p = arr([0.3, 0.6, 0.8, 0.1])
    check_backward(lambda v: F.binary_cross_entropy(v, t), p, order=order)


def test_accuracy(arr, to_np):
    y = arr([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1], [0.2, 0.3, 0.5], [0.0, 0.0, 1.0]], "float32")
    t = arr([1, 2, 2, 2], "int64")
    acc = F.accuracy(y, t)
    assert isinstance(acc, Variable) and acc.creator is None
    assert float(to_np(acc)) == pytest.approx(0.75)
    acc2 = F.accuracy(Variable(y), Variable(arr([[1], [0], [2], [0]], "int64")))
    assert float(to_np(acc2)) == pytest.approx(0.75)


@pytest.mark.parametrize("f", [F.mean_squared_error, F.mean_squared_error_simple])
def test_mean_squared_error_refuses_different_shapes(rand, f):
    name = f.__name__
    with pytest.raises(
        ValueError,
        match=rf"^{name}: x0 of shape \(3, 1\) and x1 of shape \(3,\) differ; give predictions "
        r"and targets the same shape \(reshape one of them, e.g. x1.reshape\(3, 1\)\)",
    ):
        f(rand(3, 1), rand(3))  # would broadcast to a 3x3 loss
    with pytest.raises(
        ValueError, match=rf"^{name}: x0 of shape \(3, 2\) and x1 of shape \(4, 2\)"
    ):
        f(rand(3, 2), rand(4, 2))
    with pytest.raises(ValueError, match=rf"^{name}: x0 of shape \(5, 2\) and x1 of shape \(5,\)"):
        f(Variable(rand(5, 2)), rand(5))
    with pytest.raises(ValueError, match=rf"^{name}: x0 and x1 are 0-d; the loss divides by"):
        f(np.array(1.0), np.array(2.0))
    with pytest.raises(ValueError, match=rf"^{name}: x0 and x1 of shape \(0, 2\) hold an empty"):
        f(np.zeros((0, 2)), np.zeros((0, 2)))


@pytest.mark.parametrize("f", [F.mean_squared_error, F.mean_squared_error_simple])
@pytest.mark.parametrize(
    "s0, s1", [((1, 1), (1,)), ((1,), (1, 1)), ((4, 3), (3,)), ((2, 1, 3), (2, 1, 1))]
)
def test_mean_squared_error_pairs_shapes_that_broadcast_one_to_one(rand, to_np, f, s0, s1):
    x0, x1 = rand(*s0), rand(*s1, seed=1)
    diff = to_np(x0) - to_np(x1)  # no more elements than the larger operand
    np.testing.assert_allclose(to_np(f(x0, x1)), (diff**2).sum() / len(diff), rtol=1e-12)
    check_backward(f, x0, x1, order=2)
    v0, v1 = Variable(x0), Variable(x1)
    f(v0, v1).backward()
    assert v0.grad.shape == s0 and v1.grad.shape == s1
    g = 2 * diff / len(diff)
    np.testing.assert_allclose(to_np(v0.grad), _np_sum_to(g, s0), rtol=1e-12)
    np.testing.assert_allclose(to_np(v1.grad), -_np_sum_to(g, s1), rtol=1e-12)


def _np_sum_to(g, shape):
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead)))
    return g.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True)


# -- integer inputs compute in floating point (never truncate) ----------------------------


@pytest.mark.parametrize("f", [F.mean_squared_error, F.mean_squared_error_simple])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_mean_squared_error_of_integers_is_not_truncated(arr, to_np, f, dtype):
    x0, x1 = arr([[1], [0]], dtype), arr([[0], [1]], dtype)
    y = f(x0, x1)
    assert as_numpy(y).dtype == np.float64
    assert float(to_np(y)) == 1.0  # (1 + 1) / 2; uint8 0 - 1 would wrap to 255
    y = f(arr([1, 2], "int64"), arr([0, 0], "int64"))
    assert float(to_np(y)) == 2.5


@pytest.mark.parametrize("f", [F.mean_squared_error, F.mean_squared_error_simple])
@pytest.mark.parametrize("fdtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("tdtype", ["bool", "uint8", "int8", "int16", "int64"])
def test_mean_squared_error_of_floats_and_integers_promotes_as_numpy(
    backend, arr, to_np, f, fdtype, tdtype
):
    """Predictions against integer targets: the loss has the dtype of numpy's ``x0 - x1``
    (float32 with uint8 pixels is float32, with int64 float64), and so has the gradient of
    the predictions; the uint8 targets do not wrap."""
    if backend.name != "numpy":
        pytest.skip(f"numpy's promotion of mixed kinds is the reference; got {backend.name}")
    p = np.array([[0.5, 2.0], [-1.0, 3.0], [1.5, 0.0]])
    t = np.array([[1, 0], [0, 1], [1, 1]])
    want = (p.astype(fdtype) - t.astype(tdtype)).dtype
    for first in (True, False):  # the predictions on either side
        pred = Variable(arr(p, fdtype))
        args = (pred, arr(t, tdtype)) if first else (arr(t, tdtype), pred)
        y = f(*args)
        assert to_np(y).dtype == want, f"{fdtype} with {tdtype}: {y.dtype}, numpy {want}"
        d = p - t  # float64 references
        np.testing.assert_allclose(to_np(y), (d**2).sum() / 3, rtol=1e-3)
        y.backward()
        assert to_np(pred.grad).dtype == want
        np.testing.assert_allclose(to_np(pred.grad), 2 * d / 3, rtol=1e-3)


@pytest.mark.parametrize("f", [F.softmax_cross_entropy, F.softmax_cross_entropy_simple])
@pytest.mark.parametrize("dtype", ["int64", "int8"])
def test_softmax_cross_entropy_of_integer_scores(arr, to_np, f, dtype):
    y = f(arr([[1, 1, 1], [3, 0, -2]], dtype), arr([0, 1], "int64"))
    ref = -np_log_softmax(np.array([[1.0, 1, 1], [3, 0, -2]]))[[0, 1], [0, 1]].mean()
    assert as_numpy(y).dtype == np.float64
    np.testing.assert_allclose(to_np(y), ref, rtol=1e-12)  # log 3 is 1.0986, not 1
    x = Variable(arr([[1, 1, 1]], dtype))
    f(x, arr([0], "int64")).backward()
    np.testing.assert_allclose(to_np(x.grad), [[-2 / 3, 1 / 3, 1 / 3]], rtol=1e-12)


def test_sigmoid_and_binary_cross_entropy_of_integers(arr, to_np):
    y = F.sigmoid_cross_entropy(arr([[1], [-2]], "int8"), arr([[1], [0]], "int64"))
    ref = np_bce_logits(np.array([1.0, -2.0]), np.array([1, 0]))
    assert as_numpy(y).dtype == np.float64
    np.testing.assert_allclose(to_np(y), ref, rtol=1e-12)
    y = F.binary_cross_entropy(arr([1, 0], "int64"), arr([0, 1], "int64"))
    np.testing.assert_allclose(to_np(y), -np.log(0.001 * 1e-15) / 2, rtol=1e-12)


# -- softmax_cross_entropy_simple through log-sum-exp -------------------------------------


@pytest.mark.parametrize("f", [F.softmax_cross_entropy, F.softmax_cross_entropy_simple])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_softmax_cross_entropy_of_huge_logits(arr, to_np, f, dtype):
    logits = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 1e4], [0.5, -0.25, 2.0]])
    t = np.array([1, 2, 0])
    x = Variable(arr(logits, dtype))
    loss = f(x, arr(t, "int64"))
    loss.backward()
    # independent float64 reference: log-sum-exp by hand, p = softmax, grad = (p - onehot) / n
    m = logits.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    ref = -(logits - lse)[np.arange(3), t].mean()
    grad = (np.exp(logits - lse) - np.eye(3)[t]) / 3
    assert as_numpy(loss).dtype == dtype and as_numpy(x.grad).dtype == dtype
    np.testing.assert_allclose(to_np(loss), ref, rtol=1e-6)  # 2e4/3 + log(2)/3 + ...
    assert np.isfinite(to_np(x.grad)).all()
    np.testing.assert_allclose(to_np(x.grad), grad, rtol=1e-5, atol=1e-7)


def test_accuracy_label_count_mismatch(rand, arr):
    with pytest.raises(
        ValueError,
        match=r"^accuracy: 3 predictions from scores y of shape \(3, 4\) but 5 labels t of "
        r"shape \(5,\)",
    ):
        F.accuracy(rand(3, 4), arr([0, 1, 2, 3, 0], "int64"))
    with pytest.raises(ValueError, match=r"^accuracy: expected scores y of shape \(N, classes\)"):
        F.accuracy(rand(3), arr([0, 1, 2], "int64"))


# -- wrong types, shapes, empty and 0-d inputs ---------------------------------------------


@pytest.mark.parametrize("f", [F.softmax_cross_entropy, F.softmax_cross_entropy_simple])
def test_labels_as_lists_and_scalars_work_and_none_is_refused(rand, arr, to_np, f):
    x = rand(3, 4)
    ref = f(x, arr([0, 1, 3], "int64"))
    np.testing.assert_allclose(to_np(f(x, [0, 1, 3])), to_np(ref), rtol=1e-12)
    np.testing.assert_allclose(to_np(f(x[:1, :], 2)), to_np(f(x[:1, :], arr([2], "int64"))))
    with pytest.raises(TypeError, match=rf"^{f.__name__}: labels t must be a numeric array"):
        f(x, None)
    with pytest.raises(TypeError, match=rf"^{f.__name__}: .* got NoneType"):
        f(None, [0])


@pytest.mark.parametrize("f", [F.softmax_cross_entropy, F.softmax_cross_entropy_simple])
def test_cross_entropy_of_an_empty_batch_is_refused(arr, f):
    with pytest.raises(
        ValueError,
        match=rf"^{f.__name__}: scores x of shape \(0, 3\) hold no rows; the mean loss over an "
        r"empty batch is undefined",
    ):
        f(arr(np.zeros((0, 3))), arr(np.zeros(0), "int64"))
    with pytest.raises(ValueError, match=r"scores x of shape \(2, 0\) hold no classes"):
        f(arr(np.zeros((2, 0))), arr([0, 0], "int64"))


@pytest.mark.parametrize("f", [F.sigmoid_cross_entropy, F.binary_cross_entropy])
def test_binary_losses_check_targets_and_batch(arr, to_np, f):
    name = f.__name__
    p = arr([[0.25], [0.5], [0.75]])
    ref = f(p, arr([[1], [0], [1]], "int64"))
    np.testing.assert_allclose(to_np(f(p, [1, 0, 1])), to_np(ref), rtol=1e-12)  # a list
    with pytest.raises(TypeError, match=rf"^{name}: targets t must be a numeric array"):
        f(p, None)
    with pytest.raises(
        ValueError, match=rf"^{name}: targets of shape \(1, 3\) do not match inputs \(3, 1\)"
    ):
        f(p, arr([[1, 0, 1]], "int64"))  # a transposed target would be silently reordered
    with pytest.raises(ValueError, match=rf"^{name}: targets of shape \(2, 3\) do not match"):
        f(arr(np.full((3, 2), 0.5)), arr(np.ones((2, 3)), "int64"))
    with pytest.raises(ValueError, match=rf"^{name}: inputs of shape \(\) hold no batch"):
        f(arr(0.5), arr(1, "int64"))
    with pytest.raises(ValueError, match=rf"^{name}: inputs of shape \(0, 1\) hold no batch"):
        f(arr(np.zeros((0, 1))), arr(np.zeros((0, 1)), "int64"))


def test_accuracy_types_and_empty(rand, arr, to_np):
    assert float(to_np(F.accuracy([[0.1, 0.9], [0.8, 0.2]], [1, 1]))) == 0.5  # lists
    with pytest.raises(TypeError, match=r"^accuracy: scores y must be a numeric array"):
        F.accuracy(None, arr([0], "int64"))
    with pytest.raises(TypeError, match=r"^accuracy: labels t must be a numeric array"):
        F.accuracy(rand(2, 3), None)
    with pytest.raises(ValueError, match=r"^accuracy: scores y of shape \(0, 3\) hold no rows"):
        F.accuracy(arr(np.zeros((0, 3))), arr(np.zeros(0), "int64"))


@pytest.mark.parametrize("p", [[[1.5, 0.5]], [[-0.1, 0.5]], [[np.nan, 0.5]]])
def test_binary_cross_entropy_refuses_values_that_are_not_probabilities(p):
    with pytest.raises(
        ValueError,
        match=r"^binary_cross_entropy: p must be probabilities in \[0, 1\], got values from .*; "
        r"apply sigmoid first",
    ):
        F.binary_cross_entropy(np.array(p), np.array([[1, 0]]))
    loss = F.binary_cross_entropy(np.array([[0.8, 0.25]]), np.array([[1, 0]]))
    assert float(loss.data) == pytest.approx(-(np.log(0.8) + np.log(0.75)))


def test_accuracy_refuses_labels_that_are_not_class_ids():
    y = np.array([[0.1, 0.9], [0.8, 0.2]])
    with pytest.raises(
        ValueError,
        match=r"^accuracy: labels must be class ids in 0\.\.1 for scores of shape \(2, 2\), got "
        r"labels from 0 to 7",
    ):
        F.accuracy(y, np.array([0, 7]))
    with pytest.raises(ValueError, match=r"got labels from -1 to 1"):
        F.accuracy(y, np.array([1, -1]))
    with pytest.raises(TypeError, match=r"^accuracy: labels t must be integers .* dtype float64"):
        F.accuracy(y, np.array([1.0, 0.0]))
    assert float(F.accuracy(y, np.array([1, 1])).data) == 0.5


def test_pytorch_names_are_the_same_functions(rand, arr, to_np):
    assert F.cross_entropy is F.softmax_cross_entropy and "cross_entropy" in F.__all__
    assert F.mse_loss is F.mean_squared_error and "mse_loss" in F.__all__
    x, t = rand(3, 4), arr([2, 0, 3], "int64")
    want = -np_log_softmax(to_np(x))[[0, 1, 2], [2, 0, 3]].mean()
    np.testing.assert_allclose(to_np(F.cross_entropy(x, t)), want, rtol=1e-12)
    x0, x1 = rand(5, 2), rand(5, 2, seed=1)  # DeZero's meaning: divided by the batch size
    want = ((to_np(x0) - to_np(x1)) ** 2).sum() / 5
    np.testing.assert_allclose(to_np(F.mse_loss(x0, x1)), want, rtol=1e-12)


@pytest.mark.parametrize(
    "f, scores",
    [(F.softmax_cross_entropy, "x"), (F.softmax_cross_entropy_simple, "x"), (F.accuracy, "y")],
)
@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_one_hot_labels_get_one_pointer_to_argmax(rand, arr, to_np, f, scores, dtype):
    name = f.__name__
    x = Variable(rand(3, 4))
    one_hot = arr(np.eye(4)[[2, 0, 3]], dtype)
    before = to_np(x).copy()
    with pytest.raises(
        ValueError,
        match=rf"^{name}: labels t of shape \(3, 4\) have the shape of the scores {scores} "
        rf"\(3, 4\), but this function takes one class id per row, shape \(3,\)\. For one-hot "
        r"labels: pass `t\.argmax\(axis=1\)`\.$",
    ):
        f(x, one_hot)
    assert x.grad is None and np.array_equal(to_np(x), before)
    ids = arr(np.eye(4)[[2, 0, 3]].argmax(axis=1), "int64")  # what the message says to do
    np.testing.assert_allclose(to_np(f(x, ids)), to_np(f(x, arr([2, 0, 3], "int64"))))


# -- which shape pairs mean_squared_error takes, over random shapes (hypothesis) -------------

SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(s0=SHAPES, s1=SHAPES)
def test_mean_squared_error_takes_exactly_the_one_to_one_broadcasts(s0, s1):
    x0 = np.arange(1.0, 1.0 + math.prod(s0)).reshape(s0)
    x1 = np.linspace(-1.0, 2.0, math.prod(s1)).reshape(s1)
    try:
        diff = x0 - x1
    except ValueError:
        diff = None  # numpy does not broadcast them either
    pairs = diff is not None and diff.size <= max(x0.size, x1.size)
    if pairs and diff.ndim and len(diff):
        y = F.mean_squared_error(x0, x1)
        assert float(y.data) == pytest.approx((diff**2).sum() / len(diff), rel=1e-12)
        return
    with pytest.raises(ValueError, match=r"^mean_squared_error: x0 "):
        F.mean_squared_error(x0, x1)  # every other pair: a clear error, never a wrong loss


@pytest.mark.parametrize("label", [1, 0, np.int64(1), np.array(1), np.array(0, np.uint8)])
def test_accuracy_of_one_row_takes_its_label_as_a_number(arr, to_np, label):
    # one example's label given as a number: the softmax_cross_entropy beside it takes it,
    # and accuracy raised numpy.float64 "is not an array of any installed backend"
    y = arr([[0.1, 0.5, 0.2]])
    t = label if isinstance(label, int) else arr(np.asarray(label), str(np.asarray(label).dtype))
    expected = 1.0 if int(label) == 1 else 0.0  # the row's arg-max is class 1
    acc = F.accuracy(y, t)
    assert acc.shape == () and float(to_np(acc)) == expected
    assert float(to_np(F.softmax_cross_entropy(y, t))) == pytest.approx(
        np.log(np.exp([0.1, 0.5, 0.2]).sum()) - [0.1, 0.5, 0.2][int(label)]
    )
