"""im2col, col2im, conv2d, deconv2d: values against direct loops, gradients of two orders."""

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Variable
from zerograd.backends import as_numpy
from zerograd.testing import check_backward

# (kernel, stride, pad) cases, square and not
GEOMETRIES = [(3, 1, 0), (3, 2, 1), ((2, 3), (1, 2), (1, 0)), ((3, 1), 2, (0, 1))]


def pairs(k, s, p):
    return F.pair(k), F.pair(s), F.pair(p)


def loop_im2col(x, k, s, p, pad_value=0.0):
    (kh, kw), (sh, sw), (ph, pw) = pairs(k, s, p)
    n, c, h, w = x.shape
    xp = np.full((n, c, h + 2 * ph, w + 2 * pw), pad_value, dtype=x.dtype)
    xp[:, :, ph : ph + h, pw : pw + w] = x
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    col = np.zeros((n, c, kh, kw, oh, ow), dtype=x.dtype)
    for a in range(n):
        for ch in range(c):
            for i in range(kh):
                for j in range(kw):
                    for y in range(oh):
                        for z in range(ow):
                            col[a, ch, i, j, y, z] = xp[a, ch, y * sh + i, z * sw + j]
    return col


def loop_conv2d(x, W, b, s, p):
    (sh, sw), (ph, pw) = F.pair(s), F.pair(p)
    n, c, h, w = x.shape
    oc, _, kh, kw = W.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    y = np.zeros((n, oc, oh, ow))
    for a in range(n):
        for o in range(oc):
            for i in range(oh):
                for j in range(ow):
                    patch = xp[a, :, i * sh : i * sh + kh, j * sw : j * sw + kw]
                    y[a, o, i, j] = (patch * W[o]).sum() + (0 if b is None else b[o])
    return y


def loop_deconv2d(x, W, b, s, p, out):
    (sh, sw), (ph, pw) = F.pair(s), F.pair(p)
    n, c, h, w = x.shape
    _, oc, kh, kw = W.shape
    oh, ow = out
    y = np.zeros((n, oc, oh + 2 * ph + kh, ow + 2 * pw + kw))
    for a in range(n):
        for ch in range(c):
            for i in range(h):
                for j in range(w):
                    y[a, :, i * sh : i * sh + kh, j * sw : j * sw + kw] += x[a, ch, i, j] * W[ch]
    y = y[:, :, ph : ph + oh, pw : pw + ow]
    return y if b is None else y + b.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("k,s,p", GEOMETRIES)
def test_im2col_matches_loop(rand, to_np, k, s, p):
    x = rand(2, 3, 6, 7)
    ref = loop_im2col(to_np(x), k, s, p)
    np.testing.assert_array_equal(to_np(F.im2col(x, k, s, p, to_matrix=False)), ref)
    n, c, kh, kw, oh, ow = ref.shape
    matrix = ref.transpose(0, 4, 5, 1, 2, 3).reshape(n * oh * ow, c * kh * kw)
    np.testing.assert_array_equal(to_np(F.im2col(x, k, s, p)), matrix)


@pytest.mark.parametrize("k,s,p", GEOMETRIES)
def test_col2im_is_the_adjoint_of_im2col(rand, to_np, k, s, p):
    # <im2col(x), c> == <x, col2im(c)> for every x, c: the defining property of the adjoint
    x = rand(2, 3, 6, 7)
    col = F.im2col(x, k, s, p, to_matrix=False)
    c = rand(*col.shape, seed=3)
    img = F.col2im(c, x.shape, k, s, p, to_matrix=False)
    assert img.shape == x.shape
    lhs = (to_np(col) * to_np(c)).sum()
    rhs = (to_np(x) * to_np(img)).sum()
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)
    # and by a direct loop
    ref = np.zeros(x.shape)
    (kh, kw), (sh, sw), (ph, pw) = pairs(k, s, p)
    big = np.zeros((2, 3, 6 + 2 * ph + kh, 7 + 2 * pw + kw))
    cn = to_np(c)
    for i in range(kh):
        for j in range(kw):
            for y in range(cn.shape[4]):
                for z in range(cn.shape[5]):
                    big[:, :, y * sh + i, z * sw + j] += cn[:, :, i, j, y, z]
    ref = big[:, :, ph : ph + 6, pw : pw + 7]
    np.testing.assert_allclose(to_np(img), ref, rtol=1e-12)


