"""zerograd_nn.functional where derivatives are not unique or values not finite: the kinks
of the activations, ties in pooling windows, infinite and huge logits, probabilities of
exactly 0 and 1, float16.

Every reference is worked out by hand (in float64 with numpy), never by another framework.
The table "At kinks and ties" of docs/from-pytorch.md names the test behind each row.
"""

import math
import warnings

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Variable, using_config
from zerograd.backends import as_numpy

inf, nan = np.inf, np.nan


def grads(f, *arrays, gy=None, order=1):
    """``f(*xs)``'s value and each input's gradient; ``gy`` weights the outputs (default
    all ones); ``order=2`` gives the gradients of the sum of the first gradients."""
    xs = [Variable(a) for a in arrays]
    y = f(*xs)
    out = y if gy is None else F.sum(y * gy)
    out.backward(create_graph=order == 2)
    if order == 2:
        total = None
        for x in xs:
            g = F.sum(x.grad)
            total = g if total is None else total + g
            x.cleargrad()
        total.backward()
    return as_numpy(y), [None if x.grad is None else as_numpy(x.grad) for x in xs]


def quiet(f, *args, **kwargs):
    """``f(...)`` with numpy's IEEE warnings off (infinite and nan results are the point)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return f(*args, **kwargs)


def half(arr, values):
    """``arr(values, "float16")``; the test skips, saying why, on a backend without float16
    (array-api-strict's namespace has none)."""
    try:
        return arr(values, "float16")
    except TypeError as exc:
        pytest.skip(f"the backend under test has no float16: {exc}")


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
