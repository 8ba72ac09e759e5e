"""The spiral MLP of DeZero's step 48 trains on this backend exactly as on numpy."""

from __future__ import annotations

import numpy as np
import pytest

from zerograd.backends import as_array_of, backend_of, get_backend

nn = pytest.importorskip("zerograd_nn", reason="zerograd-nn is not installed here")
from zerograd_nn import functional as F  # noqa: E402
from zerograd_nn.datasets import get_spiral  # noqa: E402
from zerograd_nn.models import MLP  # noqa: E402
from zerograd_nn.optimizers import SGD  # noqa: E402


def _train(backend_name: str, epochs: int = 300, batch: int = 30) -> tuple[list[float], MLP]:
    np.random.seed(0)  # the MLP's weights come from numpy's global generator on both backends
    x, t = get_spiral(train=True)
    x, t = np.asarray(x), np.asarray(t)
    model = MLP((10, 3))
    optimizer = SGD(lr=1.0).setup(model)
    order = np.random.default_rng(0)
    losses = []
    for _ in range(epochs):
        total = 0.0
        for i in np.array_split(order.permutation(len(x)), len(x) // batch):
            xb, tb = as_array_of(x[i], backend_name), as_array_of(t[i], backend_name)
            loss = F.softmax_cross_entropy(model(xb), tb)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            total += float(loss.data) * len(i)
        losses.append(total / len(x))
    return losses, model


def test_spiral_mlp_loss_drops_and_matches_numpy():
    losses, model = _train("arrayapi")
    backend = get_backend("arrayapi")
    assert all(backend_of(p.data) is backend for p in model.params())
    assert losses[-1] < 0.25 * losses[0], losses  # the book reaches ~0.1 from ~1.1
    ref, _ = _train("numpy")
    np.testing.assert_allclose(losses, ref, rtol=1e-3)