@pytest.mark.parametrize("to_matrix", [True, False])
@pytest.mark.parametrize("order", [1, 2])
def test_im2col_col2im_grad(rand, arr, to_np, to_matrix, order):
    x = rand(1, 2, 5, 4)
    check_backward(lambda v: F.im2col(v, (3, 2), (2, 1), (1, 0), to_matrix), x, order=order)
    # A C-contiguous copy: zerograd.testing.numerical_grad cannot perturb strided views.
    col = arr(np.ascontiguousarray(to_np(F.im2col(x, (3, 2), (2, 1), (1, 0), to_matrix))))
    check_backward(
        lambda v: F.col2im(v, x.shape, (3, 2), (2, 1), (1, 0), to_matrix), col, order=order
    )


@pytest.mark.parametrize("k,s,p", GEOMETRIES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_matches_loop(rand, to_np, k, s, p, bias):
    kh, kw = F.pair(k)
    x, W = rand(2, 3, 6, 7), rand(4, 3, kh, kw, seed=1)
    b = rand(4, seed=2) if bias else None
    ref = loop_conv2d(to_np(x), to_np(W), None if b is None else to_np(b), s, p)
    np.testing.assert_allclose(to_np(F.conv2d(x, W, b, s, p)), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_np(F.conv2d_simple(x, W, b, s, p)), ref, rtol=1e-10, atol=1e-12)


def test_conv2d_keeps_float32(rand):
    y = F.conv2d(rand(1, 2, 5, 5, dtype="float32"), rand(3, 2, 3, 3, dtype="float32"), pad=1)
    assert as_numpy(y).dtype == np.float32 and y.shape == (1, 3, 5, 5)


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("k,s,p", [(3, 1, 1), ((2, 3), (2, 1), (0, 1))])
def test_conv2d_grad(rand, order, k, s, p):
    kh, kw = F.pair(k)
    x, W, b = rand(2, 2, 5, 4), rand(3, 2, kh, kw, seed=1), rand(3, seed=2)
    check_backward(lambda *v: F.conv2d(*v, stride=s, pad=p), x, W, b, order=order)
    check_backward(lambda *v: F.conv2d(*v, stride=s, pad=p), x, W, order=order)


@pytest.mark.parametrize("order", [1, 2])
def test_conv2d_simple_grad(rand, order):
    x, W, b = rand(1, 2, 4, 5), rand(3, 2, 2, 3, seed=1), rand(3, seed=2)
    check_backward(lambda *v: F.conv2d_simple(*v, stride=(1, 2), pad=1), x, W, b, order=order)


def test_conv2d_grad_float32(rand):
    x, W = rand(1, 2, 5, 5, dtype="float32"), rand(3, 2, 3, 3, dtype="float32", seed=1)
    check_backward(lambda *v: F.conv2d(*v, stride=2, pad=1), x, W)


def test_conv2d_errors(rand):
    with pytest.raises(ValueError, match=r"conv2d: x has 2 channels but the weight"):
        F.conv2d(rand(1, 2, 5, 5), rand(3, 4, 3, 3))
    with pytest.raises(ValueError, match=r"does not fit an input of height/width \(2, 2\)"):
        F.conv2d(rand(1, 2, 2, 2), rand(3, 2, 3, 3))
    with pytest.raises(ValueError, match=r"bias of shape \(2,\) does not fit 3 output channels"):
        F.conv2d(rand(1, 2, 5, 5), rand(3, 2, 3, 3), rand(2))
    with pytest.raises(ValueError, match=r"expected x \(N, C, H, W\) and a 4-D weight"):
        F.conv2d(rand(2, 5, 5), rand(3, 2, 3, 3))


@pytest.mark.parametrize("k,s,p", GEOMETRIES)
@pytest.mark.parametrize("bias", [True, False])
def test_deconv2d_matches_loop(rand, to_np, k, s, p, bias):
    (kh, kw), (sh, sw), (ph, pw) = pairs(k, s, p)
    x, W = rand(2, 3, 4, 3), rand(3, 2, kh, kw, seed=1)
    b = rand(2, seed=2) if bias else None
    out = (sh * 3 + kh - 2 * ph, sw * 2 + kw - 2 * pw)
    y = F.deconv2d(x, W, b, s, p)
    assert y.shape == (2, 2) + out
    ref = loop_deconv2d(to_np(x), to_np(W), None if b is None else to_np(b), s, p, out)
    np.testing.assert_allclose(to_np(y), ref, rtol=1e-10, atol=1e-12)


def test_deconv2d_outsize_and_error(rand, to_np):
    x, W = rand(1, 2, 3, 3), rand(2, 1, 3, 3, seed=1)
    y = F.deconv2d(x, W, stride=2, pad=1, outsize=(6, 6))  # 5 is the default; 6 also fits
    ref = loop_deconv2d(to_np(x), to_np(W), None, 2, 1, (6, 6))
    np.testing.assert_allclose(to_np(y), ref, rtol=1e-10)
    with pytest.raises(ValueError, match=r"deconv2d: outsize \(9, 9\) does not fit"):
        F.deconv2d(x, W, stride=2, pad=1, outsize=9)


def test_deconv2d_names_the_outsizes_that_fit(rand):
    x, W = rand(1, 2, 3, 4), rand(2, 1, 3, 3, seed=1)
    # PyTorch: conv_transpose2d(x, W, stride=(2, 3), padding=1, output_padding=(a, b)) gives
    # (5 + a, 10 + b) for a < 2, b < 3: the outsizes 5..6 by 10..12
    with pytest.raises(ValueError, match=r"outsize \(7, 8\) does not fit") as err:
        F.deconv2d(x, W, stride=(2, 3), pad=1, outsize=(7, 8))
    assert "5 to 6 high and 10 to 12 wide" in str(err.value)


def test_deconv2d_says_when_no_outsize_fits(rand):
    # the default width, 1 * (2 - 1) + 1 - 2 * 1 = 0, is no output; the widths that map
    # back to 2 columns (0 and below) are none either: the pad is too large for any outsize
    x, W = rand(1, 1, 6, 2), rand(1, 1, 1, 1, seed=1)
    with pytest.raises(ValueError, match=r"outsize \(5, 1\) does not fit") as err:
        F.deconv2d(x, W, pad=1, outsize=(5, 1))
    text = str(err.value)
    assert "no width fits" in text and "use less padding" in text
    assert "(4, 0)" not in text  # no default of no pixels offered


def test_deconv2d_of_no_pixels_names_an_outsize_that_gives_some(rand, to_np):
    x, W = rand(1, 1, 1, 1), rand(1, 1, 2, 2, seed=1)
    with pytest.raises(ValueError, match=r"gives an output of \(0, 0\): no pixels") as err:
        F.deconv2d(x, W, stride=2, pad=1)
    assert "use less padding, or an outsize fits 1 to 1 high and 1 to 1 wide." in str(err.value)
    # PyTorch: conv_transpose2d(x, W, stride=2, padding=1, output_padding=1) is x * W[1, 1]
    y = F.deconv2d(x, W, stride=2, pad=1, outsize=1)
    np.testing.assert_allclose(to_np(y), to_np(x) * to_np(W)[:, :, 1:, 1:], rtol=1e-12)


@pytest.mark.parametrize(
    "shape,k,s,p,outsize",
    [
        ((1, 1, 1, 1), 2, 2, 1, (0, 0)),  # the default (0, 0) is refused; so must this be
        ((1, 1, 1, 7), 4, 2, (3, 1), (-2, 15)),  # -2 "fits" (-2 + 6 - 4) // 2 + 1 == 1
        ((1, 1, 9, 2), (4, 1), 2, 2, (16, -1)),
    ],
)
def test_deconv2d_refuses_an_outsize_of_no_pixels(rand, shape, k, s, p, outsize):
    # PyTorch: conv_transpose2d(..., output_padding=...) raises "Output size is too small"
    # for these; zerograd returned an empty array of shape (N, OC, 0, ...)
    kh, kw = F.pair(k)
    x, W = rand(*shape), rand(1, 2, kh, kw, seed=1)
    with pytest.raises(ValueError, match=r"deconv2d: outsize .* must be at least 1") as err:
        F.deconv2d(x, W, stride=s, pad=p, outsize=outsize)
    assert str(outsize) in str(err.value)


@pytest.mark.parametrize("order", [1, 2])
def test_deconv2d_grad(rand, order):
    x, W, b = rand(1, 2, 3, 4), rand(2, 3, 3, 2, seed=1), rand(3, seed=2)
    check_backward(lambda *v: F.deconv2d(*v, stride=(2, 1), pad=(1, 0)), x, W, b, order=order)


def test_conv2d_is_twice_differentiable_style_transfer(rand):
    # Gram-matrix loss of conv features, differentiated w.r.t. the image twice
    W = rand(3, 2, 3, 3, seed=1)

    def gram_loss(img):
        h = F.conv2d(img, W, pad=1)
        f = F.reshape(h, (3, -1))
        return F.sum(F.matmul(f, F.transpose(f)) ** 2)

    check_backward(gram_loss, rand(1, 2, 4, 4) * 0.5, order=2)


# -- sizes: ints or pairs of ints, named by the function and the argument -----------------


def test_pair_accepts_numpy_integers_and_refuses_bools_and_floats():
    assert F.pair(np.int64(2)) == (2, 2) and F.pair((np.int32(1), 3)) == (1, 3)
    assert type(F.pair(np.int64(2))[0]) is int
    for bad in (True, 2.0, (2.5, 1), (True, 1), "2", None):
        with pytest.raises(TypeError, match=r"^pair: expected an int or a pair of ints"):
            F.pair(bad)
    with pytest.raises(ValueError, match=r"^pair: expected an int or a pair of ints .*got 3"):
        F.pair((1, 2, 3))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda x, W: F.conv2d(x, W, stride=1.5), r"^conv2d: stride: expected an int or a pair"),
        (lambda x, W: F.conv2d(x, W, pad=True), r"^conv2d: pad: expected an int or a pair"),
        (lambda x, W: F.conv2d(x, W, stride=0), r"^conv2d: kernel_size \(3, 3\) and stride \(0"),
        (lambda x, W: F.pooling(x, 2.0), r"^pooling: kernel_size: expected an int or a pair"),
        (lambda x, W: F.pooling(x, True), r"^pooling: kernel_size: expected .* got True"),
        (lambda x, W: F.average_pooling(x, 2, (1, 0.5)), r"^average_pooling: stride: expected"),
        (lambda x, W: F.im2col(x, "a"), r"^im2col: kernel_size: expected an int or a pair"),
        (
            lambda x, W: F.deconv2d(x, F.transpose(W, (1, 0, 2, 3)), stride=0),
            r"^deconv2d: stride \(0, 0\) must be >= 1 and pad \(0, 0\) >= 0",
        ),
        (
            lambda x, W: F.deconv2d(x, F.transpose(W, (1, 0, 2, 3)), outsize=7.0),
            r"^deconv2d: outsize: expected an int or a pair",
        ),
    ],
)
def test_bad_sizes_name_the_function_and_argument(rand, call, message):
    wrong_value = "must be >= 1" in message or "stride \\(0" in message
    with pytest.raises(ValueError if wrong_value else TypeError, match=message):
        call(rand(1, 2, 5, 5), rand(2, 2, 3, 3, seed=1))


