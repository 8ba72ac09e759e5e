"""Max and average pooling: values against direct loops, gradients of two orders."""

import gc
import weakref

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Variable, no_grad
from zerograd.backends import as_numpy
from zerograd.testing import check_backward

GEOMETRIES = [(2, 2, 0), (3, 1, 1), ((2, 3), (2, 1), (1, 0)), ((3, 2), 2, (1, 1))]


def loop_pool(x, k, s, p, reduce, fill):
    (kh, kw), (sh, sw), (ph, pw) = F.pair(k), F.pair(s), F.pair(p)
    n, c, h, w = x.shape
    padded = np.full((n, c, h + 2 * ph, w + 2 * pw), fill)
    padded[:, :, ph : ph + h, pw : pw + w] = x
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    y = np.zeros((n, c, oh, ow))
    for a in range(n):
        for ch in range(c):
            for i in range(oh):
                for j in range(ow):
                    y[a, ch, i, j] = reduce(
                        padded[a, ch, i * sh : i * sh + kh, j * sw : j * sw + kw]
                    )
    return y


@pytest.mark.parametrize("k,s,p", GEOMETRIES)
def test_pooling_matches_loop(rand, to_np, k, s, p):
    x = rand(2, 3, 6, 5)
    ref = loop_pool(to_np(x), k, s, p, np.max, -np.inf)
    np.testing.assert_array_equal(to_np(F.pooling(x, k, s, p)), ref)
    np.testing.assert_array_equal(to_np(F.pooling_simple(x, k, s, p)), ref)


@pytest.mark.parametrize("k", [2, (2, 3), (3, 1), (1, 2), 6])
def test_pooling_matches_loop_where_windows_tile_the_input(rand, to_np, k):
    """Windows that tile the input (stride = kernel, no padding) take their own path."""
    x = rand(2, 3, 6, 6)
    ref = loop_pool(to_np(x), k, k, 0, np.max, -np.inf)
    np.testing.assert_array_equal(to_np(F.pooling(x, k, k)), ref)


@pytest.mark.parametrize("f", [F.pooling, F.pooling_simple])
def test_padding_never_wins_the_max(arr, to_np, f):
    x = arr(-np.arange(1.0, 10.0).reshape(1, 1, 3, 3), "float32")  # all negative
    y = f(x, 2, 2, 1)
    assert as_numpy(y).dtype == np.float32
    np.testing.assert_array_equal(to_np(y), [[[[-1.0, -2.0], [-4.0, -5.0]]]])


def test_pooling_gradient_goes_to_the_first_max_only(arr, to_np):
    x = Variable(arr([[[[1.0, 3.0], [3.0, 2.0]]]]))
    F.sum(F.pooling(x, 2, 2)).backward()
    np.testing.assert_array_equal(to_np(x.grad), [[[[0.0, 1.0], [0.0, 0.0]]]])


@pytest.mark.parametrize("k,s,p", GEOMETRIES)
@pytest.mark.parametrize("order", [1, 2])
def test_pooling_grad(rand, k, s, p, order):
    x = rand(1, 2, 5, 4)  # distinct values: max pooling is differentiable there
    check_backward(lambda v: F.pooling(v, k, s, p), x, order=order)
    check_backward(lambda v: F.pooling_simple(v, k, s, p), x, order=order)


def test_pooling_grad_float32(rand):
    check_backward(lambda v: F.pooling(v, 2, 2), rand(2, 2, 4, 4, dtype="float32"))


@pytest.mark.parametrize("k,s,p", GEOMETRIES)
def test_average_pooling_matches_loop(rand, to_np, k, s, p):
    x = rand(2, 3, 6, 5)
    ref = loop_pool(to_np(x), k, s, p, np.mean, 0.0)  # padded zeros count, as in DeZero
    np.testing.assert_allclose(to_np(F.average_pooling(x, k, s, p)), ref, rtol=1e-12)


@pytest.mark.parametrize("order", [1, 2])
def test_average_pooling_grad(rand, order):
    check_backward(
        lambda v: F.average_pooling(v, (2, 3), (1, 2), (1, 0)), rand(1, 2, 4, 5), order=order
    )
    y = F.average_pooling(rand(1, 1, 4, 4, dtype="float32"), 2, 2)
    assert as_numpy(y).dtype == np.float32


def test_pooling_kernel_too_large(rand):
    with pytest.raises(ValueError, match=r"does not fit an input of height/width \(2, 2\)"):
        F.pooling(rand(1, 1, 2, 2), 3)


@pytest.mark.parametrize(
    "shape,k,s", [((2, 2, 4, 6), 2, 2), ((1, 2, 7, 5), 2, 3), ((1, 1, 6, 6), 3, 3)]
)
def test_pooling_grad_tiled_and_gapped_windows(rand, shape, k, s):
    """Windows that tile the input exactly, and windows with gaps between them."""
    x = rand(*shape)
    check_backward(lambda v: F.pooling(v, k, s), x)
    check_backward(lambda v: F.pooling(v, k, s), x, order=2)


# -- ties: one documented rule for both implementations -----------------------------------


@pytest.mark.parametrize("f", [F.pooling, F.pooling_simple])
def test_tied_window_gives_its_gradient_to_the_first_maximum(arr, to_np, f):
    # 4x4 of equal values, 2x2 windows with stride 2: each window's first element (row-major)
    x = Variable(arr(np.full((1, 1, 4, 4), 7.0)))
    y = f(x, 2, 2)
    y.backward()
    expected = np.zeros((4, 4))
    expected[::2, ::2] = 1.0
    np.testing.assert_array_equal(to_np(x.grad)[0, 0], expected)


