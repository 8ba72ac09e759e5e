"""The numpy-named namespace gives numpy's answers on array-api-strict arrays."""

from __future__ import annotations

import numpy as np
import pytest
import zerograd_arrayapi.namespace as xp

rng = np.random.default_rng(0)
A = rng.standard_normal((2, 3, 4))


def _np(x):
    return xp.to_numpy(x)


@pytest.mark.parametrize(
    "call, ref",
    [
        (lambda: xp.transpose(xp.asarray(A)), A.transpose()),
        (lambda: xp.transpose(xp.asarray(A), (1, 0, 2)), A.transpose(1, 0, 2)),
        (lambda: xp.reshape(xp.asarray(A), (6, -1)), A.reshape(6, -1)),
        (lambda: xp.sum(xp.asarray(A), axis=(0, 2), keepdims=True), A.sum((0, 2), keepdims=True)),
        (lambda: xp.max(xp.asarray(A), axis=1), A.max(1)),
        (lambda: xp.min(xp.asarray(A)), A.min()),
        (lambda: xp.clip(xp.asarray(A), -0.5, 0.5), np.clip(A, -0.5, 0.5)),
        (lambda: xp.concatenate([xp.asarray(A), xp.asarray(A)], axis=1), np.concatenate([A, A], 1)),
        (lambda: xp.stack([xp.asarray(A), xp.asarray(A)], axis=-1), np.stack([A, A], -1)),
        (lambda: xp.broadcast_to(xp.asarray(A[0, 0]), (3, 4)), np.broadcast_to(A[0, 0], (3, 4))),
        (lambda: xp.maximum(xp.asarray(A), 0), np.maximum(A, 0)),
        (lambda: xp.where(xp.asarray(A) > 0, xp.asarray(A), 0.5), np.where(A > 0, A, 0.5)),
        (lambda: xp.exp(xp.asarray(A)), np.exp(A)),
        (lambda: xp.tanh(xp.asarray(A)), np.tanh(A)),
        (lambda: xp.matmul(xp.asarray(A), xp.asarray(A[0].T)), A @ A[0].T),
        (
            lambda: xp.pad(xp.asarray(A), ((0, 0), (1, 2), (2, 0))),
            np.pad(A, ((0, 0), (1, 2), (2, 0))),
        ),
        (lambda: xp.argmax(xp.asarray(A), axis=2), A.argmax(2)),
        (lambda: xp.ones_like(xp.asarray(A)), np.ones_like(A)),
    ],
)
def test_numpy_names_give_numpy_results(call, ref):
    got = _np(call())
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_numpy_dtypes_and_names_are_accepted():
    assert xp.asarray([1, 2], dtype=np.float32).dtype == xp.float32
    assert xp.zeros((2,), dtype="int64").dtype == xp.int64
    assert xp.astype(xp.asarray([1.5]), np.dtype("float32")).dtype == xp.float32
    with pytest.raises(TypeError, match="no dtype 'float16'"):
        xp.asarray([1.0], dtype=np.float16)


def test_random_draws_follow_numpys_seed():
    np.random.seed(3)
    ref = np.random.randn(2, 3)
    np.random.seed(3)
    got = xp.random.randn(2, 3)
    assert isinstance(got, xp.ndarray)
    np.testing.assert_array_equal(_np(got), ref)
