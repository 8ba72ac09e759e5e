"""Training on JAX gives numpy's numbers: same weights and batches, same gradients and losses.

Each model is built twice from one numpy seed (so the weights are equal), one copy moved to
JAX; both take the same batches. After every step each parameter's gradient and the loss
must agree within float32 tolerance (XLA and numpy sum in different orders).
"""

from __future__ import annotations

import numpy as np
import pytest

from zerograd.backends import as_array_of, as_numpy, backend_of

nn = pytest.importorskip("zerograd_nn", reason="zerograd-nn is not installed here")
import zerograd_nn.functional as F  # noqa: E402
import zerograd_nn.layers as L  # noqa: E402
from zerograd_nn import Model  # noqa: E402
from zerograd_nn.datasets import get_spiral  # noqa: E402
from zerograd_nn.models import MLP  # noqa: E402
from zerograd_nn.optimizers import SGD, AdaDelta, AdaGrad, Adam, MomentumSGD  # noqa: E402

RTOL, ATOL = 2e-4, 2e-6


def _twins(make_model, x0):
    """Two models with equal weights: one on numpy, one moved to JAX.

    The weights are drawn on numpy: zerograd-nn's layers draw from ``xp.random``, which JAX
    has not (see test_numpy_assumptions.py).
    """
    models = []
    for _ in range(2):
        np.random.seed(0)
        model = make_model()
        model(x0)  # sizes the lazy layers
        models.append(model)
    models[1].to("jax")
    for a, b in zip(models[0].params(), models[1].params()):
        np.testing.assert_array_equal(as_numpy(a.data), as_numpy(b.data))
    return models


def _train_side_by_side(make_model, optimizer, x, t, batches, backend):
    """Train the twins on ``batches`` (index arrays); compare every step; return the losses."""
    models = _twins(make_model, x[:1])
    opts = [optimizer().setup(m) for m in models]
    start = [as_numpy(p.data) for p in models[1].params()]
    losses = []
    for step, idx in enumerate(batches):
        pair = []
        for model, opt, name in zip(models, opts, ("numpy", "jax")):
            y = model(as_array_of(x[idx], name))
            loss = F.softmax_cross_entropy(y, as_array_of(t[idx], name))
            model.cleargrads()
            loss.backward()
            pair.append((float(loss.data), [as_numpy(p.grad.data) for p in model.params()]))
            opt.update()
        (ref_loss, ref_grads), (loss, grads) = pair
        np.testing.assert_allclose(loss, ref_loss, rtol=RTOL, err_msg=f"loss at step {step}")
        for i, (g, ref) in enumerate(zip(grads, ref_grads)):
            np.testing.assert_allclose(g, ref, rtol=RTOL, atol=ATOL, err_msg=f"step {step} #{i}")
        losses.append((ref_loss, loss))
    assert all(backend_of(p.data) is backend for p in models[1].params())
    moved = [not np.array_equal(a, as_numpy(p.data)) for a, p in zip(start, models[1].params())]
    assert all(moved), moved  # every JAX parameter was updated
    return np.array(losses)


