"""zerograd-nn's kernel contract: the generic kernels, and how a backend's plugin is chosen."""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Variable
from zerograd.backends import (
    Backend,
    BackendPluginError,
    BackendPluginWarning,
    get_backend,
    set_strict,
)
from zerograd_nn import kernels as K
from zerograd_nn.testing.conformance import loop_col2im, loop_im2col
from zerograd_numpy import kernels as numpy_kernels
from zerograd_numpy.nn_kernels import NumpyKernels

needs_numpy2 = pytest.mark.skipif(  # the generic kernels run on numpy's namespace itself
    int(np.__version__.split(".")[0]) < 2, reason="numpy 1.26's namespace is not the standard's"
)
rng = np.random.default_rng(5)


class _Bare(Backend):
    """A backend no kernel plugin knows (the lookups below call none of its methods)."""

    name = "bare"


@pytest.fixture
def fresh():
    """Forget the kernel plugins registered by a test (the next lookup reloads the installed)."""
    K.refresh()
    yield
    K.refresh()


GEOMETRIES = [  # kernel, stride, pad on a (2, 3, 7, 6) image
    ((3, 3), (1, 1), (1, 1)),
    ((2, 2), (2, 2), (0, 0)),
    ((3, 2), (2, 3), (1, 0)),
    ((1, 1), (1, 1), (0, 0)),
]


@needs_numpy2
@pytest.mark.parametrize("pad_width", [((0, 0), (1, 2)), ((2, 0), (0, 0)), ((1, 1), (3, 1))])
def test_generic_pad_is_numpys_constant_pad(pad_width):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    got = K.Kernels(get_backend("numpy")).pad(a, pad_width, -7.0)
    np.testing.assert_array_equal(got, np.pad(a, pad_width, constant_values=-7.0))
    assert got.dtype == np.float32


@needs_numpy2
@pytest.mark.parametrize("k, s, p", GEOMETRIES)
def test_generic_im2col_col2im_match_numpys_kernels_loops_and_are_adjoint(k, s, p):
    generic = K.Kernels(get_backend("numpy"))
    img = rng.standard_normal((2, 3, 7, 6))
    col = generic.im2col(img, k, s, p, 0.5)
    np.testing.assert_array_equal(col, numpy_kernels.im2col(img, k, s, p, 0.5))
    np.testing.assert_array_equal(col, loop_im2col(img, k, s, p, 0.5))
    g = rng.standard_normal(col.shape)
    back = generic.col2im(g, img.shape, k, s, p)
    np.testing.assert_allclose(back, numpy_kernels.col2im(g, img.shape, k, s, p), rtol=1e-12)
    np.testing.assert_allclose(back, loop_col2im(g, img.shape, k, s, p), rtol=1e-12)
    # <im2col(x), g> == <x, col2im(g)> (zero padding): col2im is im2col's adjoint
    lhs = np.sum(generic.im2col(img, k, s, p, 0.0) * g)
    np.testing.assert_allclose(lhs, np.sum(img * back), rtol=1e-10)


def test_the_numpy_backend_gets_its_plugins_kernels_once():
    backend = get_backend("numpy")
    found = K.kernels_of(np.zeros(2))
    assert type(found) is NumpyKernels and found.backend is backend
    assert K.kernels_of(Variable(np.zeros(1))) is found and K.kernels_for(backend) is found


def test_a_backend_without_a_plugin_gets_the_generic_kernels(fresh):
    backend = _Bare()
    found = K.kernels_for(backend)
    assert type(found) is K.Kernels and found.backend is backend
    assert repr(found) == "<Kernels for backend 'bare'>"


class _Recording(NumpyKernels):
    def __init__(self, backend, calls):
        super().__init__(backend)
        self.calls = calls

    def im2col(self, img, k, s, p, pad_value=0.0):
        self.calls.append(("im2col", k, s, p, pad_value))
        return super().im2col(img, k, s, p, pad_value)

    def col2im(self, col, img_shape, k, s, p):
        self.calls.append(("col2im", k, s, p))
        return super().col2im(col, img_shape, k, s, p)

    def softmax(self, x, axis):
        self.calls.append(("softmax", axis))
        return super().softmax(x, axis)

    def cross_entropy_rows_kept(self, x, t):
        self.calls.append(("cross_entropy_rows_kept",))
        return super().cross_entropy_rows_kept(x, t)

    def cross_entropy_grad(self, x, t, scale, kept=None):
        self.calls.append(("cross_entropy_grad", kept is not None))
        return super().cross_entropy_grad(x, t, scale, kept)


def _plugin(make):
    plugin = types.ModuleType("a_kernel_plugin")
    plugin.zerograd_nn_kernels = K.hookimpl(make)
    return plugin


