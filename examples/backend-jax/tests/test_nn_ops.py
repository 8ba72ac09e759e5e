"""zerograd-nn's ops on JAX arrays: gradients to second order (64-bit mode) and values equal
to numpy's (the conv ops run through the plugin's im2col/col2im kernels)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from zerograd import Variable
from zerograd.backends import as_numpy, backend_of
from zerograd.testing import check_backward

F = pytest.importorskip("zerograd_nn.functional", reason="zerograd-nn is not installed here")
L = pytest.importorskip("zerograd_nn.layers", reason="zerograd-nn is not installed here")

rng = np.random.default_rng(0)
IMG = rng.permutation(50).reshape(1, 2, 5, 5) * 0.1  # distinct values: no ties in max pooling
KERNEL = rng.standard_normal((3, 2, 3, 3))
X, W = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
CASES = {
    "conv2d": (lambda x, k: F.conv2d(x, k, stride=1, pad=1), [IMG, KERNEL]),
    "conv2d_stride2": (lambda x, k: F.conv2d(x, k, stride=2, pad=0), [IMG, KERNEL]),
    "deconv2d": (
        lambda x, k: F.deconv2d(x, k, stride=2, pad=1),
        [IMG[:, :, :3, :3], KERNEL.transpose(1, 0, 2, 3)],
    ),
    "pooling_simple": (lambda x: F.pooling_simple(x, 2, 2, pad=1), [IMG]),
    "average_pooling": (lambda x: F.average_pooling(x, 2, 1), [IMG]),
    "linear_tanh": (lambda x, w: F.tanh(F.linear(x, w)), [X, W]),
    "softmax": (lambda x: F.softmax(x), [X]),
}


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_on_jax(backend, name, order):
    fn, arrays = CASES[name]
    with jax.enable_x64(True):  # float64 for a tight numerical check
        xs = [backend.from_numpy(a) for a in arrays]
        assert backend_of(fn(*xs).data) is backend and xs[0].dtype == np.float64
        check_backward(fn, *xs, order=order)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_equal_numpy(backend, name):
    fn, arrays = CASES[name]
    results = []
    for put in (np.asarray, backend.from_numpy):
        xs = [Variable(put(a.astype(np.float32))) for a in arrays]
        y = fn(*xs)
        (y * y).sum().backward()
        results.append([as_numpy(y.data)] + [as_numpy(x.grad.data) for x in xs])
    for got, ref in zip(*reversed(results)):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_batchnorm_layer_updates_running_stats_on_jax(backend):
    # the layer keeps its statistics in Parameters, whose data batch_norm replaces
    x = rng.standard_normal((6, 3, 2, 2)).astype(np.float32)
    layers = [L.BatchNorm(), L.BatchNorm()]
    ys = [layers[0](x), layers[1](backend.from_numpy(x))]
    np.testing.assert_allclose(as_numpy(ys[1].data), as_numpy(ys[0].data), rtol=1e-5, atol=1e-6)
    for name in ("avg_mean", "avg_var"):
        ref, got = (as_numpy(getattr(layer, name).data) for layer in layers)
        assert backend_of(getattr(layers[1], name).data) is backend
        np.testing.assert_allclose(got, ref, rtol=1e-5)
        assert not np.allclose(got, 0.0 if name == "avg_mean" else 1.0)  # they moved


def test_embed_id_gradient_adds_repeated_ids(backend):
    # backward goes through the backend's scatter_add (JAX: .at[].add)
    with jax.enable_x64(True):
        ids = backend.from_numpy(np.array([[0, 2], [2, 2]]))
        check_backward(lambda w: F.embed_id(ids, w) ** 2, backend.from_numpy(X), order=2)
    w = Variable(backend.from_numpy(X.astype(np.float32)))
    F.sum(F.embed_id(backend.from_numpy(np.array([[0, 2], [2, 2]])), w)).backward()
    assert as_numpy(w.grad.data).tolist() == [[1.0] * 3, [0.0] * 3, [3.0] * 3, [0.0] * 3]
