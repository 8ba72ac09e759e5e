"""Checkpoint and weight files written by an earlier zerograd-nn, and the run that made them.

``data/checkpoint_v1.npz`` and ``data/weights_v1.npz`` were written by
:func:`write` with the code of main 701de1e (before the load was restructured), so the
tests can show that files written by that version still load, value for value. Rebuild
them only on purpose (a new format): ``python packages/nn/tests/checkpoint_files.py``.

The run's MLP uses that version's sigmoid (:class:`SigmoidV1`), so that it gives the same
bits as the run that wrote the files: ``F.sigmoid`` has since become ``1 / (1 + exp(-x))``.
"""

from pathlib import Path

import numpy as np

import zerograd_nn.functional as F
from zerograd import Function
from zerograd_nn import DataLoader
from zerograd_nn.datasets import Spiral
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import Adam, weight_decay_groups
from zerograd_nn.schedulers import StepLR

DATA = Path(__file__).resolve().parent / "data"
CHECKPOINT = DATA / "checkpoint_v1.npz"
WEIGHTS = DATA / "weights_v1.npz"

EXTRA = {
    "note": "fixture",
    "best": 0.5,
    "history": [1, 2.5, None, True, "x"],
    "counts": np.arange(6, dtype=np.int16).reshape(2, 3),
    "nested": {"a": [np.ones(2, np.float32), {"b": np.float64(1.25)}]},
}


class SigmoidV1(Function):
    """The sigmoid of main 701de1e, ``tanh(x/2)/2 + 1/2``, its gradient ``gy * y * (1 - y)``."""

    vjp_reads_inputs = False

    def forward(self, x):
        return np.tanh(x * 0.5) * 0.5 + 0.5

    def vjp(self, xp, xs, y, gy):
        return gy * y * (1 - y)


def build(seed=0, steps=5):
    """A small run: MLP, Adam in two groups, StepLR, a shuffling DataLoader, ``steps``
    updates into the first epoch. Returns ``(model, optimizer, scheduler, loader)``."""
    np.random.seed(seed)
    model = MLP((8, 3), activation=lambda x: SigmoidV1()(x))
    model(np.zeros((1, 2), np.float32))
    opt = Adam(0.01).setup(weight_decay_groups(model, 1e-3))
    sched = StepLR(opt, step_size=2, gamma=0.5)
    loader = DataLoader(Spiral(train=True), batch_size=30, shuffle=True, seed=seed + 1)
    it = iter(loader)
    for _ in range(steps):
        x, t = next(it)
        loss = F.softmax_cross_entropy(model(x.astype(np.float32)), t)
        model.cleargrads()
        loss.backward()
        opt.update()
        sched.step()
    np.random.rand(3)  # moves numpy's global state away from the seed
    return model, opt, sched, loader


def write(folder=DATA):
    """Write both files from :func:`build` into ``folder``."""
    from zerograd_nn.checkpoint import save_checkpoint

    folder = Path(folder)
    model, opt, sched, loader = build()
    save_checkpoint(
        folder / CHECKPOINT.name,
        model=model,
        optimizer=opt,
        scheduler=sched,
        loader=loader,
        epoch=0,
        iteration=5,
        extra=EXTRA,
    )
    model.save_weights(str(folder / WEIGHTS.name))


if __name__ == "__main__":
    write()
