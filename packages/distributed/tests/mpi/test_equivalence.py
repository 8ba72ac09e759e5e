"""Training on N ranks with batch B each equals training one process with batch N*B.

Every rank also trains the one-process reference itself (the models are small), on the
union of all ranks' batches of that step, and compares the parameters after every step.
"""

from __future__ import annotations

import numpy as np
import pytest

import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd_distributed import DataParallelOptimizer, broadcast_params, scatter_dataset
from zerograd_distributed.data import shard_indices
from zerograd_nn import Model
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import SGD, Adam

B = 4  # examples per rank and step
STEPS = 6


class SmallCNN(Model):
    """conv 3x3 (4 channels) -> relu -> 2x2 max pooling -> linear to 3 classes."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = L.Conv2d(4, kernel_size=3, pad=1)
        self.fc = L.Linear(3)

    def forward(self, x):
        h = F.pooling(F.relu(self.conv(x)), 2, 2)
        return self.fc(F.reshape(h, (len(x), -1)))


def _data(kind, n):
    rng = np.random.default_rng(0)  # the same data set on every rank
    shape = (n, 6) if kind == "mlp" else (n, 1, 6, 6)
    return rng.standard_normal(shape).astype(np.float32), rng.integers(0, 3, n)


def _model(kind, comm):
    np.random.seed(1000 + comm.rank)  # each rank starts from its own random weights
    return MLP((10, 10, 3)) if kind == "mlp" else SmallCNN()


def _step(model, opt, x, t):
    loss = F.softmax_cross_entropy(model(x), t)
    model.cleargrads()
    loss.backward()
    opt.update()


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
@pytest.mark.parametrize("make_opt", [lambda: SGD(lr=0.2), lambda: Adam(alpha=0.02)])
def test_n_ranks_equal_one_process_step_by_step(comm, kind, make_opt):
    x, t = _data(kind, 7 * comm.size * B + 1)  # not a multiple: shards repeat a few
    model, reference = _model(kind, comm), _model(kind, comm)
    model(x[:1]), reference(x[:1])  # size the lazy layers
    broadcast_params(model, comm)
    for p, q in zip(reference.params(), model.params()):
        p.data = q.data.copy()
    opt = DataParallelOptimizer(make_opt(), comm).setup(model)
    ref_opt = make_opt().setup(reference)

    start = [p.data.copy() for p in model.params()]
    shard = scatter_dataset(np.arange(len(x)), comm, seed=5)
    shards = [shard_indices(len(x), comm.size, r, seed=5) for r in range(comm.size)]
    np.testing.assert_array_equal(shard.indices, shards[comm.rank])
    worst = 0.0
    for s in range(STEPS):
        mine = shard.indices[s * B : (s + 1) * B]
        _step(model, opt, x[mine], t[mine])
        every = np.concatenate([idx[s * B : (s + 1) * B] for idx in shards])  # N*B examples
        _step(reference, ref_opt, x[every], t[every])
        for p, q in zip(model.params(), reference.params()):
            np.testing.assert_allclose(p.data, q.data, rtol=1e-5, atol=1e-6)
            worst = max(worst, float(np.abs(p.data - q.data).max()))
            every = comm.allgather(p.data)  # and every rank holds the very same values
            assert all(np.array_equal(every[r], every[0]) for r in range(comm.size))
    for p, p0 in zip(model.params(), start):  # training moved every parameter
        assert not np.allclose(p.data, p0)
    print(f"{kind} {type(ref_opt).__name__} on {comm.size} ranks: max |difference| {worst:.1e}")
