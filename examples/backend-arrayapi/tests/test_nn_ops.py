"""zerograd-nn's CNN and activation ops on array-api-strict arrays, gradients to second order."""

from __future__ import annotations

import numpy as np
import pytest

from zerograd.backends import backend_of
from zerograd.testing import check_backward

F = pytest.importorskip("zerograd_nn.functional", reason="zerograd-nn is not installed here")

rng = np.random.default_rng(0)
IMG = rng.permutation(50).reshape(1, 2, 5, 5) * 0.1  # distinct values: no ties in max pooling
KERNEL = rng.standard_normal((3, 2, 3, 3))
X, W = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
CASES = {
    "conv2d": (lambda x, k: F.conv2d(x, k, stride=1, pad=1), [IMG, KERNEL]),
    "pooling": (lambda x: F.pooling(x, 2, 2, pad=1), [IMG]),
    "average_pooling": (lambda x: F.average_pooling(x, 2, 1), [IMG]),
    "linear_tanh": (lambda x, w: F.tanh(F.linear(x, w)), [X, W]),
    "softmax": (lambda x: F.softmax(x), [X]),
    "sigmoid_mse": (lambda x, t: F.mean_squared_error(F.sigmoid(x), t), [X, X * 0.5]),
}


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_on_arrayapi(backend, name, order):
    fn, arrays = CASES[name]
    xs = [backend.from_numpy(a) for a in arrays]
    assert backend_of(fn(*xs).data) is backend
    check_backward(fn, *xs, order=order)