def test_a_registered_plugin_serves_conv_pooling_and_losses(fresh):
    calls = []
    numpy_backend = get_backend("numpy")
    K.register(
        _plugin(lambda backend: _Recording(backend, calls) if backend is numpy_backend else None),
        "recording",
    )
    x = Variable(rng.standard_normal((1, 2, 5, 4)))
    w = Variable(rng.standard_normal((3, 2, 3, 2)))
    y = F.conv2d(x, w, stride=(2, 1), pad=1)
    y.backward()
    assert ("im2col", (3, 2), (2, 1), (1, 1), 0.0) in calls
    assert ("col2im", (3, 2), (2, 1), (1, 1)) in calls
    F.softmax_cross_entropy(Variable(np.ones((2, 3))), np.array([0, 2])).backward()
    assert ("cross_entropy_rows_kept",) in calls
    assert ("cross_entropy_grad", True) in calls  # given what the rows kept
    F.softmax(np.ones((2, 3)), axis=0)
    assert ("softmax", 0) in calls
    K.refresh()  # the installed plugin's kernels again: the same values
    y2 = F.conv2d(Variable(x.data), w.data, stride=(2, 1), pad=1)
    np.testing.assert_array_equal(y.data, y2.data)


def test_the_last_registered_plugin_is_asked_first_and_the_first_answer_wins(fresh):
    """backend-plugins.md: "Each plugin is asked on its own, the last registered first;
    the first answer that is not None wins" (None passes the question on)."""
    backend, asked = _Bare(), []

    def answering(name, answer):
        def make(backend):  # pluggy passes the hook's arguments by name
            asked.append(name)
            return answer(backend)

        return _plugin(make)

    first, second = (type(n, (K.Kernels,), {}) for n in ("First", "Second"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # None is no problem to warn about
        K.register(answering("first", first), "first")
        K.register(answering("second", second), "second")
        K.register(answering("none", lambda b: None), "none")
        found = K.kernels_for(backend)
    assert type(found) is second and found.backend is backend
    assert asked == ["none", "second"]  # the first plugin is never asked


def test_a_plugin_that_raises_is_named_and_skipped(fresh):
    def broken(backend):
        raise RuntimeError("no kernels today")

    backend = _Bare()
    K.register(_plugin(broken), "broken")
    with pytest.warns(BackendPluginWarning, match=r"kernel plugin 'broken' .*no kernels today"):
        found = K.kernels_for(backend)
    assert type(found) is K.Kernels
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert K.kernels_for(backend) is found  # asked once per backend


def test_a_plugin_answering_with_no_kernels_is_refused_in_strict_mode(fresh):
    K.register(_plugin(lambda backend: "fast kernels"), "wrong")
    set_strict(True)
    try:
        with pytest.raises(BackendPluginError, match=r"returned 'fast kernels' for backend"):
            K.kernels_for(_Bare())
    finally:
        set_strict(False)
    with pytest.warns(BackendPluginWarning, match=r"not a zerograd_nn.kernels.Kernels"):
        assert type(K.kernels_for(_Bare())) is K.Kernels


def test_kernels_for_another_backend_are_refused(fresh):
    numpy_backend = get_backend("numpy")
    K.register(_plugin(lambda backend: NumpyKernels(numpy_backend)), "confused")
    with pytest.warns(BackendPluginWarning, match=r"kernel plugin 'confused'"):
        found = K.kernels_for(_Bare())
    assert type(found) is K.Kernels


@pytest.mark.parametrize(
    "variable, value",
    [("ZEROGRAD_BLOCK_PLUGINS", "numpy"), ("ZEROGRAD_BLOCK_PLUGINS", "zerograd-numpy"),
     ("ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD", "1")],
)  # fmt: skip
def test_core_switches_apply_to_kernel_plugins(fresh, monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    K.refresh()
    assert type(K.kernels_for(get_backend("numpy"))) is K.Kernels
    monkeypatch.delenv(variable)
    K.refresh()
    assert type(K.kernels_for(get_backend("numpy"))) is NumpyKernels


def test_kernels_hook_serves_one_backend_class_and_passes_on_others():
    hook = K.kernels_hook(_Bare, K.Kernels)
    bare = _Bare()
    found = hook(backend=bare)
    assert type(found) is K.Kernels and found.backend is bare
    assert hook(backend=get_backend("numpy")) is None
    assert "Kernels for a _Bare" in hook.__doc__


# -- the loss's and activations' gradient kernels: the formulas they replaced, bit for bit ----


def _scores(dtype, special=False):
    x = (rng.standard_normal((7, 5)) * 4).astype(dtype)
    if special:
        x[0, 1], x[1, :] = 1e4, -1e4  # exp alone would overflow / underflow whole rows
    t = rng.integers(0, 5, 7)
    if special:
        t[0] = 1  # row 0's loss is exactly 0
    return x, t


def _old_cross_entropy_grad(x, t, scale):
    """``(softmax(x) - onehot(t)) * scale`` with a one-hot array (the vjp before)."""
    y = np.exp(x - x.max(axis=1, keepdims=True))
    p = y / y.sum(axis=1, keepdims=True)
    hot = (np.arange(x.shape[1]) == t.reshape(-1, 1)).astype(p.dtype)
    return (p - hot) * scale


@needs_numpy2
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernels", [K.Kernels, NumpyKernels])
def test_loss_kernels_give_the_replaced_formulas_bits(kernels, dtype):
    x, t = _scores(dtype, special=True)
    k = kernels(get_backend("numpy"))
    scale = np.asarray(0.37, dtype=dtype)
    got = k.cross_entropy_rows(x, t)
    assert got[0] == 0 and not np.signbit(got[0])  # +0.0 where a row's loss is exactly zero
    assert got.dtype == dtype
    # both pick the labels from the shifted scores, log(s) - (x[t] - m), so within a few
    # ulps of the exact value (float64 of the same scores); the generic kernel's old
    # (m + log(s)) - x[t] rounded at the maximum's magnitude: row 1 (scores -1e4) gave
    # float32's 1.609375 for log 5 = 1.609438
    x64 = x.astype(np.float64)
    m = x64.max(axis=1, keepdims=True)
    exact = np.log(np.exp(x64 - m).sum(axis=1)) - (x64 - m)[np.arange(7), t]
    tol = 4 * np.finfo(dtype).eps
    np.testing.assert_allclose(got, exact, rtol=tol, atol=tol)
    assert got[1] == np.log(dtype(5))  # a row of equal scores: log C, rounded once
    rows, kept = k.cross_entropy_rows_kept(x, t)
    assert rows.tobytes() == got.tobytes()
    assert (kept is None) is (kernels is K.Kernels)
    before = x.copy()
    want = _old_cross_entropy_grad(x, t, scale).tobytes()
    for g in (k.cross_entropy_grad(x, t, scale), k.cross_entropy_grad(x, t, scale, kept)):
        assert g.dtype == dtype and g.tobytes() == want  # with or without what the rows kept
    assert np.array_equal(x, before)  # nothing written into the scores
    assert k.row_index(x).tolist() == list(range(7))


@needs_numpy2
@pytest.mark.parametrize("shape", [(6, 4), (), (0, 3)])
@pytest.mark.parametrize("kernels", [K.Kernels, NumpyKernels])
def test_relu_and_sigmoid_grad_kernels_give_the_replaced_formulas_bits(kernels, shape):
    k = kernels(get_backend("numpy"))
    y = np.maximum(rng.standard_normal(shape), 0).astype(np.float32)
    gy = rng.standard_normal(shape).astype(np.float32)  # negative gy where y == 0: -0.0
    old = np.asarray(y > 0).astype(np.float32) * gy
    got = np.asarray(k.relu_grad(y, gy))  # 0-d: numpy's scalar, as before
    assert got.shape == shape and got.dtype == np.float32
    assert got.tobytes() == old.tobytes()
    s = np.float32(0.5) * np.tanh(gy) + np.float32(0.5)
    assert k.sigmoid_grad(s, gy).tobytes() == (gy * s * (1 - s)).tobytes()


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(6, 4), (), (0, 3)])
@pytest.mark.parametrize("kernels", [K.Kernels, NumpyKernels])
def test_the_sigmoid_kernels_give_the_formulas_bits_with_no_warning(kernels, shape, dtype):
    k = kernels(get_backend("numpy"))
    x = (rng.standard_normal(shape) * 40).astype(dtype)  # beyond exp's range in each dtype
    with np.errstate(over="ignore"):  # (numpy 1.x computes a 0-d one in float64: cast back)
        want = np.asarray(1 / (1 + np.exp(-x))).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if kernels is K.Kernels:  # the generic one warns as numpy does: the plugin does not
            warnings.simplefilter("ignore", RuntimeWarning)
        got = np.asarray(k.sigmoid(x))
    assert got.shape == shape and got.dtype == np.dtype(dtype)
    assert got.tobytes() == want.tobytes()


def test_the_numpy_row_index_is_made_once_per_batch_size_and_read_only():
    k = NumpyKernels(get_backend("numpy"))
    a, b = k.row_index(np.zeros((9, 2))), k.row_index(np.zeros((9, 3)))
    assert a is b and not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 5
    assert k.row_index(np.zeros((4, 2))).tolist() == [0, 1, 2, 3]