@pytest.mark.parametrize(
    "k,s,p",
    [(2, 1, 0), (3, 1, 1), ((2, 3), (2, 1), (1, 1)), ((1, 2), (1, 2), 0), ((5, 3), (5, 3), 0)],
)
def test_pooling_and_pooling_simple_agree_on_ties(arr, to_np, k, s, p):
    rng = np.random.default_rng(3)
    data = rng.integers(0, 3, size=(2, 2, 5, 6)).astype("float64")  # many ties
    gy = rng.standard_normal(F.pooling(data, k, s, p).shape)
    grads = []
    for f in (F.pooling, F.pooling_simple):
        x = Variable(arr(data))
        F.sum(f(x, k, s, p) * arr(gy)).backward()
        grads.append(to_np(x.grad))
    np.testing.assert_array_equal(grads[0], grads[1])
    # reference: each window's gy goes to np.argmax of the window (first max, row-major)
    (kh, kw), (sh, sw), (ph, pw) = F.pair(k), F.pair(s), F.pair(p)
    padded = np.pad(data, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=-np.inf)
    ref = np.zeros_like(padded)
    for idx in np.ndindex(gy.shape):
        a, c, i, j = idx
        win = padded[a, c, i * sh : i * sh + kh, j * sw : j * sw + kw]
        r, q = np.unravel_index(np.argmax(win), win.shape)
        ref[a, c, i * sh + r, j * sw + q] += gy[idx]
    np.testing.assert_allclose(grads[0], ref[:, :, ph : ph + 5, pw : pw + 6], rtol=1e-12)


# -- padding larger than half the kernel --------------------------------------------------


@pytest.mark.parametrize("f", [F.pooling, F.pooling_simple, F.average_pooling])
@pytest.mark.parametrize("k,p", [(2, 2), (1, 1), (3, 2), ((2, 3), (0, 2))])
def test_pad_beyond_half_the_kernel_is_refused(rand, f, k, p):
    name = f.__name__
    kh, kw = F.pair(k)
    ph, pw = F.pair(p)
    with pytest.raises(
        ValueError,
        match=rf"^{name}: pad \({ph}, {pw}\) must be at most half the kernel \({kh}, {kw}\)",
    ):
        f(rand(1, 1, 4, 4), k, 1, p)


def test_pad_of_half_the_kernel_is_fine(arr, to_np):
    x = arr(-np.arange(1.0, 5.0).reshape(1, 1, 2, 2))
    y = F.pooling(x, 2, 1, 1)  # every window holds at least one input element
    assert np.isfinite(to_np(y)).all()
    np.testing.assert_array_equal(to_np(y)[0, 0], [[-1, -1, -2], [-1, -1, -2], [-3, -3, -4]])


def test_pooling_simple_checks_its_input_like_pooling():
    with pytest.raises(TypeError, match=r"^pooling_simple: x must be a numeric array, .* got str"):
        F.pooling_simple("abc", 2)
    with pytest.raises(
        ValueError, match=r"^pooling_simple: expected a 4-D input \(N, C, H, W\), got shape \(3,\)"
    ):
        F.pooling_simple(np.ones(3), 2)
    x = [[[[1.0, 5.0], [3.0, 4.0]]]]  # lists, as pooling takes them
    np.testing.assert_array_equal(F.pooling_simple(x, 2).data, [[[[5.0]]]])
    np.testing.assert_array_equal(F.pooling(x, 2).data, [[[[5.0]]]])


# -- what max pooling keeps for its backward ----------------------------------------------


def test_pooling_keeps_one_byte_per_window_and_none_without_a_graph(rand, backend, to_np):
    x = rand(2, 3, 6, 4)
    f = F.Pooling(2, 2)
    f(Variable(x))
    winner = f.ctx[2]  # the saved context: (input shape, geometry, winners' offsets)
    # one small integer per window, not a mask per element nor a float copy
    assert backend.dtype_kind(winner.dtype) == "i" and winner.dtype == backend.xp.int8
    assert tuple(winner.shape) == (2, 3, 3, 2)
    windows = to_np(x).reshape(2, 3, 3, 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(2, 3, 3, 2, 4)
    np.testing.assert_array_equal(to_np(winner), windows.argmax(-1))
    g = F.Pooling(2, 2)
    with no_grad():
        g(Variable(x))
    assert g.ctx is None  # no backward can come: nothing is kept


def test_average_pooling_keeps_only_its_input_s_shape():
    """Its derivative spreads ``gy`` over the windows of the input's shape: the graph frees
    an input array the user dropped, and both orders of gradient are as by hand."""
    data = np.random.default_rng(8).standard_normal((2, 3, 4, 6))
    x = Variable(data)
    a = x * 2.0  # Mul keeps its inputs, not its output
    dropped = weakref.ref(a.data)
    y = F.average_pooling(a, 2, 2)
    z = F.sum(F.exp(y))
    del a, y
    gc.collect()
    assert dropped() is None
    z.backward(create_graph=True)
    e = np.exp(loop_pool(2.0 * data, 2, 2, 0, np.mean, 0.0))
    per_input = e.repeat(2, axis=2).repeat(2, axis=3)  # each input's window's exp
    np.testing.assert_allclose(as_numpy(x.grad.data), 0.5 * per_input, rtol=1e-12)
    gx = x.grad
    x.cleargrad()
    F.sum(gx).backward()
    np.testing.assert_allclose(as_numpy(x.grad.data), per_input, rtol=1e-12)