def test_numpy_integer_sizes_work(rand, to_np):
    x = rand(1, 2, 6, 6)
    np.testing.assert_array_equal(
        to_np(F.pooling(x, np.int64(2), np.int64(2))), to_np(F.pooling(x, 2, 2))
    )
    W = rand(3, 2, 3, 3, seed=1)
    np.testing.assert_array_equal(
        to_np(F.conv2d(x, W, stride=np.int32(2), pad=np.int64(1))),
        to_np(F.conv2d(x, W, stride=2, pad=1)),
    )


@pytest.mark.parametrize(
    "x, W, text",
    [
        (
            None,
            np.ones((1, 1, 1, 1)),
            r"^conv2d_simple: x must be a numeric array, a Variable or a "
            r"list, got NoneType",
        ),
        (np.ones((1, 1, 2, 2)), "abc", r"^conv2d_simple: W must be a numeric array, .* got str"),
    ],
)
def test_conv2d_simple_names_its_bad_argument(x, W, text):
    with pytest.raises(TypeError, match=text):
        F.conv2d_simple(x, W)


@pytest.mark.parametrize(
    "col, shape, text",
    [
        (
            np.ones(3),
            (1, 1, 2, 2),
            r"^col2im: patches of shape \(3,\) do not match image shape "
            r"\(1, 1, 2, 2\) .* \(expected the matrix \(4, 1\)\)",
        ),
        (
            np.ones((4, 1)),
            (1, 2, 2),
            r"^col2im: expected a 4-D input \(N, C, H, W\), got shape "
            r"\(1, 2, 2\)",
        ),
    ],
)
def test_col2im_names_a_patch_matrix_that_does_not_fit(col, shape, text):
    with pytest.raises(ValueError, match=text):
        F.col2im(col, shape, 1)
    np.testing.assert_array_equal(
        F.col2im(np.arange(4.0)[:, None], (1, 1, 2, 2), 1).data, [[[[0.0, 1.0], [2.0, 3.0]]]]
    )


