"""The nn conformance suite: zerograd-nn's kernels and layers on one backend.

A backend that passes the core suite (:mod:`zerograd.testing.conformance`) implementing only
the array names gets zerograd-nn's generic kernels; one with a kernel plugin (the
``zerograd_nn_kernels`` hook) gets its own. Either way this suite checks them against numpy
references written here (loops, not the kernels themselves). Run it against an installed
backend with pytest::

    ZEROGRAD_CONFORMANCE_BACKEND=mybackend pytest --pyargs zerograd_nn.testing.conformance

or import it into a test module of your plugin (``from zerograd_nn.testing.conformance
import *``) with the environment variable set in a ``conftest.py``. Needs numpy and pytest.
"""

from __future__ import annotations

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Variable, seed
from zerograd.backends import Backend, backend_of, contract
from zerograd.testing import conformance as core_suite
from zerograd_nn.checkpoint import load_checkpoint, save_checkpoint
from zerograd_nn.kernels import Kernels, kernels_for
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import Adam

_rng = np.random.default_rng(11)

GEOMETRIES = [
    ((3, 2), (2, 1), (1, 1)),
    ((2, 2), (2, 2), (0, 0)),
    ((3, 3), (1, 1), (1, 0)),
    ((1, 3), (3, 2), (0, 2)),
]
"""``(kernel, stride, pad)`` triples: overlapping, tiling, one-sided and strided windows."""


backend = core_suite.backend
"""The backend under test: the core suite's fixture (``ZEROGRAD_CONFORMANCE_BACKEND``, else
``ZEROGRAD_TEST_BACKEND``, else numpy)."""


@pytest.mark.parametrize("name", contract.NN_REQUIRED_METHODS)
def test_random_number_methods_are_implemented(backend, name):
    """The backend overrides each :class:`Backend` method zerograd-nn needs (random numbers)."""
    mine = getattr(type(backend), name)
    assert mine is not getattr(Backend, name), (
        f"backend {backend.name!r} does not implement Backend.{name}, which zerograd-nn needs: "
        f"the standard has no random numbers (layers' weights, dropout, shuffling)."
    )


@pytest.mark.parametrize("dtype", [None, "float32"])
def test_random_numbers_have_the_shape_dtype_and_backend_asked_for(backend, dtype):
    """``randn`` and ``rand`` draw arrays of the shape, dtype and backend asked for."""
    for draw in (backend.randn, backend.rand):
        a = draw(200, 3, dtype=dtype)
        assert backend_of(a) is backend and tuple(a.shape) == (200, 3), draw.__name__
        values = backend.to_numpy(a)
        assert values.dtype.kind == "f", f"{draw.__name__} gave {values.dtype}"
        if dtype:
            assert values.dtype == np.float32, (
                f"{draw.__name__}(dtype='float32') gave {values.dtype}"
            )
    assert backend.to_numpy(backend.rand(1000)).min() >= 0.0
    assert backend.to_numpy(backend.rand(1000)).max() < 1.0
    assert abs(backend.to_numpy(backend.randn(4000)).mean()) < 0.1
    assert sorted(backend.to_numpy(backend.permutation(7)).tolist()) == list(range(7))


def test_a_checkpoint_resumes_the_runs_random_draws(backend, tmp_path):
    """A run resumed from a checkpoint draws the dropout masks the uninterrupted run drew.

    Checkpoints keep the backend's random state (``random_state``) beside numpy's.
    """
    x = _put(backend, _rng.standard_normal((20, 3)), "float32")
    t = _put(backend, np.arange(20) % 3, "int64")

    def build():
        seed(0)
        model = MLP((8, 3))
        model.to(backend.name)
        model(x)
        return model, Adam().setup(model)

    def step(model, optimizer):
        loss = F.softmax_cross_entropy(F.dropout(model(x), 0.5), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        return float(backend.to_numpy(loss.data))

    model, optimizer = build()
    want = [step(model, optimizer) for _ in range(6)]
    model, optimizer = build()
    got = [step(model, optimizer) for _ in range(3)]
    save_checkpoint(tmp_path / "run.npz", model=model, optimizer=optimizer)
    backend.rand(5)  # draws in between
    model, optimizer = build()
    load_checkpoint(tmp_path / "run.npz", model=model, optimizer=optimizer)
    got += [step(model, optimizer) for _ in range(3)]
    assert got == want


@pytest.fixture(scope="module")
def kernels(backend):
    """Return the kernels zerograd-nn uses for the backend under test."""
    return kernels_for(backend)


def _put(backend, values, dtype="float64"):
    return backend.from_numpy(np.asarray(values, dtype=dtype))


def _close(got, ref):
    """``got`` (numpy) equals ``ref`` within ``got``'s precision (JAX may narrow to float32)."""
    rtol = 1e-12 if got.dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol)


def loop_im2col(img, k, s, p, pad_value):
    """The patches (N, C, KH, KW, OH, OW) of ``img``, read one window position at a time."""
    (kh, kw), (sh, sw), (ph, pw) = k, s, p
    n, c, h, w = img.shape
    padded = np.pad(img, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=pad_value)
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    col = np.empty((n, c, kh, kw, oh, ow))
    for y in range(oh):
        for x in range(ow):
            col[:, :, :, :, y, x] = padded[:, :, y * sh : y * sh + kh, x * sw : x * sw + kw]
    return col


