"""Places in zerograd core and zerograd-nn that still assume numpy, seen from JAX.

Each test states the behaviour the contract promises and is marked
``xfail(strict=True)`` with the file, line and operation that breaks it on immutable,
keyed-random JAX arrays: when that place is fixed, the test passes, pytest reports the
strict xfail as a failure, and the mark is removed.
"""

from __future__ import annotations

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


def _xfail(place: str, raises: type[BaseException]):
    return pytest.mark.xfail(strict=True, raises=raises, reason=place)


@pytest.mark.parametrize("make", [lambda: L.Linear(5), lambda: L.Conv2d(5, 3, pad=1)])
@_xfail(
    "zerograd_nn/layers.py:275 (_randn, used by Linear/Conv2d/Deconv2d._init_W) calls "
    "xp.random.randn; JAX has no global RNG: draw through a Backend method "
    "(zerograd-jax offers randn(*shape, dtype=) from its key)",
    AttributeError,
)
def test_layers_size_themselves_from_a_jax_input(backend, make):
    layer = make()
    x = backend.from_numpy(IMG if isinstance(layer, L.Conv2d) else IMG.reshape(4, 8))
    y = layer(x)
    assert backend_of(layer.W.data) is backend and backend_of(y.data) is backend
    assert layer.W.dtype == np.float32


@_xfail(
    "zerograd_nn/functional/normalization.py:111 (dropout) calls xp.random.rand; JAX needs "
    "a key: draw through a Backend method (zerograd-jax offers rand(*shape, dtype=))",
    AttributeError,
)
def test_dropout_on_jax(backend):
    x = Variable(backend.from_numpy(np.ones((200, 50), np.float32)))
    y = as_numpy(F.dropout(x, 0.25).data)
    assert set(np.unique(y).tolist()) == {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.02


@_xfail(
    "zerograd_nn/functional/pooling.py:109-114 (Pooling2DGrad.forward) fills xp.empty/zeros "
    "with gx[win] = ... / gx[win] += ...; JAX needs gx = gx.at[win].set(...) / .add(...)",
    TypeError,
)
def test_max_pooling_gradient_on_jax(backend):
    check_backward(lambda x: F.pooling(x, 2, 2), backend.from_numpy(IMG))


@_xfail(
    "zerograd_nn/functional/utils.py:217-221 and 252-256 (im2col_array/col2im_array "
    "without a backend kernel) write col[...] = and img[...] +=; JAX needs stacking or "
    ".at[].add (zerograd-jax supplies im2col/col2im kernels, so only this test hits it)",
    TypeError,
)
def test_convolution_without_the_plugin_kernels(backend, monkeypatch):
    x, w = Variable(backend.from_numpy(IMG)), Variable(backend.from_numpy(KERNEL))
    ref_y = as_numpy(F.conv2d(IMG, KERNEL, pad=1).data)
    monkeypatch.delattr(JaxBackend, "im2col")
    monkeypatch.delattr(JaxBackend, "col2im")
    y = F.conv2d(x, w, pad=1)
    np.testing.assert_allclose(as_numpy(y.data), ref_y, rtol=1e-5)


@_xfail(
    "zerograd_nn/functional/normalization.py:24 (_store, batch_norm's running statistics "
    "given as plain arrays) writes target[...] = value, impossible for an immutable array: "
    "it should say to pass Variables/Parameters (as BatchNorm does), not JAX's TypeError",
    AssertionError,
)
def test_batch_norm_with_plain_array_statistics_says_what_to_pass(backend):
    x = backend.from_numpy(rng.standard_normal((4, 3)).astype(np.float32))
    ones, zeros = backend.from_numpy(np.ones(3, np.float32)), backend.from_numpy(np.zeros(3, "f"))
    with pytest.raises(TypeError, match=r"batch_norm: .*Variable"):
        F.batch_norm(x, ones, zeros, zeros, ones)
    assert as_numpy(zeros).tolist() == [0.0] * 3 and as_numpy(ones).tolist() == [1.0] * 3


@_xfail(
    "zerograd/backends/base.py:94-95 (Backend.scatter_add's default) uses "
    "xp.array(copy=True) + xp.add.at in place; JAX needs a.at[indices].add(values) "
    "(zerograd-jax overrides it, so only a plugin relying on the default hits this)",
    NotImplementedError,
)
def test_default_scatter_add_on_jax(backend):
    a = backend.from_numpy(np.zeros(4, np.float32))
    idx = backend.from_numpy(np.array([1, 1, 3]))
    out = Backend.scatter_add(backend, a, idx, backend.from_numpy(np.ones(3, np.float32)))
    assert as_numpy(out).tolist() == [0.0, 2.0, 0.0, 1.0]


@pytest.mark.parametrize("name", ["Normal", "Uniform", "Orthogonal"])
@_xfail(
    "zerograd_nn/initializers.py:107 (_normal), 112 (_uniform) and 310 (Orthogonal) call "
    "backend.xp.random.standard_normal/uniform; JAX has no global RNG: draw through a "
    "Backend method (zerograd-jax offers randn/rand from its key)",
    AttributeError,
)
def test_initializers_fill_jax_arrays(backend, name):
    init_module = pytest.importorskip(
        "zerograd_nn.initializers", reason="this zerograd-nn has no initializers module yet"
    )
    w = getattr(init_module, name)()((6, 4), "float32", backend)
    assert backend_of(w) is backend and w.dtype == np.float32 and w.shape == (6, 4)
    assert len(np.unique(as_numpy(w))) == 24  # random draws, not a constant fill
