"""zerograd_nn.functional where derivatives are not unique or values not finite: the kinks
of the activations, ties in pooling windows, infinite and huge logits, probabilities of
exactly 0 and 1, float16.

Every reference is worked out by hand (in float64 with numpy), never by another framework.
The table "At kinks and ties" of docs/from-pytorch.md names the test behind each row.
"""

import functools
import math
import warnings

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Parameter, Variable, using_config
from zerograd.backends import as_numpy, get_backend
from zerograd.testing.kinks import grads, half, quiet
from zerograd_nn import optimizers as O
from zerograd_nn.kernels import Kernels

inf, nan = np.inf, np.nan


def logistic(x):
    """1 / (1 + e**-x) in float64, one value at a time (math.exp raises on overflow)."""
    return np.array([1 / (1 + math.exp(-v)) if v > -700 else math.exp(v) for v in x])


# --- sigmoid ---


@pytest.mark.parametrize(
    "dtype, xs, rtol",
    [
        ("float64", [-40.0, -20.0, 0.0, 3.0, 40.0], 1e-15),
        ("float32", [-80.0, -40.0, -20.0, -17.0, 0.0, 17.0], 1e-6),
        ("float16", [-10.0, -8.0, -5.0, 0.0, 5.0], 2e-3),
    ],
)
def test_sigmoid_keeps_its_relative_accuracy_in_the_left_tail(arr, dtype, xs, rtol):
    # tanh(x/2)/2 + 1/2 rounded everything below 2**-25 to 0: float32's sigmoid(-20) was 0
    # (2.06e-9), float16's sigmoid(-5) 1.5% off and sigmoid(-8) 0
    x = half(arr, xs) if dtype == "float16" else arr(xs, dtype)
    y, (g,) = grads(F.sigmoid, x)
    ref = logistic(np.asarray(xs))
    assert y.dtype == np.dtype(dtype) and g.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y, ref, rtol=rtol)
    # the gradient is y (1 - y), from y: relative accuracy where y is not close to 1
    left = np.asarray(xs) <= 0
    np.testing.assert_allclose(g[left], (ref * (1 - ref))[left], rtol=rtol * 2)


def test_sigmoid_at_its_limits_is_exact_and_warns_of_nothing(arr, backend):
    with warnings.catch_warnings():
        if backend.name == "numpy":  # its kernel: exp(-x) overflowing is the limit, no problem
            warnings.simplefilter("error")  # (the generic kernel warns as its library does)
        y, (g,) = grads(F.sigmoid, arr([-1000.0, -inf, inf, 1000.0, nan], "float32"))
        y16 = F.sigmoid(np.array([-30.0, 30.0], np.float16))
        y0 = F.sigmoid(np.float32(-200.0))  # 0-d
    np.testing.assert_array_equal(y, [0.0, 0.0, 1.0, 1.0, nan])
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0, 0.0, nan])
    np.testing.assert_array_equal(as_numpy(y16), [0.0, 1.0])
    assert float(y0.data) == 0.0 and y0.dtype == np.float32


def test_sigmoid_simple_is_the_books_formula_whose_gradient_overflows():
    # 1 / (1 + exp(-x)) from elementary functions: exp(-x) = inf makes its derivative
    # inf / inf**2 = nan; F.sigmoid is the function to train with
    y, (g,) = quiet(grads, F.sigmoid_simple, np.array([-800.0, -40.0, 40.0]))
    np.testing.assert_allclose(y, logistic([-800.0, -40.0, 40.0]), rtol=1e-15)
    assert np.isnan(g[0])
    np.testing.assert_allclose(g[1:], [4.248354255291589e-18] * 2, rtol=1e-12)


# --- relu, leaky_relu at 0 and nan ---


def test_relu_and_leaky_relu_at_zero_and_nan(arr):
    y, (g,) = grads(F.relu, arr([0.0, -0.0, nan, inf, -inf, 1.0]))
    np.testing.assert_array_equal(y, [0.0, 0.0, nan, inf, 0.0, 1.0])
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0, 1.0, 0.0, 1.0])  # passes where y > 0
    y, (g,) = grads(F.leaky_relu, arr([0.0, nan, -1.0, inf]))
    np.testing.assert_array_equal(y, [0.0, nan, -0.2, inf])
    np.testing.assert_array_equal(g, [0.2, 0.2, 0.2, 1.0])  # x > 0: 1, else the slope


# --- pooling ---