def loop_col2im(col, img_shape, k, s, p):
    """``col`` folded into an image of ``img_shape``, one window position at a time."""
    (kh, kw), (sh, sw), (ph, pw) = k, s, p
    n, c, h, w = img_shape
    img = np.zeros((n, c, h + 2 * ph, w + 2 * pw))
    for y in range(col.shape[4]):
        for x in range(col.shape[5]):
            img[:, :, y * sh : y * sh + kh, x * sw : x * sw + kw] += col[:, :, :, :, y, x]
    return img[:, :, ph : ph + h, pw : pw + w]


def test_kernels_are_bound_to_the_backend(backend, kernels):
    """The backend's kernels are a ``Kernels`` bound to it, the same object on every lookup."""
    assert isinstance(kernels, Kernels)
    assert kernels.backend is backend
    assert kernels_for(backend) is kernels


@pytest.mark.parametrize("value", [0.0, -1.5, -np.inf])
def test_pad_matches_numpy(backend, kernels, value):
    """``pad`` gives ``numpy.pad``'s constant padding, on the backend, input unchanged."""
    a = _rng.standard_normal((2, 3, 4))
    x = _put(backend, a)
    for width in (((0, 0), (1, 2), (0, 3)), ((2, 0), (0, 0), (0, 0)), ((0, 0),) * 3):
        got = kernels.pad(x, width, value)
        assert backend_of(got) is backend
        _close(backend.to_numpy(got), np.pad(a, width, constant_values=value))
    _close(backend.to_numpy(x), a)


@pytest.mark.parametrize("k, s, p", GEOMETRIES)
def test_im2col_and_col2im_match_loops(backend, kernels, k, s, p):
    """``im2col`` and ``col2im`` give the window-by-window references, on the backend."""
    img = _rng.standard_normal((2, 3, 7, 6))
    for pad_value in (0.0, -np.inf):
        col = kernels.im2col(_put(backend, img), k, s, p, pad_value)
        assert backend_of(col) is backend
        _close(backend.to_numpy(col), loop_im2col(img, k, s, p, pad_value))
    g = _rng.standard_normal(col.shape)
    back = kernels.col2im(_put(backend, g), img.shape, k, s, p)
    assert backend_of(back) is backend
    _close(backend.to_numpy(back), loop_col2im(g, img.shape, k, s, p))


def test_softmax_and_cross_entropy_rows_match_numpy(backend, kernels):
    """``softmax`` and ``cross_entropy_rows`` give numpy's, where ``exp`` alone would overflow."""
    x = _rng.standard_normal((6, 5)) * 4
    x[0, 1] = 700.0
    t = np.array([1, 0, 4, 2, 2, 3])
    m = x.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]
    got = kernels.cross_entropy_rows(_put(backend, x), _put(backend, t, "int64"))
    _close(backend.to_numpy(got), lse - x[np.arange(6), t])
    for axis in (0, 1):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        got = kernels.softmax(_put(backend, x), axis)
        _close(backend.to_numpy(got), e / e.sum(axis=axis, keepdims=True))
    p = np.exp(x - lse[:, None])
    p[np.arange(6), t] -= 1.0
    scale = _put(backend, np.asarray(0.25))
    got = kernels.cross_entropy_grad(_put(backend, x), _put(backend, t, "int64"), scale)
    assert backend_of(got) is backend
    _close(backend.to_numpy(got), p * 0.25)


def test_sigmoid_matches_numpy_in_both_tails(backend, kernels):
    """``sigmoid`` gives ``1 / (1 + exp(-x))`` with relative accuracy, 0 and 1 at the ends."""
    x = np.array([-1000.0, -40.0, -20.0, -1.5, 0.0, 2.0, 40.0, 1000.0])
    got = kernels.sigmoid(_put(backend, x))
    assert backend_of(got) is backend
    with np.errstate(over="ignore"):
        want = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(backend.to_numpy(got), want, rtol=1e-12, atol=0)


def test_relu_and_sigmoid_gradients_match_numpy(backend, kernels):
    """``relu_grad`` and ``sigmoid_grad`` give the gradients from the outputs, on the backend."""
    y = np.maximum(_rng.standard_normal((4, 3)), 0.0)
    gy = _rng.standard_normal((4, 3))
    got = kernels.relu_grad(_put(backend, y), _put(backend, gy))
    assert backend_of(got) is backend
    _close(backend.to_numpy(got), np.where(y > 0, gy, 0.0))
    s = 1 / (1 + np.exp(-gy))
    got = kernels.sigmoid_grad(_put(backend, s), _put(backend, gy))
    _close(backend.to_numpy(got), gy * s * (1 - s))


def test_a_small_cnn_gives_numpys_values_and_gradients(backend):
    """conv2d, max and average pooling and softmax cross-entropy, forward and backward."""
    x = _rng.standard_normal((2, 2, 6, 6))
    W = _rng.standard_normal((3, 2, 3, 3))
    t = np.array([0, 5])

    def run(put):
        xv, Wv = Variable(put(x)), Variable(put(W))
        h = F.conv2d(xv, Wv, stride=1, pad=1)
        h = F.pooling(h, 2, 2) + F.average_pooling(h, 2, 2)
        loss = F.softmax_cross_entropy(F.reshape(h, (2, -1)), put(t, "int64"))
        loss.backward()
        return [loss.data, xv.grad.data, Wv.grad.data]

    want = run(lambda a, dtype="float64": np.asarray(a, dtype=dtype))
    got = run(lambda a, dtype="float64": _put(backend, a, dtype))
    for g, w in zip(got, want):
        assert backend_of(g) is backend
        _close(backend.to_numpy(g), w)
