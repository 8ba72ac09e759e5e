"""Values and derivatives where they are not unique or not finite: kinks, ties, zeros,
infinities, float16 and empty arrays.

Each reference is worked out by hand (in float64 with numpy), never by another framework.
The table "At kinks and ties" of docs/from-pytorch.md names the test behind each row.
"""

import warnings

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Variable
from zerograd.backends import as_numpy
from zerograd.functions.reduction import DivideByCount
from zerograd.testing.kinks import grads, half, quiet

inf, nan = np.inf, np.nan


# --- pow ---


@pytest.mark.parametrize("c", [0, 0.0])
def test_x_to_the_zero_has_a_zero_gradient_at_zero(arr, c):
    # x ** 0 is the constant 1: its derivative is 0 everywhere, x = 0 included (it was
    # 0 * 0 ** -1 = nan there)
    y, (g,) = quiet(grads, lambda x: x**c, arr([0.0, 2.0, -1.0]))
    np.testing.assert_array_equal(y, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0])


def test_second_derivative_of_x_to_the_first_is_zero_at_zero(arr):
    # d/dx x = 1 * x ** 0, whose derivative is 0 (was nan at x = 0)
    _, (g,) = quiet(grads, lambda x: x**1, arr([0.0, 3.0]), order=2)
    np.testing.assert_array_equal(g, [0.0, 0.0])
    _, (g,) = quiet(grads, lambda x: x**2, arr([0.0, 3.0]), order=2)
    np.testing.assert_array_equal(g, [2.0, 2.0])  # d2/dx2 x**2 = 2


def test_pow_at_zero_is_infinite_where_the_derivative_is(arr):
    # IEEE limits, as PyTorch: d/dx x**0.5 = 0.5 / sqrt(x), d/dx x**-1 = -1 / x**2
    _, (g,) = quiet(grads, lambda x: x**0.5, arr([0.0, 4.0]))
    np.testing.assert_array_equal(g, [inf, 0.25])
    y, (g,) = quiet(grads, lambda x: x**-1, arr([0.0, 2.0]))
    np.testing.assert_array_equal(y, [inf, 0.5])
    np.testing.assert_array_equal(g, [-inf, -0.25])
    _, (g,) = grads(lambda x: x**2, arr([0.0, -1.0]))
    np.testing.assert_array_equal(g, [0.0, -2.0])


def test_a_variable_exponent_at_a_zero_base_gives_pytorchs_gradients(arr):
    base = [0.0, 0.0, 0.0, 2.0, 0.0]
    expo = [0.0, 2.0, 0.5, 0.0, -1.0]
    y, (gb, ge) = quiet(grads, lambda b, e: b**e, arr(base), arr(expo))
    np.testing.assert_array_equal(y, [1.0, 0.0, 0.0, 1.0, inf])
    # d/db b**e = e * b**(e - 1): 0 where e = 0 (b**0 is constant), inf for 0 < e < 1
    np.testing.assert_array_equal(gb, [0.0, 0.0, inf, 0.0, -inf])
    # d/de b**e = b**e * log(b): 0 at b = 0 for e >= 0 (0**e is constant there; the
    # formula gave nan and -inf), log(2) at (2, 0), inf * -inf where e < 0
    np.testing.assert_array_equal(ge, [0.0, 0.0, 0.0, np.log(2.0), -inf])


