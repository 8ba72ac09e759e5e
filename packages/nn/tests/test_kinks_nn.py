"""zerograd_nn.functional where derivatives are not unique or values not finite: the kinks
of the activations, ties in pooling windows, infinite and huge logits, probabilities of
exactly 0 and 1, float16.

Every reference is worked out by hand (in float64 with numpy), never by another framework.
The table "At kinks and ties" of docs/from-pytorch.md names the test behind each row.
"""

import math

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Variable, using_config
from zerograd.backends import as_numpy

inf, nan = np.inf, np.nan


def grads(f, *arrays, gy=None, order=1):
    """``f(*xs)``'s value and each input's gradient; ``gy`` weights the outputs (default
    all ones); ``order=2`` gives the gradients of the sum of the first gradients."""
    xs = [Variable(a) for a in arrays]
    y = f(*xs)
    out = y if gy is None else F.sum(y * gy)
    out.backward(create_graph=order == 2)
    if order == 2:
        total = None
        for x in xs:
            g = F.sum(x.grad)
            total = g if total is None else total + g
            x.cleargrad()
        total.backward()
    return as_numpy(y), [None if x.grad is None else as_numpy(x.grad) for x in xs]


def quiet(f, *args, **kwargs):
    """``f(...)`` with numpy's IEEE warnings off (infinite and nan results are the point)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return f(*args, **kwargs)


def logistic(x):
    """1 / (1 + e**-x) in float64, one value at a time (math.exp raises on overflow)."""
    return np.array([1 / (1 + math.exp(-v)) if v > -700 else math.exp(v) for v in x])


# --- batch_norm ---


@pytest.mark.parametrize("dtype, rtol, atol", [("float64", 1e-10, 1e-8), ("float16", 2e-2, 0.5)])
def test_batch_norm_of_a_constant_channel_has_a_finite_gradient(dtype, rtol, atol):
    # a dead channel (all zeros) has variance 0: float16 overflowed (v + eps) ** -1.5 and
    # the gradient was 0 * inf = nan
    rng = np.random.default_rng(0)
    x = np.stack([np.zeros(6), rng.standard_normal(6)], axis=1).astype(dtype)
    gy = rng.uniform(-0.1, 0.1, (6, 2)).astype(dtype)
    gamma, beta = np.ones(2, dtype), np.zeros(2, dtype)
    eps = 2e-5
    with using_config("train", True):
        y, (gx,) = grads(
            lambda v: F.batch_norm(v, gamma, beta, np.zeros(2, dtype), np.ones(2, dtype), eps=eps),
            x,
            gy=gy,
        )
    # the batch norm gradient by hand: (gy - mean(gy) - xhat mean(gy xhat)) / sqrt(var + eps)
    x64, g64 = x.astype(np.float64), gy.astype(np.float64)
    xc = x64 - x64.mean(axis=0)
    std = np.sqrt((xc**2).mean(axis=0) + eps)
    xhat = xc / std
    want = (g64 - g64.mean(axis=0) - xhat * (g64 * xhat).mean(axis=0)) / std
    assert np.isfinite(gx).all() and gx.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y, xhat, rtol=rtol, atol=atol / 100)
    np.testing.assert_allclose(gx, want, rtol=rtol, atol=atol)
