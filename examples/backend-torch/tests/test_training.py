"""Training on PyTorch tensors gives numpy's numbers: same weights, batches, gradients, losses.

Each model is built twice from one numpy seed, one copy moved to torch; both train on the
same batches. After every step, the loss and every parameter's gradient must agree within
float32 tolerance (PyTorch and numpy may sum in different orders).

The loss is ``F.softmax_cross_entropy`` on torch labels, whose label checks count elements
with ``zerograd.utils.size_of`` (``torch.Tensor.size`` is a method, not the standard's int).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zerograd import Variable
from zerograd.backends import as_array_of, as_numpy, backend_of

pytest.importorskip("zerograd_nn", reason="zerograd-nn is not installed here")
import zerograd_nn.functional as F  # noqa: E402
from zerograd_nn.datasets import get_spiral  # noqa: E402
from zerograd_nn.models import MLP  # noqa: E402
from zerograd_nn.optimizers import SGD, AdaDelta, AdaGrad, Adam, MomentumSGD  # noqa: E402

RTOL, ATOL = 2e-4, 2e-6


def _pair(hidden: tuple[int, ...], x0: np.ndarray) -> list:
    """Two MLPs with equal weights (drawn on numpy), the second moved to torch."""
    models = []
    for _ in range(2):
        np.random.seed(0)
        model = MLP(hidden)
        model(x0)  # sizes the lazy layers
        models.append(model)
    models[1].to("torch")
    for a, b in zip(models[0].params(), models[1].params()):
        assert isinstance(b.data, torch.Tensor)
        np.testing.assert_array_equal(as_numpy(a.data), as_numpy(b.data))
    return models


def _batches(n: int, size: int, epochs: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [i for _ in range(epochs) for i in np.array_split(rng.permutation(n), n // size)]


def _train_side_by_side(hidden, optimizer, batches, backend):
    """Train the pair; compare loss and gradients at every step; return the losses."""
    x, t = get_spiral(train=True)
    models = _pair(hidden, x[:1])
    opts = [optimizer().setup(m) for m in models]
    arrays = [p.data for p in models[1].params()]
    start = [as_numpy(a).copy() for a in arrays]
    losses = []
    for step, idx in enumerate(batches):
        seen = []
        for model, opt, name in zip(models, opts, ("numpy", "torch")):
            y = model(as_array_of(x[idx], name))
            loss = F.softmax_cross_entropy(y, as_array_of(t[idx], name))
            model.cleargrads()
            loss.backward()
            seen.append((float(loss.data), [as_numpy(p.grad.data) for p in model.params()]))
            opt.update()
        (ref_loss, ref_grads), (loss, grads) = seen
        np.testing.assert_allclose(loss, ref_loss, rtol=RTOL, err_msg=f"loss at step {step}")
        for i, (g, ref) in enumerate(zip(grads, ref_grads)):
            np.testing.assert_allclose(g, ref, rtol=RTOL, atol=ATOL, err_msg=f"step {step} #{i}")
        losses.append((ref_loss, loss))
    params = list(models[1].params())
    assert all(backend_of(p.data) is backend for p in params)
    # the optimizer wrote into the tensors it started with (Backend.compute_into) ...
    assert all(p.data is a for p, a in zip(params, arrays))
    # ... and every one of them changed
    assert all(not np.array_equal(a, as_numpy(p.data)) for a, p in zip(start, params))
    return np.array(losses)


def test_spiral_mlp_gradients_and_losses_match_numpy(backend):
    losses = _train_side_by_side((10, 3), lambda: SGD(lr=1.0), _batches(300, 30, 3), backend)
    assert losses[-5:, 1].mean() < losses[:5, 1].mean()  # it learns


@pytest.mark.parametrize("optimizer", [MomentumSGD, AdaGrad, AdaDelta, Adam])
def test_every_optimizer_updates_torch_tensors_as_on_numpy(backend, optimizer):
    _train_side_by_side((8, 3), optimizer, _batches(300, 50, 1), backend)


def test_softmax_cross_entropy_and_accuracy_on_torch_equal_numpy(backend):
    rng = np.random.default_rng(1)
    x, t = rng.standard_normal((5, 4)), np.array([0, 3, 1, 1, 2])
    # the reference, by hand: mean over rows of logsumexp(x) - x[t]
    want = np.mean(np.log(np.exp(x).sum(axis=1)) - x[np.arange(5), t])
    results = []
    for name in ("numpy", "torch"):
        xv = Variable(as_array_of(x, name))
        loss = F.softmax_cross_entropy(xv, as_array_of(t, name))
        loss.backward()
        acc = F.accuracy(as_array_of(x, name), as_array_of(t, name))
        results.append((float(loss.data), as_numpy(xv.grad.data), float(acc.data)))
    (loss_np, grad_np, acc_np), (loss_t, grad_t, acc_t) = results
    np.testing.assert_allclose(loss_t, want, rtol=1e-12)
    np.testing.assert_allclose(loss_t, loss_np, rtol=1e-12)
    np.testing.assert_allclose(grad_t, grad_np, rtol=1e-12, atol=1e-15)
    assert acc_t == acc_np == np.mean(x.argmax(axis=1) == t)


def test_softmax_cross_entropy_on_torch_counts_the_labels(backend):
    x = as_array_of(np.zeros((3, 2)), "torch")
    with pytest.raises(ValueError, match=r"softmax_cross_entropy: 2 labels for 3 rows"):
        F.softmax_cross_entropy(x, as_array_of(np.array([0, 1]), "torch"))