@pytest.mark.parametrize("c, dtype", [([2.0, 3.0], "float64"), ([2, 3], "int64"), (3, "int64")])
def test_an_array_exponent_differentiates_thrice_at_a_negative_base_with_no_log(arr, c, dtype):
    # x ** c for a constant array c (np.int64(3) too): the derivative's exponent c - 1
    # stayed a Variable, so the second walk differentiated it too, through log(x): nan for
    # x < 0, a RuntimeWarning (a FloatingPointError under np.errstate(invalid="raise"))
    # for a gradient nothing asks for
    c = arr(c, dtype)
    x0 = np.array([-1.5, -0.5])
    ce = np.asarray(as_numpy(c), dtype=np.float64)
    x = Variable(arr(x0))
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        F.sum(x**c).backward(create_graph=True)
        got = []
        for _ in range(3):
            g = x.grad
            got.append(as_numpy(g))
            x.cleargrad()
            F.sum(g).backward(create_graph=True)
        got.append(as_numpy(x.grad))
    k = np.ones_like(x0)
    for order, g in enumerate(got):  # c (c - 1) ... (c - order) x ** (c - order - 1)
        k = k * (ce - order)
        np.testing.assert_allclose(g, k * x0 ** (ce - order - 1), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_a_variable_exponent_of_zero_at_a_subnormal_base_has_a_zero_base_gradient(arr, dtype):
    # d/db b**0 = 0 * b**-1: b**-1 overflows for the smallest subnormal (and for 0), where
    # the gradient was nan with numpy's overflow and invalid warnings; torch.pow's is 0
    tiny = float(np.finfo(dtype).smallest_subnormal)
    make = (lambda v: half(arr, v)) if dtype == "float16" else (lambda v: arr(v, dtype))
    base, expo = make([tiny, 0.5, 3.0]), make([0.0, 0.0, 0.0])
    # (underflow is no fault here: numpy 1's casts of subnormals report it)
    with np.errstate(over="raise", invalid="raise", divide="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        y, (gb, ge) = grads(lambda b, e: b**e, base, expo)
    np.testing.assert_array_equal(y, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(gb, [0.0, 0.0, 0.0])
    # d/de b**e at e = 0 is log(b), finite for the subnormal (float64's: -744.44)
    want = np.log(np.array([tiny, 0.5, 3.0]))
    np.testing.assert_allclose(ge, want, rtol=1e-3 if dtype == "float16" else 1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_mixed_second_derivative_of_a_variable_power_at_a_zero_exponent_is_one_over_the_base(
    arr, dtype
):
    # d/de (d/db b**e) = b**(e-1) + e b**(e-1) log(b): 1/b at e = 0. Lifting every base
    # below 1 (to keep b**-1 finite for subnormals) gave 1 there: the lift belongs only
    # where b**-1 overflows
    base = Variable(arr([0.5, 0.25, 2.0, 4.0], dtype))
    expo = Variable(arr([0.0, 0.0, 0.0, 0.0], dtype))
    F.sum(base**expo).backward(create_graph=True)
    gb = base.grad
    base.cleargrad()
    expo.cleargrad()
    F.sum(gb).backward()
    np.testing.assert_array_equal(as_numpy(expo.grad), [2.0, 4.0, 0.5, 0.25])


def test_a_zero_base_raised_to_a_variable_has_a_zero_gradient(arr):
    _, (g,) = quiet(grads, lambda x: 0.0**x, arr([0.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0])  # was [-inf, nan]
    _, (g,) = grads(lambda x: 2.0**x, arr([0.0, 1.0]))
    np.testing.assert_allclose(g, [np.log(2.0), 2 * np.log(2.0)], rtol=1e-15)


# --- division ---


def test_the_divisors_gradient_is_right_where_its_square_overflows_float16():
    a = np.array([1000.0, 100.0], np.float16)
    b = np.array([300.0, 260.0], np.float16)
    y, (ga, gb) = grads(lambda u, v: u / v, a, b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(ga, 1 / b64, rtol=2e-3)
    # -a / b**2: b * b is inf in float16 (past 256), which made the gradient -0
    np.testing.assert_allclose(gb, -a64 / b64**2, rtol=2e-3)
    assert gb.dtype == np.float16 and np.all(gb < 0)


def test_the_divisors_gradient_is_right_where_its_square_underflows(arr):
    # 1e-200 ** 2 is 0 in float64: the gradient was -inf instead of -1e200
    _, (ga, gb) = grads(lambda u, v: u / v, arr([1e-200]), arr([1e-200]))
    np.testing.assert_allclose(ga, [1e200], rtol=1e-15)
    np.testing.assert_allclose(gb, [-1e200], rtol=1e-15)


def test_division_by_zero_gives_ieee_infinities_and_their_derivatives(arr):
    y, (ga, gb) = quiet(grads, lambda u, v: u / v, arr([1.0, 0.0, -1.0]), arr([0.0, 0.0, 0.0]))
    np.testing.assert_array_equal(y, [inf, nan, -inf])
    np.testing.assert_array_equal(ga, [inf, inf, inf])  # 1 / 0
    np.testing.assert_array_equal(gb, [-inf, nan, inf])  # -(u / v) / v
    # d2/dx2 (1 / x) = 2 / x**3: +inf at x = +0 (the x * x formula gave nan)
    _, (g,) = quiet(grads, lambda x: 1.0 / x, arr([0.0, 2.0]), order=2)
    np.testing.assert_array_equal(g, [inf, 0.25])


# --- sqrt, log, exp, tanh at their limits ---


def test_sqrt_log_exp_tanh_give_ieee_limits(arr):
    _, (g,) = quiet(grads, F.sqrt, arr([0.0, 4.0]))
    np.testing.assert_array_equal(g, [inf, 0.25])  # 1 / (2 sqrt(x))
    y, (g,) = quiet(grads, F.log, arr([0.0, 1.0, -1.0]))
    np.testing.assert_array_equal(y, [-inf, 0.0, nan])
    np.testing.assert_array_equal(g, [inf, 1.0, -1.0])  # 1 / x
    y, (g,) = quiet(grads, F.exp, arr([inf, -inf, 710.0]))
    np.testing.assert_array_equal(y, [inf, 0.0, inf])
    np.testing.assert_array_equal(g, [inf, 0.0, inf])
    y, (g,) = grads(F.tanh, arr([inf, -inf, 20.0]))
    np.testing.assert_array_equal(y, [1.0, -1.0, 1.0])
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0])  # 1 - tanh(x) ** 2


# --- clip ---


def test_clip_passes_the_gradient_at_exactly_its_bounds(arr):
    y, (g,) = grads(lambda x: F.clip(x, 0.0, 1.0), arr([0.0, 1.0, 0.5, -1.0, 2.0, nan]))
    np.testing.assert_array_equal(y, [0.0, 1.0, 0.5, 0.0, 1.0, nan])
    np.testing.assert_array_equal(g, [1.0, 1.0, 1.0, 0.0, 0.0, 0.0])  # x_min <= x <= x_max


# --- max and min: ties ---


def test_max_and_min_give_every_tie_the_whole_gradient(arr):
    # DeZero's rule: every element equal to the result gets the output's gradient
    # (PyTorch's max/amax split it evenly, torch.max(x, dim) gives it to one index)
    _, (g,) = grads(F.max, arr([1.0, 3.0, 3.0]))
    np.testing.assert_array_equal(g, [0.0, 1.0, 1.0])
    _, (g,) = grads(F.min, arr([2.0, 1.0, 1.0]))
    np.testing.assert_array_equal(g, [0.0, 1.0, 1.0])
    _, (g,) = grads(lambda x: F.max(x, axis=1), arr([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]))
    np.testing.assert_array_equal(g, [[0.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    y, (g,) = grads(lambda x: F.max(x, axis=0, keepdims=True), arr([[1.0, 3.0], [1.0, 2.0]]))
    np.testing.assert_array_equal(y, [[1.0, 3.0]])
    np.testing.assert_array_equal(g, [[1.0, 1.0], [1.0, 0.0]])
    _, (g,) = grads(F.max, arr([inf, 1.0, inf]))
    np.testing.assert_array_equal(g, [1.0, 0.0, 1.0])


def test_a_max_or_min_over_nan_is_nan_and_gives_every_nan_the_gradient(arr):
    """A nan makes the result nan (numpy's max and min propagate it), and every nan takes
    the whole gradient, as every tie does (PyTorch's max gives it to the nan too: split
    among several, to the first with a dim; amax makes the row's gradient nan). No
    element took it: nan equals nothing."""
    for f in (F.max, F.min):
        y, (g,) = grads(f, arr([1.0, nan, 3.0]))
        assert np.isnan(y)
        np.testing.assert_array_equal(g, [0.0, 1.0, 0.0])
        y, (g,) = grads(f, arr([nan, 1.0, nan]))
        np.testing.assert_array_equal(g, [1.0, 0.0, 1.0])
        # along an axis: each row on its own; infinities are values like any other
        x = arr(
            [
                [1.0, nan, 3.0, nan],
                [1.0, 2.0, 2.0, 0.0],
                [inf, nan, -inf, 0.0],
                [inf, -inf, 5.0, 5.0],
            ]
        )
        y, (g,) = grads(lambda v, f=f: f(v, axis=1), x)
        top = f is F.max
        np.testing.assert_array_equal(y, [nan, 2.0, nan, inf] if top else [nan, 0.0, nan, -inf])
        np.testing.assert_array_equal(
            g,
            [
                [0.0, 1.0, 0.0, 1.0],
                [0.0, 1.0, 1.0, 0.0] if top else [0.0, 0.0, 0.0, 1.0],
                [0.0, 1.0, 0.0, 0.0],
                [1.0, 0.0, 0.0, 0.0] if top else [0.0, 1.0, 0.0, 0.0],
            ],
        )
        y, (g,) = grads(lambda v, f=f: f(v, axis=0, keepdims=True), arr([[nan, 1.0], [2.0, 1.0]]))
        assert np.isnan(y[0, 0]) and y.shape == (1, 2)
        np.testing.assert_array_equal(g, [[1.0, 1.0], [0.0, 1.0]])


def test_max_of_nothing_is_refused_and_sum_of_nothing_is_zero(arr):
    with pytest.raises(ValueError, match=r"max: the input of shape \(0,\) has no elements"):
        F.max(Variable(arr(np.zeros(0))))
    with pytest.raises(ValueError, match=r"min: the input of shape \(0, 3\) has no elements"):
        F.min(Variable(arr(np.zeros((0, 3)))), axis=0)
    y, (g,) = grads(F.sum, arr(np.zeros((0, 3))))
    assert float(y) == 0.0 and g.shape == (0, 3)
    y, (g,) = grads(lambda x: F.max(x, axis=1), arr(np.zeros((0, 3))))
    assert y.shape == (0,) and g.shape == (0, 3)


# --- float16 ---


def rounded_once(x, want):
    """Whether float16 ``x`` is the float64 ``want`` rounded to float16 (within half a
    spacing, plus float32's rounding of a sum added in float32)."""
    want = np.asarray(want, np.float64)
    spacing = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
    error = np.abs(np.asarray(x, np.float64) - want)
    return np.all(error <= spacing * 0.5 + np.abs(want) * 2.0**-22)


def test_float16_sums_add_in_float32_and_round_once(arr):
    """F.sum of float16 adds in float32 and rounds the result once, as PyTorch does. numpy
    adds an axis other than the last one row after row in float16, where 2048 + 1 is 2048:
    a column of 10,000 ones summed to 2048. A result past 65504 is still inf (as PyTorch's:
    float16 has no such number), and the mean of 70,000 ones is 1."""
    ones = half(arr, np.ones((10000, 3)))
    y = F.sum(ones, axis=0)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(as_numpy(y), [10000.0, 10000.0, 10000.0])
    np.testing.assert_array_equal(as_numpy(F.sum(ones)), 30000.0)
    np.testing.assert_array_equal(as_numpy(F.sum(ones, axis=0, keepdims=True)), [[1e4] * 3])
    x = np.random.default_rng(6).uniform(0.0, 0.3, (3, 12000, 4)).astype(np.float16)
    for axis in (None, 1, (0, 1), (1, 2)):
        got = as_numpy(F.sum(half(arr, x), axis=axis))
        assert got.dtype == np.float16
        assert rounded_once(got, x.astype(np.float64).sum(axis=axis)), axis
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert float(as_numpy(F.sum(half(arr, np.ones(70000))))) == inf
    y, (g,) = grads(F.mean, half(arr, np.ones(70000)))
    assert y.dtype == np.float16 and float(y) == 1.0
    assert g.dtype == np.float16 and (g == np.float16(1 / 70000)).all()


def test_float16_gradients_of_broadcasting_add_in_float32(arr):
    """The gradient of a broadcast is a sum over the broadcast axes (sum_to): a float16 bias
    added to 12,000 rows got 2048 per element, and F.sum_to of float16 rows rounded at
    each row; both add in float32 now."""
    rows = half(arr, np.ones((12000, 3)))
    _, (_, gb) = grads(lambda x, b: x + b, rows, half(arr, np.ones(3)))
    assert gb.dtype == np.float16
    np.testing.assert_array_equal(gb, [12000.0, 12000.0, 12000.0])
    _, (gb,) = grads(lambda b: F.broadcast_to(b, (12000, 3)), half(arr, np.ones((1, 3))))
    np.testing.assert_array_equal(gb, [[12000.0, 12000.0, 12000.0]])
    x = np.random.default_rng(7).uniform(0.0, 1.0, (12000, 3)).astype(np.float16)
    got = as_numpy(F.sum_to(half(arr, x), (1, 3)))
    assert got.dtype == np.float16 and rounded_once(got, x.astype(np.float64).sum(0, keepdims=True))


def test_a_float16_count_past_65504_divides_in_float32(arr):
    """DivideByCount divides float16 by a count in float32 and rounds once: ``x / 70000``
    makes 70,000 a float16 first, which is inf (the quotient 0), and a count past 2048 is
    rounded (3001 is 3000). Its gradient is the same division."""
    x = np.array([7000.0, -3.0, 0.5, 65504.0], np.float16)
    for n in (70000, 3001, 7):
        want = x.astype(np.float64) / n
        y, (g,) = grads(DivideByCount(n), half(arr, x))
        assert y.dtype == g.dtype == np.float16
        assert rounded_once(y, want), n
        np.testing.assert_array_equal(g, np.full(4, np.float16(1 / n)))
    # float32 and float64: the operator's bits (the Variable's: numpy 1.26's float32 array
    # divided by the Python int 70000 is float64)
    for dtype in ("float32", "float64"):
        v = Variable(arr(x, dtype))
        got = as_numpy(DivideByCount(70000)(v))
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, as_numpy(v / 70000))


@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, False), ((0, 2), True), (-1, False)])
def test_a_float16_mean_is_the_exact_mean_rounded_and_its_gradient_is_gy_over_n(
    arr, axis, keepdims
):
    """Each float16 mean is the float64 mean of its elements rounded to float16 (within half
    a spacing, plus float32's rounding of the sum); before, a sum rounded to float16 at
    each of its 40 to 1,200 terms was multiplied by float16(1 / n), a subnormal number
    from n = 16,385 on. The gradient is ``gy / n`` divided in float32 and rounded once, as
    PyTorch's (it was ``gy * float16(1 / n)``, one float16 rounding more)."""
    x = np.random.default_rng(3).uniform(0.0, 3.0, (40, 3, 400)).astype(np.float16)
    n = x.size if axis is None else np.prod([x.shape[a] for a in np.atleast_1d(axis)])
    want = x.astype(np.float64).mean(axis=axis, keepdims=keepdims)
    xv = Variable(half(arr, x))
    y = F.mean(xv, axis=axis, keepdims=keepdims)
    assert y.dtype == np.float16 and y.shape == np.shape(want)
    assert rounded_once(as_numpy(y), want)
    w = np.random.default_rng(4).uniform(-2.0, 2.0, y.shape).astype(np.float16)
    F.sum(y * half(arr, w)).backward()
    scaled = (w.astype(np.float64) / n).astype(np.float16)  # gy / n, rounded once
    if axis is not None and not keepdims:
        scaled = np.expand_dims(scaled, axis)
    np.testing.assert_array_equal(as_numpy(xv.grad), np.broadcast_to(scaled, x.shape))
    assert xv.grad.dtype == np.float16


def test_float32_and_float64_sums_keep_numpys_bits(arr):
    """Only floats narrower than float32 add in float32: float32 and float64 sums, and
    broadcasting's gradients, are numpy's own sums, bit for bit."""
    for dtype in ("float32", "float64"):
        x = np.random.default_rng(8).standard_normal((50, 7, 30)).astype(dtype)
        for axis in (None, 0, (0, 2), -1):
            got = as_numpy(F.sum(arr(x, dtype), axis=axis))
            assert got.dtype == np.dtype(dtype)
            np.testing.assert_array_equal(got, np.sum(x, axis=axis))
        _, (_, gb) = grads(lambda u, v: u * v, arr(x, dtype), arr(np.ones(30), dtype))
        np.testing.assert_array_equal(gb, np.sum(x, axis=(0, 1)))


def test_float32_and_float64_means_keep_their_sum_times_1_over_n():
    """Only 16-bit floats go through numpy's mean: float32 and float64 keep their bits."""
    for dtype in (np.float32, np.float64):
        x = np.random.default_rng(5).standard_normal((7, 300)).astype(dtype)
        y = F.mean(x, axis=1)
        assert isinstance(y.creator, F.Mul)  # sum, then times m / n
        np.testing.assert_array_equal(y.data, np.sum(x, axis=1) * dtype(1 / 300))


def test_a_python_number_past_float16s_range_is_inf_with_numpys_warning(backend, arr):
    """Kept as numpy does (PyTorch computes these in float32): a Python number next to
    float16 data becomes float16 first, so 70,000 and 1e5 are inf, and numpy warns of the
    cast (F.DivideByCount divides by a large count)."""
    if backend.name != "numpy" or not np.__version__.startswith("2"):
        pytest.skip(
            f"numpy 2's promotion of Python numbers (NEP 50) is the reference; got "
            f"{backend.name} with numpy {np.__version__}"
        )
    values = np.array([1e-3, 2.0], np.float16)
    for f in (lambda a: a / 70000, lambda a: a * 1e5, lambda a: 65520.0 + a):
        with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
            want = f(values)
        with np.errstate(over="ignore"):  # the number may be converted (and cached) already
            got = as_numpy(f(Variable(arr(values, "float16"))))
        assert got.dtype == want.dtype == np.float16
        assert got.tolist() == want.tolist()