def _spiral_batches(n: int, batch: int, epochs: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [i for _ in range(epochs) for i in np.array_split(rng.permutation(n), n // batch)]


def test_spiral_mlp_gradients_and_losses_match_numpy(backend):
    x, t = get_spiral(train=True)  # float32 points, int labels: JAX's 32-bit mode keeps both
    batches = _spiral_batches(len(x), 30, epochs=3)
    losses = _train_side_by_side(lambda: MLP((10, 3)), lambda: SGD(lr=1.0), x, t, batches, backend)
    assert losses[-5:, 1].mean() < losses[:5, 1].mean()  # it learns


@pytest.mark.parametrize("optimizer", [MomentumSGD, AdaGrad, AdaDelta, Adam])
def test_every_optimizer_updates_jax_params_as_on_numpy(backend, optimizer):
    # optimizers write ``param.data -= ...``: on immutable JAX arrays that rebinds the data
    x, t = get_spiral(train=True)
    _train_side_by_side(
        lambda: MLP((8, 3)), optimizer, x, t, _spiral_batches(len(x), 50, epochs=1), backend
    )


def _digits(n: int) -> tuple[np.ndarray, np.ndarray]:
    datasets = pytest.importorskip("sklearn.datasets", reason="the digits come from scikit-learn")
    digits = datasets.load_digits()
    x = (digits.images[:n] / 16.0).astype(np.float32)[:, None, :, :]
    return x, digits.target[:n].astype(np.int32)


class DigitsCNN(Model):
    """examples/cnn_digits.py's network; ``pool`` picks the pooling between conv and fc."""

    def __init__(self, pool=F.pooling) -> None:
        super().__init__()
        self.pool = pool
        self.conv = L.Conv2d(16, kernel_size=3, stride=1, pad=1)
        self.fc1 = L.Linear(64)
        self.fc2 = L.Linear(10)

    def forward(self, x):
        h = self.pool(F.relu(self.conv(x)), 2, 2)  # (N, 16, 4, 4)
        h = F.relu(self.fc1(F.reshape(h, (h.shape[0], -1))))
        return self.fc2(h)


def test_digits_cnn_with_average_pooling_matches_numpy(backend):
    # conv2d runs through the plugin's im2col/col2im kernels in forward and backward
    x, t = _digits(64)
    batches = np.array_split(np.random.default_rng(1).permutation(64), 4)
    losses = _train_side_by_side(
        lambda: DigitsCNN(F.average_pooling), lambda: Adam(alpha=0.01), x, t, batches, backend
    )
    assert losses[-1, 1] < losses[0, 1]


def test_digits_cnn_with_max_pooling_matches_numpy(backend):
    x, t = _digits(64)
    batches = np.array_split(np.random.default_rng(1).permutation(64), 4)
    _train_side_by_side(DigitsCNN, lambda: Adam(alpha=0.01), x, t, batches, backend)


def test_weights_saved_from_jax_load_on_numpy_and_back(backend, tmp_path):
    x, _ = get_spiral(train=True)
    on_numpy, on_jax = _twins(lambda: MLP((10, 3)), x[:1])
    for p in on_jax.params():  # make the JAX weights differ from the numpy twin's
        p.data = p.data * 2.0 + 1.0
    on_jax.save_weights(tmp_path / "w.npz")
    on_numpy.load_weights(tmp_path / "w.npz")
    jax_twin = _twins(lambda: MLP((10, 3)), x[:1])[1]
    jax_twin.load_weights(tmp_path / "w.npz")
    for a, b, c in zip(on_jax.params(), on_numpy.params(), jax_twin.params()):
        assert isinstance(b.data, np.ndarray) and backend_of(c.data) is backend
        np.testing.assert_array_equal(as_numpy(b.data), as_numpy(a.data))
        np.testing.assert_array_equal(as_numpy(c.data), as_numpy(a.data))


def test_a_checkpoint_from_jax_resumes_on_numpy_with_the_optimizer_state(backend, tmp_path):
    from zerograd_nn.checkpoint import load_checkpoint, save_checkpoint

    x, t = get_spiral(train=True)
    on_numpy, on_jax = _twins(lambda: MLP((10, 3)), x[:1])
    opt_jax, opt_numpy = Adam(alpha=0.05).setup(on_jax), Adam(alpha=0.05).setup(on_numpy)

    def step(model, opt, name, idx):
        loss = F.softmax_cross_entropy(model(as_array_of(x[idx], name)), as_array_of(t[idx], name))
        model.cleargrads()
        loss.backward()
        opt.update()

    for idx in _spiral_batches(300, 100, 1):  # JAX's arrays are immutable: Adam's moments too
        step(on_jax, opt_jax, "jax", idx)
    save_checkpoint(tmp_path / "c.npz", model=on_jax, optimizer=opt_jax)
    load_checkpoint(tmp_path / "c.npz", model=on_numpy, optimizer=opt_numpy)
    assert all(isinstance(a, np.ndarray) for s in opt_numpy._state.values() for a in s.values())
    for idx in _spiral_batches(300, 100, 1):
        step(on_numpy, opt_numpy, "numpy", idx)
        step(on_jax, opt_jax, "jax", idx)
    for a, b in zip(on_jax.params(), on_numpy.params()):
        np.testing.assert_allclose(as_numpy(a.data), b.data, rtol=RTOL, atol=ATOL)


def test_a_nonfinite_jax_gradient_is_named(backend):
    from zerograd import Variable
    from zerograd_nn.finite import NonFiniteError, check_finite_grads

    x, _ = get_spiral(train=True)
    model = _twins(lambda: MLP((10, 3)), x[:1])[1]
    F.sum(model(as_array_of(x[:4], "jax"))).backward()
    check_finite_grads(model)
    grad = as_numpy(model.l1.b.grad.data)
    grad[1] = np.inf
    model.l1.b.grad = Variable(as_array_of(grad, "jax"))
    with pytest.raises(NonFiniteError, match=r"gradient of 'l1.b' \(shape \(3,\)\) holds 1 nan"):
        check_finite_grads(model)


FIRST_SAVE = """
import sys
import numpy as np
from zerograd_nn.checkpoint import load_checkpoint, save_checkpoint
from zerograd_nn.layers import Linear

assert "jax" not in sys.modules
np.random.seed(0)
model = Linear(2, in_size=2)
before = np.random.get_state()
save_checkpoint(sys.argv[1], model=model)  # asks every backend: the first JAX import
assert "jax" in sys.modules
after = np.random.get_state()
print(all(np.array_equal(a, b) for a, b in zip(before, after)))
"""


def test_saving_does_not_move_numpys_generator_when_it_first_imports_jax(tmp_path):
    """Importing JAX draws from numpy's global generator; a save must not move it, or a run
    that saves goes on differently from one resumed from that save."""
    import subprocess
    import sys

    script = tmp_path / "first_save.py"
    script.write_text(FIRST_SAVE)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "c.npz")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "True\n"


@pytest.mark.parametrize("cell", [L.RNN, L.LSTM])
def test_a_state_kept_from_before_to_is_named_with_what_to_do(backend, cell):
    """A recurrent cell moved mid-sequence keeps a numpy hidden state: the next step names it
    and says to call reset_state(), instead of telling the user to move their input."""
    from zerograd.backends import BackendMismatchError

    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    np.random.seed(0)
    model = cell(4)
    model(x)
    kept = model.h
    model.to("jax")
    with pytest.raises(
        BackendMismatchError,
        match=rf"{cell.__name__}: the hidden state is on numpy but x is on jax .*model\.to\(\)"
        r".*call reset_state\(\) after to\(\)",
    ):
        model(as_array_of(x, "jax"))
    assert model.h is kept  # the failed step changed nothing
    model.reset_state()
    y = model(as_array_of(x, "jax"))
    assert backend_of(y.data) is backend