def test_pooling_gives_a_tied_window_to_its_first_maximum(arr):
    x = np.array([[[[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]]])
    for pool in (F.pooling, F.pooling_simple):
        y, (g,) = grads(lambda v, pool=pool: pool(v, 2, 1), arr(x))
        np.testing.assert_array_equal(y, [[[[1.0, 1.0], [1.0, 1.0]]]])
        # each window's first maximum in row-major window order: (0,0), (0,1), (1,0), (1,1)
        np.testing.assert_array_equal(g, [[[[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0, 0, 0]]]])
    _, (g,) = grads(lambda v: F.pooling(v, 2, 2), arr(np.ones((1, 1, 2, 4))))
    np.testing.assert_array_equal(g, [[[[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]]])


POOLS = pytest.mark.parametrize("pool", [F.pooling, F.pooling_simple])


@POOLS
def test_pooling_gives_a_window_holding_nan_to_its_last_nan(arr, pool):
    """PyTorch's scan (CPU and CUDA): an element takes the window when it is above the
    maximum so far or is nan, so the window pools to nan and its last nan takes the
    gradient, infinities included. No element took it: nan equals nothing."""
    cases = [  # (x, kernel, stride), the gradient of sum(pool(x)); every result is nan
        ([[1.0, nan], [3.0, 2.0]], 2, 2, [[0, 1], [0, 0]]),
        ([[1.0, nan], [nan, 2.0]], 2, 2, [[0, 0], [1, 0]]),  # two nans: the last
        ([[nan, nan], [nan, nan]], 2, 2, [[0, 0], [0, 1]]),
        ([[inf, nan], [nan, inf]], 2, 2, [[0, 0], [1, 0]]),  # nan over inf
        ([[-inf, nan], [inf, 1.0]], 2, 2, [[0, 1], [0, 0]]),  # a nan before inf
        # four overlapping windows: (1, 1) is the last nan of three of them
        ([[nan, 5, nan], [1, nan, 2], [3, 4, nan]], 2, 1, [[0, 0, 0], [0, 3, 0], [0, 0, 1]]),
    ]
    for x, k, s, g_want in cases:
        y, (g,) = grads(lambda v, k=k, s=s: pool(v, k, s), arr([[x]]))
        assert np.isnan(y).all(), x
        np.testing.assert_array_equal(g, [[g_want]], err_msg=str(x))


def test_a_nan_or_infinite_gradient_of_a_window_reaches_all_of_it_in_pooling_only(arr):
    """F.pooling multiplies each window's gy by its winners' mask, so a nan or infinite gy
    reaches every element of its window as nan (0 * inf); F.pooling_simple scatters gy
    to the winners, as PyTorch does, and the other elements get 0."""
    # windows [[1, 2], [4, 5]] and [[2, 3], [5, 6]]: winners 5 and 6; gy nan and inf
    x, gy = arr([[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]]]), arr([[[[nan, inf]]]])
    y, (g,) = quiet(grads, lambda v: F.pooling(v, 2, 1), x, gy=gy)  # 0 * inf
    np.testing.assert_array_equal(y, [[[[5.0, 6.0]]]])
    np.testing.assert_array_equal(g, [[[[nan, nan, nan], [nan, nan, inf]]]])
    y, (g,) = grads(lambda v: F.pooling_simple(v, 2, 1), x, gy=gy)
    np.testing.assert_array_equal(y, [[[[5.0, 6.0]]]])
    np.testing.assert_array_equal(g, [[[[0.0, 0.0, 0.0], [0.0, nan, inf]]]])


@POOLS
def test_pooling_gives_a_window_of_minus_inf_to_its_first_input_never_to_padding(arr, pool):
    # every window ties at -inf, padding included: the first element of the input in the
    # window takes its gradient (PyTorch's), where the -inf padding before it took it
    y, (g,) = grads(lambda v: pool(v, 3, 1, 1), arr(np.full((1, 1, 2, 2), -inf)))
    np.testing.assert_array_equal(y, np.full((1, 1, 2, 2), -inf))
    np.testing.assert_array_equal(g, [[[[4.0, 0.0], [0.0, 0.0]]]])
    # a row: windows (pad, a, b), (a, b, c), (b, c, pad) give a, a, b
    y, (g,) = grads(lambda v: pool(v, (1, 3), 1, (0, 1)), arr(np.full((1, 1, 1, 3), -inf)))
    np.testing.assert_array_equal(g, [[[[2.0, 1.0, 0.0]]]])
    # stride 2, pad 1 over 3 x 3: windows start at rows and columns -1 and 1
    y, (g,) = grads(lambda v: pool(v, 3, 2, 1), arr(np.full((1, 1, 3, 3), -inf)))
    np.testing.assert_array_equal(y, np.full((1, 1, 2, 2), -inf))
    np.testing.assert_array_equal(g, [[[[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]]])
    # a nan beside -inf and padding: the nan
    y, (g,) = grads(lambda v: pool(v, 3, 1, 1), arr([[[[-inf, nan], [-inf, -inf]]]]))
    assert np.isnan(y).all()
    np.testing.assert_array_equal(g, [[[[0.0, 4.0], [0.0, 0.0]]]])


# --- softmax, log_softmax, softmax_cross_entropy ---


def test_softmax_family_at_huge_and_infinite_logits(arr):
    y, (g,) = grads(F.softmax, arr([[1e4, 0.0, -1e4], [0.0, -inf, 0.0]]))
    np.testing.assert_array_equal(y, [[1.0, 0.0, 0.0], [0.5, 0.0, 0.5]])
    np.testing.assert_array_equal(g, np.zeros((2, 3)))  # the rows' sums are constant
    y, (g,) = grads(F.log_softmax, arr([[1e4, 0.0, -1e4], [0.0, -inf, 0.0]]))
    np.testing.assert_allclose(y, [[0.0, -1e4, -2e4], [-np.log(2), -inf, -np.log(2)]])
    np.testing.assert_array_equal(g, [[-2.0, 1.0, 1.0], [-0.5, 1.0, -0.5]])  # 1 - 3 softmax
    loss, (g,) = grads(
        lambda x: F.softmax_cross_entropy(x, arr([0, 1], "int64")), arr([[1e4, -1e4], [0.0, -inf]])
    )
    # row 0: log(1 + e**-2e4) = 0; row 1: the label's logit is -inf, its loss inf
    assert float(loss) == inf
    np.testing.assert_array_equal(g, [[0.0, 0.0], [0.5, -0.5]])  # (softmax - onehot) / N
    loss, (g,) = grads(lambda x: F.softmax_cross_entropy(x, arr([0], "int64")), arr([[0.0, -inf]]))
    assert float(loss) == 0.0
    np.testing.assert_array_equal(g, [[0.0, 0.0]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_log_softmax_of_equal_huge_logits_keeps_the_log_of_the_class_count(arr, dtype):
    """log_softmax is (x - m) - log(sum(exp(x - m))): x - (m + log(sum)) rounded log(3)
    into m = 1e30 (the values 0, the gradient 1 - 3 = -2), and at 1e4 in float32 lost
    three digits (float32's spacing at 1e4 is 2**-10)."""
    big = float(np.finfo(dtype).max)
    x = arr([[1e30, 1e30, 1e30], [-big, -big, -big], [1e4, 1e4 + 1, 1e4 - 1]], dtype)
    y, (g,) = grads(lambda v: F.log_softmax(v), x)
    # by hand: log softmax is invariant to a shift, so row 2 is log_softmax([0, 1, -1])
    shifted = np.array([0.0, 1.0, -1.0])
    row2 = shifted - np.log(np.sum(np.exp(shifted)))
    want = np.array([[-np.log(3)] * 3, [-np.log(3)] * 3, row2])
    rtol = {"float32": 2e-7, "float64": 1e-15}[dtype]
    np.testing.assert_allclose(y, want, rtol=rtol)
    # gradient of sum(y): 1 - C softmax = 1 - 3 exp(y)
    np.testing.assert_allclose(g, 1 - 3 * np.exp(want), rtol=rtol, atol=rtol)


def test_the_generic_cross_entropy_rows_of_equal_huge_logits_are_log_of_the_class_count():
    """Backends without kernels of their own: m + log(sum) rounded log(3) into m = 1e30."""
    x = np.array([[1e30, 1e30, 1e30], [1e4, 1e4 + 1, 1e4 - 1]], np.float32)
    rows = Kernels(get_backend("numpy")).cross_entropy_rows(x, np.array([0, 1]))
    shifted = np.array([0.0, 1.0, -1.0])
    lse = np.log(np.sum(np.exp(shifted)))
    np.testing.assert_allclose(rows, [np.log(3), lse - 1.0], rtol=2e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_and_cross_entropy_of_max_and_minus_max_are_silent_on_numpy(dtype):
    """A row [max, 0, -max] shifts -max by max to -inf, whose exponential is the right 0:
    numpy's kernels reported "overflow encountered in subtract" (PyTorch is silent). The
    report is off for that subtraction only: inf - inf still reports an invalid value."""
    big = np.finfo(dtype).max
    x = np.array([[big, 0.0, -big], [1.0, 0.0, -1.0]], dtype)
    e = np.exp([0.0, -1.0, -2.0])
    p = e / e.sum()  # row 1 by hand: softmax([1, 0, -1]) = softmax([0, -1, -2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, (g,) = grads(F.softmax, x, gy=np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], dtype))
        loss, (gl,) = grads(lambda v: F.softmax_cross_entropy(v, np.array([1, 0])), x)
        far, _ = grads(lambda v: F.softmax_cross_entropy(v, np.array([2, 0])), x)
    np.testing.assert_allclose(y, [[1.0, 0.0, 0.0], p], rtol=1e-6)
    np.testing.assert_array_equal(g[0], [0.0, 0.0, 0.0])  # p * (gy - sum(p * gy)), p one-hot
    # row 0: log(1) - (0 - max) = max; row 1: -log p[0]; the mean of the two
    assert float(loss) == pytest.approx((float(big) - np.log(p[0])) / 2, rel=1e-6)
    np.testing.assert_allclose(gl, [[0.5, -0.5, 0.0], (p - [1, 0, 0]) / 2], rtol=1e-6, atol=0)
    assert float(far) == inf  # -log p at -max: 2 max, past the dtype (PyTorch: inf too)
    with pytest.warns(RuntimeWarning, match="invalid value encountered in subtract"):
        y = as_numpy(F.softmax(np.array([[inf, 0.0]], dtype)))
    assert np.isnan(y).all()


def test_a_row_of_all_minus_inf_or_a_plus_inf_logit_is_nan(arr):
    # -inf - (-inf) and inf - inf: no softmax exists; nan, as PyTorch's
    for f in (F.softmax, F.log_softmax):
        y, (g,) = quiet(grads, f, arr([[-inf, -inf], [inf, 0.0]]))
        assert np.isnan(y).all() and np.isnan(g).all()


# --- sigmoid_cross_entropy, binary_cross_entropy, mean_squared_error ---


def test_sigmoid_cross_entropy_at_zero_and_at_huge_logits(arr):
    t = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    x = [0.0, 0.0, 1e4, -1e4, -1e4]
    loss, (g,) = grads(lambda v: F.sigmoid_cross_entropy(v, arr(t)), arr(x))
    # log(1 + e**-|x|) + relu(x) - x t: log 2 twice, 0, 0, 1e4
    np.testing.assert_allclose(float(loss), (2 * np.log(2) + 1e4) / 5, rtol=1e-15)
    np.testing.assert_array_equal(g, (logistic(x) - t) / 5)  # (sigmoid(x) - t) / N


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_sigmoid_cross_entropy_at_infinite_logits(arr, dtype):
    """-|x| was ``x - 2 * relu(x)``, ``inf - inf`` at ``x = inf``: the loss and the gradient
    of every element were nan. The gradient is sigmoid(x) - t, PyTorch's at every infinity."""
    on = (lambda v: half(arr, v)) if dtype == "float16" else (lambda v: arr(v, dtype))
    x = [inf, inf, -inf, -inf, 3.0]
    t = on([0.0, 1.0, 0.0, 1.0, 1.0])
    loss, (g,) = quiet(grads, lambda v: F.sigmoid_cross_entropy(v, t), on(x))
    assert np.isnan(loss)  # inf * 0 in relu(x) - x * t, at three of the four infinities
    want = (np.array([1.0, 0.0, 0.0, -1.0, logistic([3.0])[0] - 1.0]) / 5).astype(dtype)
    # float16: sigmoid(3) - 1 cancels; its error is float16's spacing at the terms' 1 / 5
    np.testing.assert_allclose(g, want, rtol=1e-6, atol={"float16": 2e-4}.get(dtype, 0))
    assert g.dtype == dtype
    # one logit at a time: inf where x = -inf and t = 1 (the true loss), nan elsewhere
    for xi, ti, li in [(inf, 0.0, nan), (inf, 1.0, nan), (-inf, 0.0, nan), (-inf, 1.0, inf)]:
        one = on([ti])
        loss, _ = quiet(grads, lambda v, one=one: F.sigmoid_cross_entropy(v, one), on([xi]))
        np.testing.assert_array_equal(loss, li)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_binary_cross_entropy_clips_probabilities_as_dezero(arr, dtype):
    # p in [1e-15, 0.999]: finite at 0 and 1, no gradient where clipped (PyTorch clamps
    # the logarithms at -100 and its gradient is huge there)
    p, t = arr([0.0, 1.0, 0.5], dtype), arr([1.0, 0.0, 1.0], dtype)
    loss, (g,) = grads(lambda v: F.binary_cross_entropy(v, t), p)
    lo, hi = np.asarray(1e-15, dtype), np.asarray(0.999, dtype)
    want = -(np.log(lo, dtype="float64") + np.log1p(-hi, dtype="float64") + np.log(0.5)) / 3
    np.testing.assert_allclose(float(loss), want, rtol=1e-6)
    np.testing.assert_allclose(g, [0.0, 0.0, -2.0 / 3.0], rtol=1e-6)


def test_binary_cross_entropy_of_float16_probabilities_0_and_1_is_finite():
    # float16 has no 1e-15: clipped to 0, log(0) * 0 made the loss nan; and 1 / p overflows
    # it below 2**-16: the lower clip is float16's smallest normal number, 2**-14
    p = np.array([0.0, 1.0, 0.5, 0.25, 0.0], np.float16)
    t = np.array([1.0, 0.0, 1.0, 0.0, 0.0], np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss, (g,) = grads(lambda v: F.binary_cross_entropy(v, t), p)
    hi = float(np.float16(0.999))
    want = -(np.log(2.0**-14) + np.log(1 - hi) + np.log(0.5) + np.log(0.75) + np.log1p(-(2.0**-14)))
    assert loss.dtype == np.float16 and g.dtype == np.float16
    np.testing.assert_allclose(float(loss), want / 5, rtol=2e-3)
    np.testing.assert_allclose(g, [0.0, 0.0, -2 / 5, 4 / 3 / 5, 0.0], rtol=2e-3)


def test_mean_squared_error_of_infinities(arr):
    loss, (g0, g1) = quiet(grads, F.mean_squared_error, arr([inf, 1.0]), arr([0.0, 1.0]))
    assert float(loss) == inf
    np.testing.assert_array_equal(g0, [inf, 0.0])  # 2 (x0 - x1) / N
    np.testing.assert_array_equal(g1, [-inf, -0.0])
    loss, _ = quiet(grads, F.mean_squared_error, arr([inf]), arr([inf]))
    assert np.isnan(float(loss))  # inf - inf


# --- batch_norm ---


@pytest.mark.parametrize("dtype, rtol, atol", [("float64", 1e-10, 1e-8), ("float16", 2e-2, 0.5)])
def test_batch_norm_of_a_constant_channel_has_a_finite_gradient(dtype, rtol, atol):
    # a dead channel (all zeros) has variance 0: float16 overflowed (v + eps) ** -1.5 and
    # the gradient was 0 * inf = nan
    rng = np.random.default_rng(0)
    x = np.stack([np.zeros(6), rng.standard_normal(6)], axis=1).astype(dtype)
    gy = rng.uniform(-0.1, 0.1, (6, 2)).astype(dtype)
    gamma, beta = np.ones(2, dtype), np.zeros(2, dtype)
    eps = 2e-5
    with using_config("train", True):
        y, (gx,) = grads(
            lambda v: F.batch_norm(v, gamma, beta, np.zeros(2, dtype), np.ones(2, dtype), eps=eps),
            x,
            gy=gy,
        )
    # the batch norm gradient by hand: (gy - mean(gy) - xhat mean(gy xhat)) / sqrt(var + eps)
    x64, g64 = x.astype(np.float64), gy.astype(np.float64)
    xc = x64 - x64.mean(axis=0)
    std = np.sqrt((xc**2).mean(axis=0) + eps)
    xhat = xc / std
    want = (g64 - g64.mean(axis=0) - xhat * (g64 * xhat).mean(axis=0)) / std
    assert np.isfinite(gx).all() and gx.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y, xhat, rtol=rtol, atol=atol / 100)
    np.testing.assert_allclose(gx, want, rtol=rtol, atol=atol)


# --- float16: sums added in float32, counts never rounded to float16 ---

_BATCH = 70000  # more rows than float16's largest number, 65504


def _sigmoid64(v):
    return 1 / (1 + np.exp(-v))


def _float16_loss_cases(rng):
    """name -> (loss, its float16 inputs, the float64 loss and input gradients by hand)."""
    n = _BATCH
    x0, x1 = (rng.uniform(-1.0, 1.0, (n, 1)).astype(np.float16) for _ in range(2))
    d = x0.astype(np.float64) - x1
    mse = (lambda a, b: F.mean_squared_error(a, b), [x0, x1], (d**2).sum() / n, [2 * d / n])
    mse_simple = (F.mean_squared_error_simple, [x0, x1], (d**2).sum() / n, [2 * d / n])
    s = (rng.standard_normal((n, 10)) * 2).astype(np.float16)
    t = rng.integers(0, 10, n)
    s64 = s.astype(np.float64)
    e = np.exp(s64 - s64.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    ce = -np.log(p[np.arange(n), t]).mean()
    ce_grad = (p - np.eye(10)[t]) / n
    logits = (rng.standard_normal((n, 1)) * 2).astype(np.float16)
    labels = rng.integers(0, 2, (n, 1))
    z = logits.astype(np.float64)
    sce = (np.maximum(z, 0) - z * labels + np.log1p(np.exp(-np.abs(z)))).sum() / n
    probs = rng.uniform(0.05, 0.95, (n, 1)).astype(np.float16)
    q = probs.astype(np.float64)
    bce = -(labels * np.log(q) + (1 - labels) * np.log(1 - q)).sum() / n
    return {
        "mean_squared_error": mse,
        "mean_squared_error_simple": mse_simple,
        "softmax_cross_entropy": (lambda v: F.softmax_cross_entropy(v, t), [s], ce, [ce_grad]),
        "softmax_cross_entropy_simple": (
            lambda v: F.softmax_cross_entropy_simple(v, t),
            [s],
            ce,
            [ce_grad],
        ),
        "sigmoid_cross_entropy": (
            lambda v: F.sigmoid_cross_entropy(v, labels),
            [logits],
            sce,
            [(_sigmoid64(z) - labels) / n],
        ),
        "binary_cross_entropy": (
            lambda v: F.binary_cross_entropy(v, labels),
            [probs],
            bce,
            [-(labels / q - (1 - labels) / (1 - q)) / n],
        ),
    }


def _units(got, want):
    """|got - want| in float16 spacings of ``want`` (2**-24 for subnormal ones)."""
    spacing = np.maximum(np.spacing(np.abs(want).astype(np.float16)).astype(np.float64), 2**-24)
    return np.abs(np.asarray(got, np.float64) - want) / spacing


def _softmax64(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("name", sorted(_float16_loss_cases(np.random.default_rng(0))))
def test_float16_losses_over_a_batch_past_65504_are_right(name):
    """Each loss adds its float16 batch in float32 and divides by the batch size there, as
    PyTorch does: the sum passed 65504 (inf) and the batch size 70,000 was inf in float16,
    so the losses were nan, inf or 0 and the cross-entropy's gradient 0. The loss is now
    the float64 loss rounded once; the gradients, of order 1 / 70,000 (subnormal in
    float16), are within a few float16 units of the float64 ones."""
    f, inputs, want, want_grads = _float16_loss_cases(np.random.default_rng(0))[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way
        y, gs = grads(f, *inputs)
    assert y.dtype == np.float16
    assert _units(y, want) <= 0.5 + 1e-3
    for g, w in zip(gs, want_grads):
        assert g.dtype == np.float16
        assert _units(g, w).max() <= 6, name


def test_float16_mean_squared_error_of_zeros_and_ones_over_70000_rows_is_1():
    """The example: (70000, 1) float16 zeros against ones gave nan (the sum and the count
    70,000 are inf in float16); PyTorch's mse_loss gives 1."""
    zeros, ones = np.zeros((_BATCH, 1), np.float16), np.ones((_BATCH, 1), np.float16)
    y, (g0, g1) = grads(F.mean_squared_error, zeros, ones)
    assert y.dtype == np.float16 and float(y) == 1.0
    np.testing.assert_array_equal(g0, np.full((_BATCH, 1), np.float16(-2 / _BATCH)))
    np.testing.assert_array_equal(g1, -g0)


def test_accuracy_of_float16_scores_over_70000_rows_is_the_fraction():
    """accuracy's mean of float16 hits is numpy's mean, which adds in float32: right."""
    rng = np.random.default_rng(1)
    scores = rng.standard_normal((_BATCH, 3)).astype(np.float16)
    labels = rng.integers(0, 3, _BATCH)
    want = (scores.argmax(axis=1) == labels).mean()
    got = as_numpy(F.accuracy(scores, labels))
    assert got.dtype == np.float16 and _units(got, want) <= 0.5


@pytest.mark.parametrize("axis", [0, 1])
def test_float16_softmax_and_log_softmax_along_12000_elements(arr, axis):
    """float16 softmax and log-softmax compute in float32 and round once, as PyTorch's: the
    sum of 12,000 exponentials along axis 0 was added in float16 (it stopped near 2048,
    every probability about 6 times too large). Values within half a float16 spacing of
    the float64 ones (plus float32's rounding of the sum); gradients (their sums added in
    float32) within a few spacings of the largest gradient."""
    rng = np.random.default_rng(2)
    shape = (12000, 3) if axis == 0 else (3, 12000)
    x = rng.standard_normal(shape).astype(np.float16)
    w = rng.uniform(0.0, 0.01, shape).astype(np.float16)  # sum(log_softmax * w) < 65504
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    p = _softmax64(x64, axis)
    for f, want, want_grad in (
        (F.softmax, p, p * w64 - p * (p * w64).sum(axis=axis, keepdims=True)),
        (F.log_softmax, np.log(p), w64 - p * w64.sum(axis=axis, keepdims=True)),
    ):
        y, (g,) = grads(functools.partial(f, axis=axis), half(arr, x), gy=half(arr, w))
        assert y.dtype == g.dtype == np.float16
        assert _units(y, want).max() <= 0.5 + 1e-2, f.__name__
        top = np.abs(want_grad).max()
        assert np.abs(g - want_grad).max() <= 4 * np.spacing(np.float16(top)), f.__name__


def test_float16_average_pooling_of_a_large_window(arr):
    """A float16 window is added, and divided by its size, in float32: a 120 x 120 global
    average was added in float16 (far from the mean); a 256 x 256 window, 65,536 elements,
    is inf in float16, so the output and the gradient were 0."""
    rng = np.random.default_rng(3)
    x = rng.uniform(0.0, 1.0, (2, 2, 120, 120)).astype(np.float16)
    y = as_numpy(F.average_pooling(half(arr, x), 120))
    assert y.dtype == np.float16
    assert _units(y, x.astype(np.float64).mean(axis=(2, 3), keepdims=True)).max() <= 0.5 + 1e-3
    y, (g,) = grads(lambda v: F.average_pooling(v, 256), half(arr, np.ones((1, 1, 256, 256))))
    np.testing.assert_array_equal(y, [[[[1.0]]]])
    np.testing.assert_array_equal(g, np.full((1, 1, 256, 256), 2.0**-16))  # 1 / 65536


def test_float16_bias_and_weight_gradients_over_large_batches_add_in_float32(arr):
    """The bias gradient of a float16 linear or convolution layer is a sum over the batch
    (and the pixels), the convolution's weight gradient a sum over the batch: added in
    float16 they stopped at 2048 (0.5 at a time at 1024)."""
    ones = half(arr, np.ones((12000, 4)))
    _, (_, _, gb) = grads(
        F.linear, ones, half(arr, np.ones((4, 2))), half(arr, np.zeros(2)), gy=half(arr, 0.5)
    )
    np.testing.assert_array_equal(gb, [6000.0, 6000.0])
    img = half(arr, np.ones((3000, 3, 2, 2)))
    _, (_, gw, gb) = grads(
        lambda v, k, b: F.conv2d(v, k, b), img, half(arr, np.ones((2, 3, 1, 1))), half(arr, [0, 0])
    )
    np.testing.assert_array_equal(gb, [12000.0, 12000.0])  # 3000 images of 2 x 2 pixels
    np.testing.assert_array_equal(gw, np.full((2, 3, 1, 1), 12000.0))


def test_float16_batch_norm_over_70000_rows_has_its_batch_sums_added_in_float32(arr):
    """batch_norm's statistics are means (float32 already); its beta and gamma gradients
    are sums over the batch, which stopped at 1024 for gradients of 0.5 in float16."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((_BATCH, 2)).astype(np.float16)
    with using_config("train", True):
        _, (_, gg, gb) = grads(
            lambda v, g, b: F.batch_norm(
                v, g, b, half(arr, np.zeros(2)), half(arr, np.ones(2)), eps=1e-5
            ),
            half(arr, x),
            half(arr, np.ones(2)),
            half(arr, np.zeros(2)),
            gy=half(arr, 0.5),
        )
    np.testing.assert_array_equal(gb, np.full(2, np.float16(35000.0)))  # 35008: float16's
    # sum(0.5 * xhat) is 0 up to float16's rounding of xhat (not 1024 * something)
    assert np.abs(gg).max() < 16.0


def test_float16_repeated_index_gradients_add_in_float16_as_pytorchs_cpu(arr):
    """Not a sum over an axis: the gradient of an index that picks one element 10,000 times
    adds the repeats one after the other (the backend's scatter-add), in float16, where
    2048 + 1 is 2048; PyTorch's CPU indexing and embedding gradients give 2048 too."""
    picks = np.zeros(10000, np.int64)
    _, (g,) = grads(lambda v: v[picks], half(arr, np.zeros(3)))
    np.testing.assert_array_equal(g, [2048.0, 0.0, 0.0])
    _, (g,) = grads(lambda w: F.embed_id(picks, w), half(arr, np.zeros((3, 2))))
    np.testing.assert_array_equal(g, [[2048.0, 2048.0], [0.0, 0.0], [0.0, 0.0]])


def test_float16_losses_under_vmap_add_each_samples_batch_in_float32():
    """vmap's rules of the fused losses follow the functions: each sample's batch past
    65504 (or a per-sample sum of more than 65504) gave inf."""
    from zerograd.func import vmap

    rng = np.random.default_rng(5)
    a = rng.uniform(0.0, 1.0, (2, _BATCH, 1)).astype(np.float16)
    got = as_numpy(vmap(F.mean_squared_error)(a, np.zeros_like(a)))
    want = (a.astype(np.float64) ** 2).sum(axis=(1, 2)) / _BATCH
    assert got.dtype == np.float16 and _units(got, want).max() <= 1
    s = rng.standard_normal((2, 40000, 5)).astype(np.float16)
    t = rng.integers(0, 5, (2, 40000))
    got = as_numpy(vmap(F.softmax_cross_entropy)(s, t))
    for i in range(2):
        e = _softmax64(s[i].astype(np.float64), 1)
        assert _units(got[i], -np.log(e[np.arange(40000), t[i]]).mean()) <= 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float32_and_float64_losses_softmax_and_pooling_keep_their_bits(dtype):
    """Only floats narrower than float32 compute in float32: float32 and float64 keep the
    bits of the numpy expressions they were computed with (written out here)."""
    rng = np.random.default_rng(6)
    x0, x1 = rng.standard_normal((2, 50, 3)).astype(dtype)
    d = x0 - x1
    y, (g0, _) = grads(F.mean_squared_error, x0, x1)
    assert y.tobytes() == np.asarray(np.sum(d * d) / 50, dtype=dtype).tobytes()
    scale = np.ones((), dtype) * (2.0 / 50)
    assert g0.tobytes() == np.asarray(d * scale, dtype=dtype).tobytes()
    x = (rng.standard_normal((40, 7)) * 3).astype(dtype)
    t = rng.integers(0, 7, 40)
    z = x - np.max(x, axis=1, keepdims=True)
    e = np.exp(z)
    s = np.sum(e, axis=1, keepdims=True)
    rows = np.log(s)[:, 0] - z[np.arange(40), t]
    y, (g,) = grads(lambda v: F.softmax_cross_entropy(v, t), x)
    assert y.tobytes() == np.asarray(np.sum(rows) / 40, dtype=dtype).tobytes()
    p = e / s
    np.subtract.at(p, (np.arange(40), t), 1)
    assert g.tobytes() == (p * np.asarray(np.ones((), dtype) / 40, dtype=dtype)).tobytes()
    for axis in (0, 1):
        m = np.max(x, axis=axis, keepdims=True)
        ex = np.exp(x - m)
        want = ex / np.sum(ex, axis=axis, keepdims=True)
        assert as_numpy(F.softmax(x, axis=axis)).tobytes() == want.tobytes()
        want = (x - m) - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
        assert as_numpy(F.log_softmax(x, axis=axis)).tobytes() == want.tobytes()
    img = rng.standard_normal((2, 3, 6, 6)).astype(dtype)
    want = sum(img[:, :, j::2, i::2] for j in range(2) for i in range(2)) / 4
    assert as_numpy(F.average_pooling(img, 2, 2)).tobytes() == want.tobytes()


def test_clip_grad_of_float16_gradients_squares_and_adds_in_float32():
    """float16 gradients of norm past 256: their squares (300**2) or the sum of 70,000 of
    them is inf in float16, which scaled every gradient to 0 with no warning; squared and
    added in float32 the step is the clipped gradient (PyTorch's norms add in float32)."""
    a = Parameter(np.zeros(3, np.float16))
    b = Parameter(np.zeros(70000, np.float16))
    a.grad = Variable(np.array([300.0, 0.0, -400.0], np.float16))
    b.grad = Variable(np.ones(70000, np.float16))
    opt = O.SGD(lr=1.0).setup([a, b])
    opt.add_hook(O.ClipGrad(1.0))
    opt.update()
    norm = np.sqrt(300.0**2 + 400.0**2 + 70000)
    assert a.data.dtype == b.data.dtype == np.float16
    np.testing.assert_allclose(a.data, [-300 / norm, 0.0, 400 / norm], rtol=2e-3)
    np.testing.assert_allclose(b.data, np.full(70000, -1 / norm), rtol=2e-3)


@pytest.mark.parametrize("max_norm", [1e-3, 1e-2, 1.0])
def test_clip_grad_scales_float16_gradients_in_float32_and_rounds_once(max_norm):
    """The factor max_norm / norm was rounded to float16 before it scaled a float16
    gradient: 1e-2 / 6e4 became 1.788e-7 (a subnormal, 7% off), so the clipped norm was
    7% past max_norm, and 1e-3 / 6e4 became 0, which zeroed gradients whose clipped
    values (5e-4) float16 holds. (torch 2.13's clip_grad_norm_ rounds the factor too:
    0.005363 and 0 for these.) The gradient is scaled in float32 and rounded once."""
    p = Parameter(np.zeros(4, np.float16))
    g = np.full(4, 30000.0, np.float16)  # norm 60000
    p.grad = Variable(g.copy())
    opt = O.SGD(lr=1.0).setup([p])
    opt.add_hook(O.ClipGrad(max_norm))
    opt.update()
    want = (-(30000.0 * max_norm / (60000.0 + 1e-6)) * np.ones(4)).astype(np.float16)
    assert p.data.dtype == np.float16
    assert p.data.tobytes() == want.tobytes()
    assert np.linalg.norm(p.data.astype(np.float64)) <= max_norm * (1 + 2**-10)


# --- float16 batch_norm: statistics and the backward's sums in float32, rounded once ---


def _batch_norm64(x, gamma, beta, gy, eps):
    """Train-mode batch_norm over axis 0 in float64 by hand: y, gx, ggamma, gbeta, mean, var."""
    mu = x.mean(axis=0)
    xc = x - mu
    var = (xc * xc).mean(axis=0)
    std = np.sqrt(var + eps)
    xhat = xc / std
    gh = gy * gamma
    gx = (gh - gh.mean(axis=0) - xhat * (gh * xhat).mean(axis=0)) / std
    return xhat * gamma + beta, gx, (gy * xhat).sum(axis=0), gy.sum(axis=0), mu, var


@pytest.mark.parametrize("scale", [100.0, 1e4])
def test_float16_batch_norm_computes_its_statistics_in_float32(arr, scale):
    """PyTorch's float16 batch norm: statistics, and the backward's sums, in float32, each
    result rounded once to float16. zerograd squared x - mean in float16, which overflows
    past 256: at 100 times these rows the output and the gradients were all 0 (numpy's
    overflow warning), at 1e4 as well. Now within a float16 unit of float64's, silently."""
    x = (np.array([[1, 2], [3, -1], [-2, 5]]) * scale).astype(np.float16)
    gy = np.array([[1, 0.5], [-1, 2], [0.25, 1]], np.float16)
    gamma, beta = np.array([1.5, -0.5], np.float16), np.array([0.25, 2], np.float16)
    mean, var = half(arr, [1, -2]), half(arr, [3, 0.5])
    eps, decay = 2e-5, 0.9
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with using_config("train", True):
            y, (gx, gg, gb) = grads(
                lambda v, g, b: F.batch_norm(v, g, b, mean, var, decay=decay, eps=eps),
                half(arr, x),
                half(arr, gamma),
                half(arr, beta),
                gy=half(arr, gy),
            )
    f64 = [a.astype(np.float64) for a in (x, gamma, beta, gy)]
    y64, gx64, gg64, gb64, mu64, var64 = _batch_norm64(*f64, eps)
    for got, want in ((y, y64), (gx, gx64), (gg, gg64), (gb, gb64)):
        assert got.dtype == np.float16
        assert _units(got, want).max() <= 1.5  # float32 steps, one float16 rounding
    want_mean = decay * np.array([1, -2]) + (1 - decay) * mu64
    want_var = decay * np.array([3, 0.5]) + (1 - decay) * var64 * 3 / 2
    assert as_numpy(mean).dtype == as_numpy(var).dtype == np.float16
    assert _units(as_numpy(mean), want_mean).max() <= 0.5 + 1e-3
    if scale == 100.0:
        assert _units(as_numpy(var), want_var).max() <= 0.5 + 1e-3
        assert [str(w.message) for w in caught] == []  # no overflow on the way
    else:  # a running variance past 65504 (6e7) is inf in float16, as in PyTorch (silent)
        assert np.isinf(as_numpy(var)).all()
        assert {str(w.message) for w in caught} <= {"overflow encountered in cast"}


def test_float16_batch_norm_in_test_mode_subtracts_the_mean_in_float32(arr):
    """x - mean past 65504 (6e4 against a running mean of -6e4) was inf in float16, and so
    was the output; computed in float32 and rounded once, it is x's standard score."""
    x = np.array([[6e4, 1.0], [-6e4, -1.0]], np.float16)
    mean, var = np.array([-6e4, 0.0], np.float16), np.array([1.6e9 / 2**16, 4.0], np.float16)
    gamma, beta = np.array([2.0, 1.0], np.float16), np.array([0.5, 0.0], np.float16)
    gy = np.array([[1.0, 1.0], [1.0, -1.0]], np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with using_config("train", False):
            y, (gx, gg) = grads(
                lambda v, g: F.batch_norm(v, g, half(arr, beta), half(arr, mean), half(arr, var)),
                half(arr, x),
                half(arr, gamma),
                gy=half(arr, gy),
            )
    x64, m64, v64, g64 = (a.astype(np.float64) for a in (x, mean, var, gamma))
    std = np.sqrt(v64 + 2e-5)
    xhat = (x64 - m64) / std
    assert y.dtype == gx.dtype == gg.dtype == np.float16
    assert _units(y, xhat * g64 + beta).max() <= 1
    assert _units(gx, gy * g64 / std).max() <= 1
    assert _units(gg, (gy * xhat).sum(axis=0)).max() <= 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("train", [True, False])
def test_float32_and_float64_batch_norm_keep_their_bits(dtype, train):
    """Only float16 batch_norm computes in a wider float: float32 and float64 keep the
    bits of the formula they were computed with (written out here with zerograd's
    functions), values, first and second gradients and the running statistics."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((6, 3, 4)) * 3 + 1).astype(dtype)
    gamma, beta, gy = (rng.standard_normal(s).astype(dtype) for s in (3, 3, (6, 3, 4)))
    mean, var = rng.standard_normal(3).astype(dtype), rng.uniform(0.5, 2, 3).astype(dtype)
    eps, decay, axes, shape = 1e-3, 0.8, (0, 2), (1, 3, 1)

    def by_hand(v, g, b):
        if train:
            mu = F.mean(v, axis=axes, keepdims=True)
            xc = v - mu
            xhat = xc * (1 / F.sqrt(F.mean(xc * xc, axis=axes, keepdims=True) + eps))
        else:
            xhat = (v - mean.reshape(shape)) * (1 / np.sqrt(var + eps)).reshape(shape)
        return F.reshape(g, shape) * xhat + F.reshape(b, shape)

    def second(f):
        vs = [Variable(a) for a in (x, gamma, beta)]
        with using_config("train", train):
            y = f(*vs)
        F.sum(y * gy).backward(create_graph=True)
        firsts = [v.grad for v in vs]
        for v in vs:
            v.cleargrad()
        (F.sum(firsts[0] * firsts[0]) + F.sum(firsts[1] * firsts[1])).backward()
        seconds = [as_numpy(v.grad) for v in vs[:2]]  # beta's first gradient is gy: constant
        assert vs[2].grad is None
        return [as_numpy(y)] + [as_numpy(g) for g in firsts] + seconds

    m, v = mean.copy(), var.copy()
    got = second(lambda a, g, b: F.batch_norm(a, g, b, m, v, decay=decay, eps=eps))
    want = second(by_hand)
    assert [a.tobytes() for a in got] == [a.tobytes() for a in want]
    assert [a.dtype for a in got] == [np.dtype(dtype)] * len(got)
    if train:
        mu = as_numpy(F.mean(x, axis=axes))
        xc = x - mu.reshape(shape)
        bv = as_numpy(F.mean(xc * xc, axis=axes))
        assert m.tobytes() == (mean * decay + mu * (1 - decay)).tobytes()
        assert v.tobytes() == (var * decay + bv * ((1 - decay) * (24 / 23))).tobytes()
    else:
        assert m.tobytes() == mean.tobytes() and v.tobytes() == var.tobytes()


def test_a_float16_batch_norm_layer_keeps_float16_statistics_and_gives_finite_outputs():
    """The BatchNorm layer runs F.batch_norm: at 100 times these rows its float16 output was
    all 0 in train mode and its running variance inf, so test mode gave 0 as well."""
    from zerograd_nn.layers import BatchNorm

    x = (np.array([[1, 2], [3, -1], [-2, 5]]) * 100).astype(np.float16)
    layer = BatchNorm()
    with using_config("train", True):
        y = as_numpy(layer(x))
    x64 = x.astype(np.float64)
    xhat = (x64 - x64.mean(axis=0)) / np.sqrt(x64.var(axis=0) + 2e-5)
    assert y.dtype == np.float16 and _units(y, xhat).max() <= 1
    stats = [as_numpy(p.data) for p in (layer.avg_mean, layer.avg_var)]
    assert [s.dtype for s in stats] == [np.float16, np.float16]
    want_var = 0.9 + 0.1 * x64.var(axis=0) * 3 / 2
    assert _units(stats[1], want_var).max() <= 0.5 + 1e-3
    with using_config("train", False):
        y = as_numpy(layer(x))
    want = (x64 - stats[0]) / np.sqrt(stats[1].astype(np.float64) + 2e-5)
    assert y.dtype == np.float16 and _units(y, want).max() <= 1


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_the_simple_softmaxes_and_log_softmax_of_max_and_minus_max_warn_of_the_overflow(dtype):
    """from-pytorch.md: the row [max, 0, -max] is silent in F.softmax and
    F.softmax_cross_entropy (above), but softmax_simple, softmax_cross_entropy_simple and
    log_softmax (whose -2 max is -inf) report the overflow; float16's log_softmax computes
    in float32 and reports it where the -2 max is rounded to float16 (the cast)."""
    big = np.finfo(dtype).max
    x = np.array([[big, 0.0, -big], [1.0, 0.0, -1.0]], dtype)
    t = np.array([1, 0])
    cases = [
        ("softmax_simple", F.softmax_simple, "subtract"),
        (
            "softmax_cross_entropy_simple",
            lambda v: F.softmax_cross_entropy_simple(v, t),
            "subtract",
        ),
        ("log_softmax", F.log_softmax, "cast" if dtype == np.float16 else "subtract"),
    ]
    got = {}
    for name, f, where in cases:
        with pytest.warns(RuntimeWarning, match=f"overflow encountered in {where}"):
            got[name] = as_numpy(f(x).data)
        assert got[name].dtype == dtype, name
    np.testing.assert_array_equal(got["log_softmax"][0], [0.0, -big, -inf])