@pytest.mark.parametrize(
    "good, bad",
    [((2, 2), (2.0, 2)), ((1, 1), (True, 1)), ((2, (2, 1)), (2, (2, 1.0)))],
)
def test_sizes_checked_once_are_still_checked_when_they_only_compare_equal(rand, good, bad):
    """The geometry is cached per size; 2.0 == 2 and True == 1 must not hit that cache."""
    x = rand(1, 2, 6, 6)
    F.pooling(x, *good)  # cached now
    with pytest.raises(TypeError, match=r"^pooling: (kernel_size|stride): expected an int"):
        F.pooling(x, *bad)


@pytest.mark.parametrize("name", ["im2col", "col2im"])
def test_to_matrix_is_a_bool(name):
    """to_matrix="no" gave the matrix (read by its truth); numpy's bools count."""
    x = np.arange(16.0).reshape(1, 1, 4, 4)

    def call(to_matrix):
        if name == "im2col":
            return F.im2col(x, 2, 2, 0, to_matrix=to_matrix)
        return F.col2im(np.ones((4, 4)), (1, 1, 4, 4), 2, 2, 0, to_matrix=to_matrix)

    for bad in ("no", 0, None):
        with pytest.raises(TypeError) as info:
            call(bad)
        assert str(info.value) == f"{name}: to_matrix must be True or False, got {bad!r}"
    assert call(np.True_).shape == ((4, 4) if name == "im2col" else (1, 1, 4, 4))


@pytest.mark.parametrize(
    "name, call, instead",
    [
        ("logsumexp", lambda v: F.logsumexp(v, axis=1), "F.log_softmax"),
        ("im2col_array", lambda v: F.im2col_array(v, 2, 1, 0), "F.im2col"),
        ("col2im_array", lambda v: F.col2im_array(v, (1, 1, 3, 3), 2, 1, 0, False), "F.col2im"),
    ],
)
def test_raw_array_helpers_refuse_a_variable_on_every_backend(rand, name, call, instead):
    # each backend failed its own way (numpy: numpy.max's refusal, array-api-strict: an
    # AttributeError on Variable._array), or dropped the graph silently (numpy's im2col)
    x = Variable(rand(1, 1, 2, 2, 2, 2) if name == "col2im_array" else rand(1, 1, 3, 3))
    with pytest.raises(
        TypeError,
        match=rf"F\.{name}: x is a Variable; this helper takes a raw array and records no "
        rf"graph: pass x\.data, or use {instead}",
    ):
        call(x)
    assert x.creator is None and x.grad is None
