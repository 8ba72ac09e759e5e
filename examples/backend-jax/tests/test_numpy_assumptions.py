"""Places in zerograd core and zerograd-nn that once assumed numpy, checked from JAX.

Each test states the behaviour the backend contract promises on immutable, keyed-random
JAX arrays: layers draw through ``Backend.randn``, dropout through ``Backend.rand``, max
pooling's gradient and convolutions without plugin kernels through zerograd-nn's generic
kernels (``zerograd_nn.kernels.Kernels``, written with standard calls), batch_norm writes
plain arrays only through ``Backend.assign``, and ``Backend.scatter_add``'s default returns a
new array.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from zerograd_jax import JaxBackend

from zerograd import Variable
from zerograd.backends import Backend, as_numpy, backend_of
from zerograd.testing import check_backward

F = pytest.importorskip("zerograd_nn.functional", reason="zerograd-nn is not installed here")
L = pytest.importorskip("zerograd_nn.layers", reason="zerograd-nn is not installed here")

rng = np.random.default_rng(0)
IMG = (rng.permutation(32).reshape(1, 2, 4, 4) * 0.1).astype(np.float32)
KERNEL = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)


@pytest.mark.parametrize("make", [lambda: L.Linear(5), lambda: L.Conv2d(5, 3, pad=1)])
def test_layers_size_themselves_from_a_jax_input(backend, make):
    layer = make()
    x = backend.from_numpy(IMG if isinstance(layer, L.Conv2d) else IMG.reshape(4, 8))
    y = layer(x)
    assert backend_of(layer.W.data) is backend and backend_of(y.data) is backend
    assert layer.W.dtype == np.float32


def test_dropout_on_jax(backend):
    x = Variable(backend.from_numpy(np.ones((200, 50), np.float32)))
    y = as_numpy(F.dropout(x, 0.25).data)
    assert set(np.unique(y).tolist()) == {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.02


def test_max_pooling_gradient_on_jax(backend):
    check_backward(lambda x: F.pooling(x, 2, 2), backend.from_numpy(IMG))


def test_convolution_without_the_plugin_kernels(backend):
    K = pytest.importorskip("zerograd_nn.kernels", reason="zerograd-nn is not installed here")
    x, w = Variable(backend.from_numpy(IMG)), Variable(backend.from_numpy(KERNEL))
    ref_y = as_numpy(F.conv2d(IMG, KERNEL, pad=1).data)
    plugin = types.ModuleType("generic_for_jax")  # asked before the installed plugin
    plugin.zerograd_nn_kernels = K.hookimpl(
        lambda backend: K.Kernels(backend) if isinstance(backend, JaxBackend) else None
    )
    K.register(plugin)
    try:
        assert type(K.kernels_for(backend)) is K.Kernels
        y = F.conv2d(x, w, pad=1)
        y.backward()
    finally:
        K.refresh()
    assert type(K.kernels_for(backend)).__name__ == "JaxKernels"
    np.testing.assert_allclose(as_numpy(y.data), ref_y, rtol=1e-5)
    np.testing.assert_allclose(as_numpy(F.conv2d(x, w, pad=1).data), ref_y, rtol=1e-5)


def test_batch_norm_with_plain_array_statistics_says_what_to_pass(backend):
    x = backend.from_numpy(rng.standard_normal((4, 3)).astype(np.float32))
    ones, zeros = backend.from_numpy(np.ones(3, np.float32)), backend.from_numpy(np.zeros(3, "f"))
    with pytest.raises(TypeError, match=r"batch_norm: .*Variable"):
        F.batch_norm(x, ones, zeros, zeros, ones)
    assert as_numpy(zeros).tolist() == [0.0] * 3 and as_numpy(ones).tolist() == [1.0] * 3


def test_default_scatter_add_on_jax(backend):
    a = backend.from_numpy(np.zeros(4, np.float32))
    idx = backend.from_numpy(np.array([1, 1, 3]))
    out = Backend.scatter_add(backend, a, idx, backend.from_numpy(np.ones(3, np.float32)))
    assert as_numpy(out).tolist() == [0.0, 2.0, 0.0, 1.0]


@pytest.mark.parametrize("name", ["Normal", "Uniform", "Orthogonal"])
def test_initializers_fill_jax_arrays(backend, name):
    init_module = pytest.importorskip(
        "zerograd_nn.initializers", reason="this zerograd-nn has no initializers module yet"
    )
    w = getattr(init_module, name)()((6, 4), "float32", backend)
    assert backend_of(w) is backend and w.dtype == np.float32 and w.shape == (6, 4)
    assert len(np.unique(as_numpy(w))) == 24  # random draws, not a constant fill
