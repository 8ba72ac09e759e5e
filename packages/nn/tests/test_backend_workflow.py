"""A user's whole training workflow on the backend under test (the GPU's one when the suite
runs with ``ZEROGRAD_TEST_BACKEND=cupy``): dropout drawing from the backend's generator,
checkpoints that resume bit for bit (that generator's state included), weights moved
between the backend and numpy, and the Trainer with every extension, resumed."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from test_checkpoint import Net  # Linear, ReLU, dropout 0.3, Linear

import zerograd_nn.functional as F
from zerograd.backends import as_array_of
from zerograd_nn import DataLoader
from zerograd_nn import optimizers as O
from zerograd_nn.checkpoint import load_checkpoint, save_checkpoint
from zerograd_nn.datasets import Spiral
from zerograd_nn.training import (
    Evaluator,
    LogReport,
    PlotReport,
    PrintReport,
    ProgressBar,
    Snapshot,
    Trainer,
)


def _fresh(backend, seed):
    """A model initialised on ``backend`` (its generator seeded), Adam, a seeded loader."""
    backend.seed(seed)
    np.random.seed(seed)
    model = Net()
    model(as_array_of(np.zeros((1, 2), np.float32), backend))
    opt = O.Adam(0.02).setup(model)
    loader = DataLoader(Spiral(train=True), 32, seed=seed + 100)
    return model, opt, loader


def _train(backend, model, opt, loader, steps, it=None):
    """``steps`` updates; returns the loader's iterator so that a run can go on mid-epoch."""
    it = iter(loader) if it is None else it
    for _ in range(steps):
        try:
            x, t = next(it)
        except StopIteration:
            it = iter(loader)
            x, t = next(it)
        x, t = as_array_of(x.astype(np.float32), backend), as_array_of(t, backend)
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        opt.update()
    return it


def _weights(model, to_np):
    return {k: to_np(p.data) for k, p in model.named_params().items()}


def test_checkpoint_resumes_bit_for_bit_with_the_backends_random_state(tmp_path, backend, to_np):
    straight = _fresh(backend, 0)
    it = _train(backend, *straight, 14)  # 10 batches per epoch: the save falls mid-epoch 1
    path = save_checkpoint(
        tmp_path / "c", model=straight[0], optimizer=straight[1], loader=straight[2]
    )
    _train(backend, *straight, 9, it)

    again = _fresh(backend, 7)  # other weights, other dropout stream, other shuffling
    backend.rand(1000)  # and the generator moved on
    load_checkpoint(path, model=again[0], optimizer=again[1], loader=again[2])
    _train(backend, *again, 9)
    want, got = _weights(straight[0], to_np), _weights(again[0], to_np)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def test_without_the_random_state_the_resumed_run_would_differ(tmp_path, backend, to_np):
    """The check above can fail: resumed with another dropout stream, the weights differ."""
    straight = _fresh(backend, 0)
    it = _train(backend, *straight, 14)
    path = save_checkpoint(
        tmp_path / "c", model=straight[0], optimizer=straight[1], loader=straight[2]
    )
    _train(backend, *straight, 9, it)
    again = _fresh(backend, 7)
    load_checkpoint(path, model=again[0], optimizer=again[1], loader=again[2])
    backend.seed(12345)
    np.random.seed(12345)
    _train(backend, *again, 9)
    want, got = _weights(straight[0], to_np), _weights(again[0], to_np)
    assert any(not np.array_equal(got[k], want[k]) for k in want)


def test_weights_saved_on_the_backend_load_on_numpy_and_back(tmp_path, backend, to_np):
    model, opt, loader = _fresh(backend, 3)
    _train(backend, model, opt, loader, 5)
    model.save_weights(str(tmp_path / "w.npz"))
    on_cpu = Net()
    on_cpu.load_weights(str(tmp_path / "w.npz"))
    assert all(type(p.data) is np.ndarray for p in on_cpu.params())
    back = Net()
    back(as_array_of(np.zeros((1, 2), np.float32), backend))
    on_cpu.save_weights(str(tmp_path / "w2.npz"))
    back.load_weights(str(tmp_path / "w2.npz"))
    want = _weights(model, to_np)
    for name, p in back.named_params().items():
        assert type(p.data) is type(model.l1.W.data), name  # loaded onto the backend in use
        np.testing.assert_array_equal(to_np(p.data), want[name], err_msg=name)
        np.testing.assert_array_equal(on_cpu.named_params()[name].data, want[name])


def _loaders(backend):
    train = DataLoader(Spiral(train=True), 32, seed=5)
    test = DataLoader(Spiral(train=False), 100, shuffle=False)
    if backend.device == "gpu":  # the book's way: the loaders make GPU batches
        train.to_gpu()
        test.to_gpu()
    elif backend.name != "numpy":
        pytest.skip(
            f"the DataLoader makes batches on numpy or, after to_gpu(), on the GPU backend; "
            f"not on {backend.name!r}"
        )
    return train, test


def _trainer(backend, out, seed, max_epochs):
    backend.seed(seed)
    np.random.seed(seed)
    model = Net()
    model(as_array_of(np.zeros((1, 2), np.float32), backend))
    opt = O.Adam(0.02).setup(model)
    train, test = _loaders(backend)
    trainer = Trainer(
        model,
        opt,
        train,
        F.softmax_cross_entropy,
        max_epochs=max_epochs,
        metrics={"accuracy": F.accuracy},
        out=out,
    )
    trainer.extend(Evaluator(test))
    trainer.extend(LogReport(filename="log.jsonl"))
    trainer.extend(PrintReport(["epoch", "loss", "val/loss", "val/accuracy"]))
    trainer.extend(ProgressBar())
    trainer.extend(PlotReport(["loss", "val/loss"], filename="loss.png"))
    trainer.extend(Snapshot(trigger=(13, "iteration")))
    return trainer


def _iteration_of(path):
    return int(re.findall(r"\d+", path.name)[-1])


def test_trainer_with_every_extension_resumes_bit_for_bit(tmp_path, backend, to_np, capsys):
    pytest.importorskip("matplotlib", reason="PlotReport draws with matplotlib")
    straight = _trainer(backend, tmp_path / "a", 0, 3).run()
    assert (straight.epoch, straight.iteration) == (3, 30)
    out = capsys.readouterr().out
    assert "val/accuracy" in out and (tmp_path / "a" / "loss.png").stat().st_size > 0
    log = [json.loads(line) for line in (tmp_path / "a" / "log.jsonl").read_text().splitlines()]
    assert [e["epoch"] for e in log] == [1, 2, 3] and log[-1]["loss"] < log[0]["loss"]
    assert 0.0 <= log[-1]["val/accuracy"] <= 1.0

    snaps = {_iteration_of(p): p for p in (tmp_path / "a").glob("snapshot_iter_*")}
    assert sorted(snaps) == [13, 26]
    resumed = _trainer(backend, tmp_path / "b", 9, 3)  # other weights and dropout stream
    resumed.resume(snaps[13]).run()
    assert (resumed.epoch, resumed.iteration) == (3, 30)
    want, got = _weights(straight.model, to_np), _weights(resumed.model, to_np)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
    for p in resumed.model.params():
        assert type(p.data) is type(straight.model.l1.W.data)
