"""The Trainer and its extensions: the loop against the book's hand-written one, triggers,
logs, evaluation, schedules, early stopping, plots, progress bar, snapshots and resume."""

import csv
import io
import json
import math
import os
import sys

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Config, Function
from zerograd_nn import DataLoader, Model, schedulers
from zerograd_nn import layers as L
from zerograd_nn.checkpoint import CheckpointError, save_checkpoint
from zerograd_nn.datasets import Spiral
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import SGD, Adam
from zerograd_nn.training import (
    EarlyStopping,
    Evaluator,
    Extension,
    IntervalTrigger,
    LogReport,
    PlotReport,
    PrintReport,
    ProgressBar,
    Snapshot,
    StepScheduler,
    Trainer,
)


def _setup(seed=0, batch_size=30, lr=1.0):
    np.random.seed(seed)
    model = MLP((10, 3))
    loader = DataLoader(Spiral(train=True), batch_size)  # 300 points: 10 batches of 30
    return model, SGD(lr).setup(model), loader


class Recorder(Extension):
    """Notes (epoch, iteration, at_epoch_end, observation) at every point it runs."""

    def __init__(self, trigger=None, priority=100):
        self.trigger, self.priority, self.calls = trigger, priority, []

    def __call__(self, trainer):
        self.calls.append(
            (trainer.epoch, trainer.iteration, trainer.at_epoch_end, dict(trainer.observation))
        )


def test_the_loop_is_the_books_loop_bit_for_bit(tmp_path):
    model, optimizer, loader = _setup()
    Trainer(model, optimizer, loader, max_epochs=3, out=tmp_path).run()

    ref, ref_opt, ref_loader = _setup()
    for _ in range(3):
        for x, t in ref_loader:
            loss = F.softmax_cross_entropy(ref(x), t)
            ref.cleargrads()
            loss.backward()
            ref_opt.update()
    for (name, p), q in zip(model.named_params().items(), ref.params()):
        np.testing.assert_array_equal(p.data, q.data, err_msg=name)


def test_triggers_fire_at_iteration_and_epoch_points(tmp_path):
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=2, out=tmp_path)
    every3 = trainer.extend(Recorder(), trigger=(3, "iteration"))
    epochly = trainer.extend(Recorder(), trigger=(1, "epoch"))
    trainer.run()
    assert [c[1] for c in every3.calls] == [3, 6, 9, 12, 15, 18]
    assert not any(c[2] for c in every3.calls)
    assert [(c[0], c[1], c[2]) for c in epochly.calls] == [(1, 10, True), (2, 20, True)]
    assert trainer.epoch == 2 and trainer.iteration == 20


def test_max_iterations_stops_mid_epoch(tmp_path):
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=5, max_iterations=13, out=tmp_path)
    trainer.run()
    assert (trainer.epoch, trainer.iteration) == (1, 13)


def test_extensions_run_by_priority_then_in_order_added(tmp_path):
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_iterations=1, out=tmp_path)
    order = []
    trainer.extend(lambda tr: order.append("reader"), priority=100)
    trainer.extend(lambda tr: order.append("writer"), priority=300)
    trainer.extend(lambda tr: order.append("reader2"), priority=100)
    trainer.run()
    assert order == ["writer", "reader", "reader2"]


def test_log_report_averages_each_interval_and_writes_json_lines(tmp_path):
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=2, out=tmp_path)
    trainer.metrics = {"accuracy": F.accuracy}
    seen = trainer.extend(Recorder())
    log = trainer.extend(LogReport())
    trainer.run()
    losses = [c[3]["loss"] for c in seen.calls if not c[2]]
    assert len(log.log) == 2
    assert log.log[0]["loss"] == pytest.approx(np.mean(losses[:10]), rel=1e-12)
    assert log.log[1]["loss"] == pytest.approx(np.mean(losses[10:]), rel=1e-12)
    assert log.log[1]["lr"] == 1.0 and 0 <= log.log[1]["accuracy"] <= 1
    assert [(e["epoch"], e["iteration"]) for e in log.log] == [(1, 10), (2, 20)]
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == log.log


def test_log_report_csv_and_a_column_that_appears_later(tmp_path):
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=2, out=tmp_path)
    log = trainer.extend(LogReport(trigger=(5, "iteration"), filename="log.csv"))
    late = {"n": 0}

    def writer(tr):  # a key observed from the second epoch on
        if tr.epoch >= 1:
            tr.observation["late"] = late["n"] = late["n"] + 1

    trainer.extend(writer, priority=300)
    trainer.run()
    rows = list(csv.DictReader((tmp_path / "log.csv").open()))
    assert len(rows) == 4 == len(log.log)
    assert rows[0]["late"] == "" and float(rows[3]["late"]) == np.mean(range(6, 11))
    assert float(rows[2]["loss"]) == pytest.approx(log.log[2]["loss"])


def test_log_report_refuses_an_unknown_format():
    with pytest.raises(ValueError, match=r"LogReport: filename must end in .jsonl, .json or .csv"):
        LogReport(filename="log.txt")


def test_evaluator_averages_over_examples_in_test_mode(tmp_path):
    model, optimizer, loader = _setup()
    val = Spiral(train=False)
    trainer = Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path)
    modes = []
    dropout_model = lambda x: (modes.append(Config.train), F.dropout(model(x)))[1]  # noqa: E731
    ev = Evaluator(DataLoader(val, 70, shuffle=False), model=dropout_model)
    ev.metrics = {"accuracy": F.accuracy}
    trainer.extend(ev)
    seen = trainer.extend(Recorder(trigger=(1, "epoch")))
    trainer.run()
    # the whole validation set at once, by hand (70 does not divide 300: 5 batches)
    y = model(val.data)
    want_loss = float(F.softmax_cross_entropy(y, val.label).data)
    want_acc = float(np.mean(np.argmax(y.data, axis=1) == val.label))
    obs = seen.calls[0][3]
    assert obs["val/loss"] == pytest.approx(want_loss, rel=1e-6)
    assert obs["val/accuracy"] == pytest.approx(want_acc, rel=1e-6)
    assert modes == [False] * 5


class DropNet(Model):
    """A Dropout layer between two Linears; ``frozen`` keeps the dropout off in train()."""

    def __init__(self, frozen=False):
        super().__init__()
        self.l0, self.drop, self.l1, self.frozen = L.Linear(16), L.Dropout(0.3), L.Linear(3), frozen

    def forward(self, x):
        return self.l1(self.drop(F.relu(self.l0(x))))

    def train(self, mode=True):
        super().train(mode)
        if self.frozen:
            self.drop.eval()
        return self


def _dropout_run(epochs, tmp_path=None, before=None, extension=None, frozen=False):
    """Params after ``epochs`` of the Trainer (or, with no ``tmp_path``, the book's loop,
    whose dropout is on unless ``frozen``); ``before(model)`` runs first; ``extension`` is
    ``(extension, trigger)``."""
    np.random.seed(0)
    model = DropNet(frozen)
    optimizer = SGD(0.5).setup(model)
    loader = DataLoader(Spiral(train=True), 30)
    if before is not None:
        before(model)
    if tmp_path is None:
        for _ in range(epochs):
            for x, t in loader:
                loss = F.softmax_cross_entropy(model(x), t)
                model.cleargrads()
                loss.backward()
                optimizer.update()
    else:
        trainer = Trainer(model, optimizer, loader, max_epochs=epochs, out=tmp_path)
        if extension is not None:
            trainer.extend(extension[0], trigger=extension[1])
        trainer.run()
    return [p.data.copy() for p in model.params()], model


def _same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def test_a_model_left_in_eval_mode_is_trained_in_train_mode(tmp_path):
    want, _ = _dropout_run(2)
    no_dropout, _ = _dropout_run(2, before=lambda m: m.eval())
    assert not _same(want, no_dropout)  # dropout changes the weights: the test can tell
    got, model = _dropout_run(2, tmp_path, before=lambda m: m.eval())
    assert _same(got, want)
    assert model.training and model.drop.training  # left in train mode, as PyTorch's loops


def test_an_extension_that_leaves_eval_mode_on_does_not_turn_dropout_off(tmp_path):
    def look(trainer):  # a user's check at each epoch end that forgets model.train()
        trainer.model.eval()

    want, _ = _dropout_run(3)
    got, _ = _dropout_run(3, tmp_path, extension=(look, (1, "epoch")))
    assert _same(got, want)


def test_training_goes_on_in_train_mode_after_an_evaluator(tmp_path):
    modes = []

    def seen(trainer):
        modes.append((trainer.model.training, Config.train))

    val = DataLoader(Spiral(train=False), 100, shuffle=False)
    want, _ = _dropout_run(2)
    got, _ = _dropout_run(2, tmp_path, extension=(Evaluator(val), (4, "iteration")))
    assert _same(got, want)
    _dropout_run(1, tmp_path, extension=(seen, (5, "iteration")))
    assert modes == [(True, True), (True, True)]


def test_a_config_train_left_false_does_not_turn_dropout_off(tmp_path):
    want, _ = _dropout_run(2)
    Config.train = False  # the book's global switch, left off after an evaluation
    try:
        got, _ = _dropout_run(2, tmp_path)
        assert Config.train is False  # the trainer changes no setting outside its loop
    finally:
        Config.train = True
    assert _same(got, want)


def test_a_models_train_override_keeps_its_frozen_part_in_eval_mode(tmp_path):
    want, _ = _dropout_run(2, frozen=True, before=lambda m: m.train())
    got, model = _dropout_run(2, tmp_path, frozen=True)
    assert _same(got, want)
    assert model.training and not model.drop.training


def test_step_scheduler_sets_the_schedules_lr(tmp_path):
    model, optimizer, loader = _setup(lr=0.5)
    trainer = Trainer(model, optimizer, loader, max_epochs=5, out=tmp_path)
    trainer.extend(StepScheduler(schedulers.StepLR(optimizer, step_size=2, gamma=0.1)))
    log = trainer.extend(LogReport(filename=None))
    trainer.run()
    # the lr used during epoch e (1-based) is 0.5 * 0.1 ** ((e - 1) // 2)
    assert [e["lr"] for e in log.log] == pytest.approx(
        [0.5 * 0.1 ** ((e - 1) // 2) for e in range(1, 6)]
    )


def test_reduce_on_plateau_needs_a_monitor_it_can_find(tmp_path):
    model, optimizer, loader = _setup()
    plateau = schedulers.ReduceLROnPlateau(optimizer, patience=0)
    with pytest.raises(ValueError, match="ReduceLROnPlateau steps on a metric; pass monitor="):
        StepScheduler(plateau)
    with pytest.raises(ValueError, match="monitor='val/loss' is only for ReduceLROnPlateau"):
        StepScheduler(schedulers.StepLR(optimizer, 1), monitor="val/loss")
    trainer = Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path)
    trainer.extend(StepScheduler(plateau, monitor="val/loss"))
    with pytest.raises(
        KeyError,
        match=r"StepScheduler: 'val/loss' was not observed at the end of epoch 1; observed: "
        r"\[\]\. No extension added it there; 'val/\.\.\.' values come from an Evaluator "
        r"\(add trainer.extend\(Evaluator\(val_loader\)\)",
    ):
        trainer.run()


def test_reduce_on_plateau_lowers_the_lr_when_the_metric_stalls(tmp_path):
    model, optimizer, loader = _setup(lr=0.5)
    trainer = Trainer(model, optimizer, loader, max_epochs=4, out=tmp_path)
    trainer.extend(
        lambda tr: tr.observation.update({"score": 1.0}), trigger=(1, "epoch"), priority=300
    )
    trainer.extend(
        StepScheduler(
            schedulers.ReduceLROnPlateau(optimizer, factor=0.5, patience=0), monitor="score"
        )
    )
    trainer.run()
    # epoch 1 sets the best; epochs 2, 3, 4 do not improve: three halvings
    assert optimizer.lr == pytest.approx(0.5 * 0.5**3)


def test_early_stopping_stops_after_patience_checks(tmp_path):
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=20, out=tmp_path)
    values = iter([5.0, 4.0, 4.5, 3.9, 4.0, 4.0, 3.95, 3.0])
    trainer.extend(
        lambda tr: tr.observation.update({"val/loss": next(values)}),
        trigger=(1, "epoch"),
        priority=300,
    )
    trainer.extend(EarlyStopping(patience=2, min_delta=0.01))
    trainer.run()
    # best 3.9 at epoch 4; 4.0, 4.0 and 3.95 (not below 3.89) are three bad checks > 2
    assert trainer.epoch == 7
    assert trainer.stop_reason == "EarlyStopping: val/loss did not improve on 3.9 for 3 checks"


def test_print_report_prints_each_entry_once(tmp_path):
    import io

    out = io.StringIO()
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=2, out=tmp_path)
    log = trainer.extend(LogReport(filename=None))
    trainer.extend(PrintReport(["epoch", "loss"], file=out))
    trainer.run()
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["epoch", "loss"]
    assert [line.split() for line in lines[1:]] == [
        [str(e["epoch"]), f"{e['loss']:.6g}"] for e in log.log
    ]


def test_plot_report_writes_a_png_without_changing_matplotlibs_backend(tmp_path):
    matplotlib = pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    backend = matplotlib.get_backend()
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=2, out=tmp_path)
    trainer.extend(LogReport(filename=None))
    trainer.extend(PlotReport(["loss"], filename="loss.png"))
    trainer.run()
    data = (tmp_path / "loss.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000
    assert matplotlib.get_backend() == backend


def test_a_report_that_cannot_replace_its_file_leaves_no_temporary(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    (tmp_path / "loss.png").mkdir()  # a folder where the picture should go
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path)
    trainer.extend(LogReport(filename=None))
    trainer.extend(PlotReport(["loss"], filename="loss.png"))
    with pytest.raises(IsADirectoryError):
        trainer.run()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["loss.png"]
    assert list((tmp_path / "loss.png").iterdir()) == []


def test_plot_report_needs_a_log_report(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path)
    trainer.extend(PlotReport(["loss"]))
    with pytest.raises(KeyError, match=r"add one first: trainer.extend\(LogReport\(\)\)"):
        trainer.run()


def test_progress_bar_is_off_without_a_terminal_and_counts_when_forced(tmp_path, capsys):
    assert not sys.stdout.isatty()  # pytest captures stdout
    assert ProgressBar().enabled is False
    pytest.importorskip("tqdm", reason="tqdm is not installed")
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=2, out=tmp_path)
    bar = trainer.extend(ProgressBar(enabled=True, update_interval=5))
    counts = []
    trainer.extend(lambda tr: counts.append(bar.bar.n), trigger=(1, "epoch"), priority=50)
    trainer.run()
    assert counts == [10, 20] and bar.bar is None  # closed at the end
    assert "20/20" in capsys.readouterr().err


def test_constructor_and_trigger_errors_name_what_to_do():
    model, optimizer, loader = _setup()
    with pytest.raises(ValueError, match="give max_epochs=... or max_iterations=..."):
        Trainer(model, optimizer, loader)
    with pytest.raises(ValueError, match=r"max_epochs must be a positive int \(>= 1\), got 0"):
        Trainer(model, optimizer, loader, max_epochs=0)
    with pytest.raises(TypeError, match=r"max_iterations must be a positive int, got 2.0"):
        Trainer(model, optimizer, loader, max_iterations=2.0)
    assert Trainer(model, optimizer, loader, max_epochs=np.int64(2)).max_epochs == 2
    with pytest.raises(ValueError, match="unit must be 'iteration' or 'epoch', got 'epochs'"):
        IntervalTrigger(1, "epochs")
    with pytest.raises(
        ValueError, match=r"a trigger: period must be a positive int \(>= 1\), got 0"
    ):
        IntervalTrigger(0, "epoch")


@pytest.mark.parametrize("name", ["static", "check_loss", "check_grads"])
def test_the_switches_are_bools(name):
    """check_loss="no" meant True and check_grads=None False; numpy's bools were refused
    for static ("static must be True or False, got np.True_")."""
    model, optimizer, loader = _setup()
    for bad in (1, "no", None):
        with pytest.raises(TypeError) as info:
            Trainer(model, optimizer, loader, max_epochs=1, **{name: bad})
        assert str(info.value) == (
            f"zerograd_nn.training.Trainer: {name} must be True or False, got {bad!r}"
        )
    trainer = Trainer(model, optimizer, loader, max_epochs=1, **{name: np.False_})
    assert getattr(trainer, name) is False
    if name != "check_grads":  # static=True with check_grads=True is refused
        trainer = Trainer(model, optimizer, loader, max_epochs=1, **{name: np.True_})
        assert getattr(trainer, name) is True


def test_a_loader_of_something_else_than_pairs_is_refused(tmp_path):
    model, optimizer, _ = _setup()
    xs = [np.zeros((2, 2), np.float32)] * 3
    before = [p.data.copy() for p in model.params() if p.data is not None]
    trainer = Trainer(model, optimizer, xs, max_epochs=1, out=tmp_path)
    with pytest.raises(TypeError, match=r"the loader must yield \(x, t\) pairs, got ndarray"):
        trainer.run()
    assert trainer.iteration == 0
    after = [p.data for p in model.params() if p.data is not None]
    assert all(np.array_equal(a, b) for a, b in zip(before, after))
    with pytest.raises(ValueError, match=r"the training loader has no batch \(len 0\)"):
        Trainer(model, optimizer, [], max_epochs=1, out=tmp_path).run()


def test_extension_names_are_unique_and_looked_up(tmp_path):
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path)
    a, b = (
        trainer.extend(LogReport(filename="a.jsonl")),
        trainer.extend(LogReport(filename="b.csv")),
    )
    assert trainer.get_extension("LogReport") is a and trainer.get_extension("LogReport_1") is b
    with pytest.raises(KeyError, match=r"no extension named 'Log'; the trainer has \['LogReport'"):
        trainer.get_extension("Log")

    def note_loss(tr):
        pass

    trainer.extend(note_loss)
    assert trainer.get_extension("note_loss") is note_loss


def test_adam_lr_is_observed():
    np.random.seed(0)
    model = MLP((10, 3))
    trainer = Trainer(
        model, Adam(alpha=0.003).setup(model), DataLoader(Spiral(), 100), max_iterations=2
    )
    trainer.extend(LogReport(trigger=(2, "iteration"), filename=None))
    trainer.run()
    assert trainer.get_extension("LogReport").log[0]["lr"] == pytest.approx(0.003)
    assert math.isfinite(trainer.observation["loss"])


# -- snapshots and resume ------------------------------------------------------------------


class SeededLoader:
    """A loader to the agreed interface: own RNG, position and order; after
    load_state_dict the next ``for`` goes on from the saved position."""

    def __init__(self, dataset, batch_size, seed):
        self.dataset, self.batch_size = dataset, batch_size
        self.rng = np.random.default_rng(seed)
        self.position, self.order, self._go_on = 0, None, False

    def __len__(self):
        return -(-len(self.dataset) // self.batch_size)

    def __iter__(self):
        if not self._go_on:
            self.order, self.position = self.rng.permutation(len(self.dataset)), 0
        self._go_on = False
        while self.position < len(self):
            idx = self.order[
                self.position * self.batch_size : (self.position + 1) * self.batch_size
            ]
            self.position += 1
            yield self.dataset.data[idx], self.dataset.label[idx]

    def state_dict(self):
        return {"position": self.position, "order": self.order, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, d):
        self.rng.bit_generator.state = d["rng"]
        self.position, self.order, self._go_on = int(d["position"]), np.asarray(d["order"]), True


class DropoutNet(MLP):
    """Dropout draws from numpy's global random state: resume must restore it."""

    def forward(self, x):
        return self.l1(F.dropout(F.relu(self.l0(x)), 0.3))


def _seeded_data_loader(dataset, batch_size, seed):
    return DataLoader(dataset, batch_size, seed=seed)


# zerograd's DataLoader, once it has state_dict() and seed= (trust-nn's branch builds them)
REAL_LOADER = pytest.param(
    _seeded_data_loader,
    marks=pytest.mark.skipif(
        not hasattr(DataLoader, "state_dict"),
        reason="DataLoader.state_dict()/seed= are not on this branch yet (trust-nn builds them)",
    ),
    id="DataLoader",
)


def _resumable(out, seed, snapshot_trigger, make_loader=SeededLoader, static=False):
    np.random.seed(seed)
    model = DropoutNet((16, 3))
    optimizer = Adam(alpha=0.01).setup(model)
    loader = make_loader(Spiral(train=True), 32, 7)  # 10 batches per epoch
    trainer = Trainer(model, optimizer, loader, max_iterations=37, out=out, static=static)
    trainer.extend(
        StepScheduler(schedulers.ExponentialLR(optimizer, 0.97), trigger=(1, "iteration"))
    )
    trainer.extend(LogReport(trigger=(4, "iteration"), filename=None))
    trainer.extend(EarlyStopping(monitor="loss", patience=1000, trigger=(3, "iteration")))
    trainer.extend(Snapshot(trigger=snapshot_trigger))
    return trainer


@pytest.mark.parametrize(
    "make_loader", [SeededLoader, REAL_LOADER], ids=["interface", "DataLoader"]
)
@pytest.mark.parametrize(
    ("trigger", "name"),
    [
        ((13, "iteration"), "snapshot_iter_00000013.npz"),
        ((10, "iteration"), "snapshot_iter_00000020.npz"),  # the last batch of epoch 2
        ((1, "epoch"), "snapshot_iter_00000020.npz"),
    ],
    ids=["mid-epoch", "last-batch", "epoch-point"],
)
def test_resume_continues_bit_identically(tmp_path, trigger, name, make_loader):
    straight = _resumable(tmp_path / "a", 0, trigger, make_loader).run()
    resumed = _resumable(tmp_path / "b", 1, trigger, make_loader)  # other weights and dropout
    resumed.resume(tmp_path / "a" / name).run()
    assert (resumed.epoch, resumed.iteration) == (straight.epoch, straight.iteration) == (3, 37)
    for (key, p), q in zip(straight.model.named_params().items(), resumed.model.params()):
        np.testing.assert_array_equal(p.data, q.data, err_msg=key)
    assert resumed.optimizer.lr == straight.optimizer.lr

    def log(t):
        return [
            {k: v for k, v in e.items() if k != "elapsed_time"}
            for e in t.get_extension("LogReport").log
        ]

    assert log(resumed) == log(straight) and len(log(straight)) == 9
    early = resumed.get_extension("EarlyStopping")
    assert early.best == straight.get_extension("EarlyStopping").best < math.inf


def _log(trainer):
    return [
        {k: v for k, v in e.items() if k != "elapsed_time"}
        for e in trainer.get_extension("LogReport").log
    ]


def test_a_static_trainer_trains_bit_for_bit_like_the_eager_one(tmp_path):
    """Dropout, Adam, an lr schedule per iteration, a short last batch (300 = 9 x 32 + 12)."""
    eager = _resumable(tmp_path / "a", 0, (100, "iteration")).run()
    static = _resumable(tmp_path / "b", 0, (100, "iteration"), static=True).run()
    for (key, p), q in zip(eager.model.named_params().items(), static.model.params()):
        np.testing.assert_array_equal(p.data, q.data, err_msg=key)
        np.testing.assert_array_equal(p.grad.data, q.grad.data, err_msg=key)
    assert _log(static) == _log(eager) and len(_log(eager)) == 9
    # the full batches replay from their fourth call; the short last one from its fourth
    assert static.step.counts == {"eager": 2, "traced": 4, "replayed": 31}
    assert not hasattr(eager.step, "counts")


def test_a_static_trainer_resumes_an_eager_snapshot_bit_for_bit(tmp_path):
    straight = _resumable(tmp_path / "a", 0, (13, "iteration")).run()
    resumed = _resumable(tmp_path / "b", 1, (13, "iteration"), static=True)
    resumed.resume(tmp_path / "a" / "snapshot_iter_00000013.npz").run()
    for (key, p), q in zip(straight.model.named_params().items(), resumed.model.params()):
        np.testing.assert_array_equal(p.data, q.data, err_msg=key)
    assert _log(resumed) == _log(straight)
    assert resumed.step.counts["replayed"] > 0


def test_snapshot_keeps_the_newest_files(tmp_path):
    trainer = _resumable(tmp_path, 0, (5, "iteration"))
    trainer.get_extension("Snapshot").n_retains = 2
    trainer.run()
    assert sorted(p.name for p in tmp_path.glob("*.npz")) == [
        "snapshot_iter_00000030.npz",
        "snapshot_iter_00000035.npz",
    ]


def test_a_bad_snapshot_changes_nothing(tmp_path):
    from zerograd_nn.weights import WeightFileError

    trainer = _resumable(tmp_path, 0, (1, "epoch"))
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a checkpoint")
    before = {
        k: p.data.copy() for k, p in trainer.model.named_params().items() if p.data is not None
    }
    with pytest.raises(WeightFileError, match=r"load_checkpoint: .*bad.npz' is not a readable"):
        trainer.resume(bad)
    assert (trainer.epoch, trainer.iteration, trainer.elapsed_time) == (0, 0, 0.0)
    after = {k: p.data for k, p in trainer.model.named_params().items() if p.data is not None}
    assert before.keys() == after.keys()
    assert all(np.array_equal(before[k], after[k]) for k in before)


def test_a_snapshot_of_other_extensions_changes_nothing(tmp_path):
    _resumable(tmp_path / "a", 0, (1, "epoch")).run()
    np.random.seed(1)
    model = DropoutNet((16, 3))
    model(np.zeros((1, 2), np.float32))
    optimizer = Adam(alpha=0.01).setup(model)
    trainer = Trainer(model, optimizer, SeededLoader(Spiral(), 32, 7), max_epochs=1, out=tmp_path)
    sched = schedulers.ExponentialLR(optimizer, 0.97)
    trainer.extend(StepScheduler(sched, trigger=(1, "iteration")))
    log = trainer.extend(LogReport(trigger=(4, "iteration"), filename=None))
    trainer.extend(LogReport(filename=None), name="EarlyStopping")  # not what was saved
    weights = {k: p.data.copy() for k, p in model.named_params().items()}
    rng = np.random.get_state()[1].copy()
    with (
        pytest.warns(UserWarning, match="'Snapshot' that this trainer does not have"),
        pytest.raises(ValueError, match=r"state of the extension 'EarlyStopping' does not fit"),
    ):
        trainer.resume(tmp_path / "a" / "snapshot_iter_00000030.npz")
    assert all(np.array_equal(p.data, weights[k]) for k, p in model.named_params().items())
    assert np.array_equal(np.random.get_state()[1], rng)
    assert sched.last_epoch == 0 and log.log == [] and optimizer.lr == 0.01
    assert (trainer.epoch, trainer.iteration) == (0, 0)


@pytest.mark.parametrize(
    "make_loader", [SeededLoader, REAL_LOADER], ids=["interface", "DataLoader"]
)
def test_run_again_with_a_higher_limit_finishes_the_interrupted_epoch(tmp_path, make_loader):
    straight = _resumable(tmp_path / "a", 0, (1, "epoch"), make_loader)
    straight.max_iterations = 25
    straight.run()
    split = _resumable(tmp_path / "b", 0, (1, "epoch"), make_loader)
    split.max_iterations = 13
    split.run()
    assert (split.epoch, split.iteration) == (1, 13)
    split.max_iterations = 25
    split.run()
    assert (split.epoch, split.iteration) == (straight.epoch, straight.iteration) == (2, 25)
    for (key, p), q in zip(straight.model.named_params().items(), split.model.params()):
        np.testing.assert_array_equal(p.data, q.data, err_msg=key)


def test_snapshot_names_sort_in_the_order_they_were_written(tmp_path):
    _resumable(tmp_path, 0, (5, "iteration")).run()
    names = sorted(p.name for p in tmp_path.glob("*.npz"))
    assert names == [f"snapshot_iter_{i:08d}.npz" for i in range(5, 36, 5)]


def test_resume_from_a_folder_takes_its_newest_snapshot_whatever_the_names(tmp_path):
    from zerograd_nn.checkpoint import latest_checkpoint, load_checkpoint
    from zerograd_nn.weights import WeightFileError

    straight = _resumable(tmp_path / "a", 0, (5, "iteration")).run()
    folder = tmp_path / "a"
    # names of an older zerograd, and one that lies: the choice goes by what a file holds
    (folder / "snapshot_iter_00000035.npz").rename(folder / "snapshot_iter_35.npz")
    (folder / "snapshot_iter_00000005.npz").rename(folder / "snapshot_iter_675.npz")
    (folder / "notes.npz").write_bytes(b"not an archive")
    straight.model.save_weights(folder / "weights.npz")
    with pytest.warns(UserWarning, match=r"passed over .*notes\.npz', which cannot be read"):
        assert latest_checkpoint(folder) == str(folder / "snapshot_iter_35.npz")
    (folder / "notes.npz").unlink()  # the weight file is passed over in silence

    longer = _resumable(tmp_path / "s", 0, (5, "iteration"))
    longer.max_iterations = 45
    longer.run()
    resumed = _resumable(tmp_path / "b", 1, (5, "iteration"))
    resumed.max_iterations = 45
    resumed.resume(folder).run()
    assert resumed.resumed_from == str(folder / "snapshot_iter_35.npz")
    assert resumed.iteration == longer.iteration == 45
    for (key, p), q in zip(longer.model.named_params().items(), resumed.model.params()):
        np.testing.assert_array_equal(p.data, q.data, err_msg=key)

    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "w.npz").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match=r"no checkpoint in .*empty' \(1 .npz files"):
        _resumable(tmp_path / "c", 1, (5, "iteration")).resume(tmp_path / "empty")
    with pytest.raises(WeightFileError, match=r"is a folder; give the checkpoint in it \(latest"):
        load_checkpoint(folder, model=straight.model)
    with pytest.raises(WeightFileError, match=r"load_weights: .* is a folder; give the weight"):
        straight.model.load_weights(folder)


# -- faults: nan and inf, a raising extension, Ctrl-C, an unwritable folder, no terminal ---


def _poisoned_setup(bad_value, where=65):
    """The spiral in order (10 batches of 30) with one bad value in example ``where``."""
    np.random.seed(0)
    data = Spiral(train=True)
    data.data = data.data.copy()
    data.data[where, 0] = bad_value  # batch 3 (examples 60-89): iteration 3
    model = MLP((10, 3))
    return model, SGD(0.5).setup(model), DataLoader(data, 30, shuffle=False)


def _log_zero_at_third_call():
    """softmax cross entropy, except that the third call gives log(0) = -inf."""
    calls = []

    def loss_fn(y, t):
        calls.append(1)
        loss = F.softmax_cross_entropy(y, t)
        if len(calls) != 3:
            return loss
        with np.errstate(divide="ignore"):
            return F.log(loss * 0)

    return loss_fn


@pytest.mark.parametrize("bad", ["nan in the data", "-inf loss"])
def test_a_nonfinite_loss_stops_before_its_update_naming_the_iteration(tmp_path, bad):
    from zerograd_nn.finite import NonFiniteError, nonfinite_grads

    def trainer_for(max_iterations, **kw):
        model, optimizer, loader = _poisoned_setup(np.nan if bad == "nan in the data" else 0.5)
        loss_fn = _log_zero_at_third_call() if bad == "-inf loss" else F.softmax_cross_entropy
        return Trainer(
            model, optimizer, loader, loss_fn, max_iterations=max_iterations, out=tmp_path, **kw
        )

    trainer = trainer_for(10)
    value = "nan" if bad == "nan in the data" else "-inf"
    with (
        np.errstate(divide="ignore", invalid="ignore"),  # backward of log(0)
        pytest.raises(
            NonFiniteError,
            match=rf"the loss of iteration 3 \(batch 3 of epoch 1\) "
            rf"is {value}; the update was not applied, so the weights are those "
            rf"of iteration 2",
        ),
    ):
        trainer.run()
    assert trainer.iteration == 2
    # checked after backward (a GPU queues backward before the loss is read): the
    # gradients are the refused step's, nan or inf in all four parameters
    assert len(nonfinite_grads(trainer.model)) == 4
    two = trainer_for(2).run()
    for (key, p), q in zip(two.model.named_params().items(), trainer.model.params()):
        np.testing.assert_array_equal(p.data, q.data, err_msg=key)
        assert np.isfinite(q.data).all()

    with np.errstate(all="ignore"):  # the check off: the weights are lost
        off = trainer_for(10, check_loss=False).run()
    assert not all(np.isfinite(p.data).all() for p in off.model.params())


def test_a_static_trainer_checks_the_loss_inside_its_replay(tmp_path):
    """The nan comes at iteration 6, a replay: the check is part of it, the update is not
    applied, and the weights are those of an eager run of 5 iterations."""
    from zerograd_nn.finite import NonFiniteError, nonfinite_grads

    model, optimizer, loader = _poisoned_setup(np.nan, where=165)  # batch 6
    trainer = Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path, static=True)
    with pytest.raises(
        NonFiniteError,
        match=r"the loss of iteration 6 \(batch 6 of epoch 1\) is nan; the update was not "
        r"applied, so the weights are those of iteration 5",
    ):
        trainer.run()
    assert trainer.step.counts == {"eager": 1, "traced": 2, "replayed": 2}
    assert len(nonfinite_grads(model)) == 4  # the refused step's, as eager
    eager_model, eager_opt, eager_loader = _poisoned_setup(np.nan, where=165)
    Trainer(eager_model, eager_opt, eager_loader, max_iterations=5, out=tmp_path).run()
    for (key, p), q in zip(eager_model.named_params().items(), model.params()):
        np.testing.assert_array_equal(p.data, q.data, err_msg=key)
    with pytest.raises(ValueError, match=r"check_grads=True reads every gradient in Python"):
        Trainer(model, optimizer, loader, max_epochs=1, static=True, check_grads=True)


def test_inf_in_the_data_poisons_the_weights_one_step_before_the_loss_shows_it(tmp_path):
    """sigmoid(inf) is finite, so the loss of that step is too; its gradient is not."""
    from zerograd_nn.finite import NonFiniteError

    model, optimizer, loader = _poisoned_setup(np.inf)
    with np.errstate(all="ignore"), pytest.raises(NonFiniteError, match="loss of iteration 4"):
        Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path).run()
    assert not np.isfinite(model.l0.W.data).all()
    model, optimizer, loader = _poisoned_setup(np.inf)
    trainer = Trainer(model, optimizer, loader, max_epochs=1, check_grads=True, out=tmp_path)
    with (
        np.errstate(all="ignore"),
        pytest.raises(
            NonFiniteError, match=r"iteration 3 \(batch 3 of epoch 1\): the gradient of 'l0.W'"
        ),
    ):
        trainer.run()
    assert all(np.isfinite(p.data).all() for p in model.params())


class Poison(Function):
    """The identity forward; its backward gives nan gradients at chosen iterations."""

    def __init__(self, on):
        self.on = on

    def forward(self, x):
        return x

    def backward(self, gy):
        return gy * np.nan if self.on else gy


class PoisonedMLP(MLP):
    """An MLP whose first layer gets nan gradients at iteration ``at`` (the loss is fine)."""

    def __init__(self, at):
        super().__init__((10, 3))
        self.at, self.calls = at, 0

    def forward(self, x):
        self.calls += 1
        h = Poison(self.calls == self.at)(self.l0(x))
        return self.l1(F.sigmoid(h))


def test_check_grads_names_the_first_parameter_whose_gradient_is_not_finite(tmp_path):
    from zerograd_nn.finite import NonFiniteError, check_finite_grads, nonfinite_grads

    np.random.seed(0)
    model = PoisonedMLP(at=4)
    trainer = Trainer(
        model,
        SGD(0.5).setup(model),
        DataLoader(Spiral(), 30),
        max_epochs=1,
        check_grads=True,
        out=tmp_path,
    )
    with pytest.raises(
        NonFiniteError,
        match=r"Trainer, iteration 4 \(batch 4 of epoch 1\): "
        r"the gradient of 'l0.W' \(shape \(2, 10\)\) holds 20 nan or inf of 20 "
        r"values; it is the first of 2 such parameters",
    ):
        trainer.run()
    assert trainer.iteration == 3 and all(np.isfinite(p.data).all() for p in model.params())
    assert [(n, k) for n, k, _ in nonfinite_grads(model)] == [("l0.W", 20), ("l0.b", 10)]
    grads = {k: p.grad.data.copy() for k, p in model.named_params().items()}
    with pytest.raises(NonFiniteError, match=r"^the gradient of 'l0.W'"):
        check_finite_grads(model)  # the standalone check, for a hand-written loop
    assert all(
        np.array_equal(p.grad.data, grads[k], equal_nan=True)
        for k, p in model.named_params().items()
    )

    np.random.seed(0)  # without the check the loss is finite and the weights take the nan
    model = PoisonedMLP(at=4)
    with np.errstate(all="ignore"):
        Trainer(
            model, SGD(0.5).setup(model), DataLoader(Spiral(), 30), max_iterations=4, out=tmp_path
        ).run()
    assert np.isnan(model.l0.W.data).all()


def test_an_extension_that_raises_mid_epoch_leaves_a_run_that_goes_on_exactly(tmp_path):
    straight = _resumable(tmp_path / "a", 0, (1, "epoch")).run()

    broken = _resumable(tmp_path / "b", 0, (1, "epoch"))
    fired = []

    def flaky(tr):
        if tr.iteration == 13 and not fired:
            fired.append(tr.iteration)
            raise RuntimeError("the disk is full")

    broken.extend(flaky)
    with pytest.raises(RuntimeError, match="the disk is full") as info:
        broken.run()
    if sys.version_info >= (3, 11):  # add_note: the note says which extension, and when
        assert info.value.__notes__ == [
            "raised by the trainer's extension 'flaky' at iteration 13; that update was "
            "done, and run() again first runs the extensions of this point that had not run "
            "(this one included), then goes on with the next batch"
        ]
    assert (broken.epoch, broken.iteration) == (1, 13)
    broken.run()  # goes on with batch 4 of epoch 2, as if nothing had happened
    assert (broken.epoch, broken.iteration) == (straight.epoch, straight.iteration)
    for (key, p), q in zip(straight.model.named_params().items(), broken.model.params()):
        np.testing.assert_array_equal(p.data, q.data, err_msg=key)


def test_an_output_folder_that_cannot_be_written_stops_the_run_before_training(tmp_path):
    model, optimizer, loader = _setup()
    model(np.zeros((1, 2), np.float32))
    weights = {k: p.data.copy() for k, p in model.named_params().items()}
    (tmp_path / "taken").write_text("a file where the folder should be")
    trainer = Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path / "taken" / "run")
    trainer.extend(LogReport())
    trainer.extend(Snapshot())
    with pytest.raises(
        OSError,
        match=r"cannot write into the output folder .*taken/run' \(.*\), "
        r"which LogReport, Snapshot write into; pass out= .* Nothing was "
        r"trained",
    ):
        trainer.run()
    assert trainer.iteration == 0
    assert all(np.array_equal(p.data, weights[k]) for k, p in model.named_params().items())
    trainer.out = str(tmp_path / "fine")
    assert trainer.run().iteration == 10  # a LogReport without a file needs no folder
    log_only = Trainer(*_setup(), max_epochs=1, out=tmp_path / "taken" / "x")
    log_only.extend(LogReport(filename=None))
    assert log_only.run().iteration == 10


def test_no_standard_streams_no_progress_bar_and_no_crash(tmp_path, monkeypatch):
    model, optimizer, loader = _setup()
    monkeypatch.setattr(sys, "stdout", None)  # pythonw, a daemon: no console at all
    monkeypatch.setattr(sys, "stderr", None)
    trainer = Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path)
    auto = trainer.extend(ProgressBar())
    forced = trainer.extend(ProgressBar(enabled=True))
    trainer.extend(LogReport(filename=None))
    trainer.extend(PrintReport())
    trainer.run()
    assert trainer.iteration == 10 and not auto.enabled and forced.bar is None


def test_the_logged_lr_is_the_lr_as_set(tmp_path):
    np.random.seed(0)
    model = MLP((10, 3))
    trainer = Trainer(
        model,
        Adam(alpha=0.003).setup(model),
        DataLoader(Spiral(), 30),
        max_iterations=20,
        out=tmp_path,
    )
    log = trainer.extend(LogReport(trigger=(10, "iteration")))
    trainer.run()
    assert [e["lr"] for e in log.log] == [0.003, 0.003]
    assert '"lr": 0.003}' in (tmp_path / "log.jsonl").read_text()


CTRL_C_SCRIPT = """
import argparse, sys
import numpy as np
from zerograd_nn import DataLoader
from zerograd_nn.datasets import Spiral
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import SGD
from zerograd_nn.training import Snapshot, Trainer

parser = argparse.ArgumentParser()
parser.add_argument("--out")
parser.add_argument("--resume")
parser.add_argument("--iterations", type=int, default=10**9)
args = parser.parse_args()
np.random.seed(0)
model = MLP((10, 3))
trainer = Trainer(model, SGD(0.1).setup(model), DataLoader(Spiral(), 30, seed=0),
                  max_iterations=args.iterations, out=args.out)
trainer.extend(Snapshot(trigger=(5, "iteration")))
trainer.extend(lambda tr: tr.iteration == 6 and print("snapshot written", flush=True))
if args.resume:
    trainer.resume(args.resume)
trainer.run()
print("done at", trainer.iteration, flush=True)
"""


def test_ctrl_c_in_a_script_says_how_to_resume_and_exits_130(tmp_path):
    import shlex
    import signal
    import subprocess

    script = tmp_path / "train.py"
    script.write_text(CTRL_C_SCRIPT)
    out = tmp_path / "out"
    cmd = [sys.executable, str(script), "--out", str(out)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # Ctrl-C as a terminal delivers it: a runner started in the background without job
        # control (``cmd &`` in a script) ignores SIGINT, and Python then never raises
        # KeyboardInterrupt in a child that inherits that
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        assert proc.stdout.readline() == "snapshot written\n"  # it is training now
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "Trainer: interrupted (Ctrl-C) after iteration" in stderr, stderr
    last = stderr.split("The last snapshot is ")[1].split(". To go on from it:")[0]
    assert os.path.dirname(last) == str(out) and os.path.isfile(last)
    resume_line = stderr.strip().splitlines()[-1].strip()
    assert shlex.split(resume_line) == [*cmd, "--resume", last]
    again = subprocess.run(
        [*shlex.split(resume_line), "--iterations", "40"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 0 and again.stdout.endswith("done at 40\n"), again.stderr


def test_resume_from_a_snapshot_of_another_model_changes_nothing(tmp_path):
    _resumable(tmp_path / "a", 0, (13, "iteration")).run()
    np.random.seed(1)
    model = DropoutNet((17, 3))  # 17 hidden units, not 16
    model(np.zeros((1, 2), np.float32))
    optimizer = Adam(alpha=0.01).setup(model)
    loader = DataLoader(Spiral(train=True), 32, seed=7)
    next(loader)
    trainer = Trainer(model, optimizer, loader, max_iterations=37, out=tmp_path / "b")
    sched = schedulers.ExponentialLR(optimizer, 0.97)
    trainer.extend(StepScheduler(sched, trigger=(1, "iteration")))
    log = trainer.extend(LogReport(trigger=(4, "iteration"), filename=None))
    weights = {k: v.copy() for k, v in model.state_dict().items()}
    opt_state, position = optimizer.state_dict(), loader.state_dict()
    rng = np.random.get_state()[1].copy()
    with pytest.raises(ValueError, match=r"does not fit DropoutNet \(l0.W: model \(2, 17\), "):
        trainer.resume(tmp_path / "a")
    assert all(np.array_equal(v, weights[k]) for k, v in model.state_dict().items())
    assert optimizer.state_dict() == opt_state and sched.last_epoch == 0 and log.log == []
    after = loader.state_dict()
    assert all(np.array_equal(after[k], position[k]) for k in position)
    assert np.array_equal(np.random.get_state()[1], rng)
    assert (trainer.epoch, trainer.iteration, trainer.resumed_from) == (0, 0, None)


def test_log_report_reads_the_sums_of_older_snapshots():
    log = LogReport(filename=None)
    log.load_state_dict(
        {"log": [], "sums": {"loss": 3.0, "lr": 0.03}, "counts": {"loss": 3, "lr": 10}}
    )
    assert log.state_dict()["means"] == {"loss": 1.0, "lr": 0.003}


def test_the_gradient_check_on_the_backend_under_test(backend):
    from zerograd import Variable
    from zerograd_nn import layers as L
    from zerograd_nn.finite import NonFiniteError, check_finite_grads, nonfinite_grads

    np.random.seed(0)
    layer = L.Linear(3, in_size=2).to(backend)
    F.sum(layer(backend.from_numpy(np.ones((4, 2), np.float32)))).backward()
    check_finite_grads(layer)
    grad = np.zeros((2, 3), np.float32)
    grad[1, 2], grad[0, 0] = np.inf, np.nan
    layer.W.grad = Variable(backend.from_numpy(grad))
    assert nonfinite_grads(layer) == [("W", 2, 6)]
    with pytest.raises(NonFiniteError, match=r"the gradient of 'W' \(shape \(2, 3\)\) holds 2"):
        check_finite_grads(layer)


# -- issue 36: the Trainer under faults ----------------------------------------------------


def _weights(model):
    return {k: p.data.copy() for k, p in model.named_params().items() if p.data is not None}


def _same_weights(model, before):
    now = _weights(model)
    return now.keys() == before.keys() and all(np.array_equal(now[k], before[k]) for k in now)


def test_an_optimizer_set_up_on_another_model_is_refused_before_any_update(tmp_path):
    """It ran 20 iterations, training the other model."""
    model, _, loader = _setup()
    twin = MLP((10, 3))
    twin(np.zeros((1, 2), np.float32))
    model(np.zeros((1, 2), np.float32))
    optimizer = SGD(1.0).setup(twin)
    before, twin_before = _weights(model), _weights(twin)
    trainer = Trainer(model, optimizer, loader, max_epochs=2, out=tmp_path)
    trainer.extend(Snapshot())
    words = (
        r"the optimizer updates 4 parameters that are not the model's \(\['l0.W', 'l0.b', "
        r"'l1.W', 'l1.b'\]\): it was set up on another model \(another instance\), which "
        r"training would change instead of this one. Set it up on the model given to the "
        r"Trainer: optimizer.setup\(model\). Nothing was "
    )
    with pytest.raises(ValueError, match=rf"^zerograd_nn.training.Trainer.run: {words}trained\.$"):
        trainer.run()
    assert trainer.iteration == 0 and list(tmp_path.iterdir()) == []
    assert _same_weights(model, before) and _same_weights(twin, twin_before)
    with pytest.raises(ValueError, match=rf"^zerograd_nn.training.Trainer.resume: {words}changed"):
        trainer.resume(tmp_path / "nothing.npz")
    head = SGD(1.0).setup(model.l1)  # a part of the model: fine
    Trainer(model, head, loader, max_iterations=2, out=tmp_path).run()
    assert np.array_equal(model.l0.W.data, before["l0.W"])
    assert not np.array_equal(model.l1.W.data, before["l1.W"])


def test_an_optimizer_never_set_up_is_refused_before_any_update(tmp_path):
    model, _, loader = _setup()
    trainer = Trainer(model, SGD(1.0), loader, max_epochs=1, out=tmp_path)
    with pytest.raises(
        RuntimeError,
        match=r"SGD: the optimizer has not been set up "
        r"\(no target\); call ",
    ):
        trainer.run()
    assert trainer.iteration == 0


@pytest.mark.parametrize(
    ("n", "err", "words"),
    [
        (0, ValueError, r"n_retains must be a positive int \(>= 1\), got 0; n keeps the newest"),
        (-1, ValueError, r"n_retains must be a positive int \(>= 1\), got -1; .*None keeps every"),
        (2.0, TypeError, r"n_retains must be a positive int, got 2.0 \(float\)"),
    ],
)
def test_snapshot_n_retains_below_one_is_refused_when_made_or_set(n, err, words):
    """0 kept every file; -1 failed after an epoch with IndexError: pop from empty list."""
    with pytest.raises(err, match=r"^zerograd_nn.training.Snapshot: " + words):
        Snapshot(n_retains=n)
    snap = Snapshot(n_retains=3)
    with pytest.raises(err, match=words):
        snap.n_retains = n
    assert snap.n_retains == 3


@pytest.mark.parametrize(
    ("filename", "problem"),
    [
        ("snap_{foo}.npz", r"the field \{foo\}"),
        ("snap_{}.npz", r"a field with no name \(\{\}\)"),
        ("snap_{iteration:s}.npz", r"ValueError: Unknown format code 's' for object of type 'int'"),
        ("snap_{epoch.real.x}.npz", r"AttributeError: 'int' object has no attribute 'x'"),
        ("snap_{.npz", r"ValueError: (Single '\{' encountered|expected '\}' before end)"),
    ],
)
def test_a_snapshot_name_template_is_checked_when_made(tmp_path, filename, problem):
    """``{foo}`` failed with a bare KeyError after the first epoch had trained."""
    with pytest.raises(ValueError) as info:
        Snapshot(filename=filename)
    assert str(info.value).startswith(
        f"zerograd_nn.training.Snapshot: filename {filename!r} cannot be filled in ("
    )
    assert "it may hold the fields {epoch} and {iteration}" in str(info.value)
    import re

    assert re.search(problem, str(info.value))


def test_a_snapshot_name_without_npz_is_kept_to_n_retains(tmp_path):
    """The files were written as snap_5.npz while the list kept snap_5: none was removed."""
    trainer = _resumable(tmp_path, 0, (5, "iteration"))
    del trainer._extensions["Snapshot"]
    trainer.extend(Snapshot("snap_{iteration}", trigger=(5, "iteration"), n_retains=2))
    trainer.run()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap_30.npz", "snap_35.npz"]
    assert trainer.get_extension("Snapshot").written == [
        str(tmp_path / "snap_30.npz"),
        str(tmp_path / "snap_35.npz"),
    ]


def _strict_json(line):
    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(line, parse_constant=refuse)


@pytest.mark.parametrize("name", ["log.jsonl", "log.json"])
def test_log_report_writes_null_for_a_value_that_is_not_finite(tmp_path, name):
    """It wrote NaN and Infinity, which JSON does not have."""
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=2, out=tmp_path)
    trainer.extend(
        lambda tr: tr.observation.update(
            {"gone": math.nan, "far": -math.inf, "mixed": math.inf if tr.iteration == 1 else 1.0}
            if tr.epoch == 0
            else {"gone": 1.0}
        ),
        trigger=(1, "iteration"),
        priority=300,
    )
    log = trainer.extend(LogReport(filename=name))
    trainer.run()
    lines = (tmp_path / name).read_text().splitlines()
    entries = [_strict_json(line) for line in lines]
    assert entries[0]["gone"] is None and entries[0]["far"] is None
    assert entries[1]["gone"] == 1.0 and "far" not in entries[1]
    assert entries[0]["mixed"] is None
    # kept in memory, and a mean of infs is that inf, not inf - inf = nan
    assert math.isnan(log.log[0]["gone"]) and log.log[0]["far"] == -math.inf
    assert log.log[0]["mixed"] == math.inf
    assert entries[0]["loss"] == log.log[0]["loss"]


def _two_logs(out, first, seed=0):
    """A trainer with two LogReports, added in the order ``first`` says, and a Snapshot."""
    np.random.seed(seed)
    model = MLP((10, 3))
    trainer = Trainer(
        model, SGD(0.5).setup(model), DataLoader(Spiral(), 30, seed=1), max_epochs=2, out=out
    )
    logs = {
        "epoch.jsonl": LogReport(filename="epoch.jsonl"),
        "steps.csv": LogReport(trigger=(3, "iteration"), filename="steps.csv"),
    }
    for name in (first, *(n for n in logs if n != first)):
        trainer.extend(logs[name])
    trainer.extend(Snapshot(trigger=(1, "epoch")))
    return trainer, logs


def test_two_log_reports_get_their_own_state_back_in_any_order(tmp_path):
    """Added in another order on resume, the two swapped their saved state."""
    straight, logs = _two_logs(tmp_path / "a", "epoch.jsonl")
    straight.max_epochs = 1
    straight.run()
    assert len(logs["epoch.jsonl"].log) == 1 and len(logs["steps.csv"].log) == 3
    resumed, again = _two_logs(tmp_path / "b", "steps.csv", seed=1)
    resumed.resume(tmp_path / "a" / "snapshot_iter_00000010.npz")
    for name in logs:
        assert again[name].log == logs[name].log, name


def test_two_log_reports_that_cannot_be_told_apart_need_names(tmp_path):
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path)
    trainer.extend(LogReport(filename=None))
    with pytest.raises(
        ValueError,
        match=r"^zerograd_nn.training.Trainer.extend: this trainer already has a LogReport "
        r"\('LogReport'\), and a snapshot keeps each one's state by name: on resume the two "
        r"could get each other's state \(their state tags are None and None: they are "
        r"equal\). Give this one a name of its own: trainer.extend\(..., "
        r"name='LogReport-2'\), and the same names when resuming\.$",
    ):
        trainer.extend(LogReport(filename=None, trigger=(3, "iteration")))
    with pytest.raises(ValueError, match=r"their state tags are None and 'b.csv'"):
        trainer.extend(LogReport(filename="b.csv"))
    named = trainer.extend(LogReport(filename=None), name="steps")
    assert trainer.get_extension("steps") is named
    with pytest.raises(ValueError, match=r"an extension named 'steps' is already there"):
        trainer.extend(LogReport(filename=None), name="steps")
    # an Evaluator keeps its loader's state (a shuffling loader's next order): two are told
    # apart by their prefixes
    trainer.extend(Evaluator(DataLoader(Spiral(train=False), 100)))
    trainer.extend(Evaluator(DataLoader(Spiral(train=False), 100), prefix="v2/"))
    with pytest.raises(ValueError, match=r"their state tags are 'val/' and 'val/'"):
        trainer.extend(Evaluator(DataLoader(Spiral(train=False), 100)))
    keys = ["Evaluator[v2/]", "Evaluator[val/]", "LogReport", "steps"]
    assert sorted(trainer._state_keys().values()) == keys


def test_a_per_example_loss_is_refused_before_backward_changing_nothing(tmp_path):
    """It failed with numpy's error after the update had been applied."""
    model, optimizer, loader = _setup()
    model(np.zeros((1, 2), np.float32))
    before = _weights(model)
    trainer = Trainer(
        model, optimizer, loader, lambda y, t: F.sum(y * y, axis=1), max_epochs=1, out=tmp_path
    )
    with pytest.raises(
        ValueError,
        match=r"^zerograd_nn.training.Trainer: loss_fn returned a loss of shape \(30,\) at "
        r"iteration 1 \(batch 1 of epoch 1\), not one number \(one loss per example\?\); the "
        r"trainer minimizes one number. Reduce it in loss_fn, e.g. F.mean\(...\) or "
        r"F.sum\(...\). Nothing was updated.$",
    ):
        trainer.run()
    assert trainer.iteration == 0 and _same_weights(model, before)
    assert all(p.grad is None for p in model.params())


def test_a_loss_that_is_no_variable_is_refused_and_a_one_element_loss_trains(tmp_path):
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, lambda y, t: 0.5, max_epochs=1, out=tmp_path)
    with pytest.raises(TypeError, match=r"loss_fn returned a float, not a Variable"):
        trainer.run()
    assert trainer.iteration == 0
    one = Trainer(
        model,
        optimizer,
        loader,
        lambda y, t: F.reshape(F.softmax_cross_entropy(y, t), (1,)),
        max_iterations=2,
        out=tmp_path,
    )
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # float() of a (1,) array is deprecated in numpy
        one.run()
    assert one.iteration == 2 and math.isfinite(one.observation["loss"])


def test_early_stopping_on_the_training_loss_says_what_applies(tmp_path):
    """It advised the trigger of an Evaluator, (1, 'epoch'): the trigger it had."""
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=2, out=tmp_path)
    trainer.extend(EarlyStopping(monitor="loss"))
    with pytest.raises(KeyError) as info:
        trainer.run()
    msg = info.value.args[0]
    assert msg.startswith(
        "zerograd_nn.training.EarlyStopping: 'loss' was not observed at the end of epoch 1; "
        "observed: []. 'loss' is a value of each update, observed at iteration points only;"
    )
    assert "Watch 'val/loss' (add trainer.extend(Evaluator(val_loader)))" in msg
    assert "or check at iteration points (trigger=(n, 'iteration'))" in msg
    # what it advises works
    ok = Trainer(*_setup(), max_epochs=2, out=tmp_path)
    ok.extend(EarlyStopping(monitor="loss", trigger=(5, "iteration"), patience=100))
    ok.run()
    assert ok.get_extension("EarlyStopping").best < math.inf


def test_early_stopping_on_a_validation_value_at_iteration_points_says_what_applies(tmp_path):
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path)
    trainer.extend(Evaluator(DataLoader(Spiral(train=False), 100)))
    trainer.extend(EarlyStopping(trigger=(2, "iteration")))
    with pytest.raises(
        KeyError,
        match=r"'val/loss' was not observed at iteration 2; observed: \['loss', 'lr'\]. At "
        r"iteration points the trainer observes each update's \['loss', 'lr'\]; other values "
        r"are added by extensions at their own trigger \(an Evaluator's 'val/...' at the end "
        r"of each epoch\): give this extension that trigger, such as \(1, 'epoch'\).",
    ):
        trainer.run()


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        (np.array([True, False]), r"array\(\[ True, False\]\) \(ndarray\)"),
        (None, r"None \(NoneType\)"),
        (1, r"1 \(int\)"),
    ],
    ids=["array", "None", "int"],
)
def test_a_trigger_that_answers_no_bool_is_one_clear_type_error(tmp_path, answer, shown):
    """An array gave numpy's "truth value of an array ... is ambiguous"."""
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path)

    def every_other(tr):
        return answer

    trainer.extend(Recorder(), trigger=every_other, name="rec")
    with pytest.raises(
        TypeError,
        match=r"^zerograd_nn.training: the trigger test_a_trigger_that_answers_no_bool_is_one_"
        r"clear_type_error.<locals>.every_other of the extension "
        rf"'rec' returned {shown} at epoch 0, iteration 1; a trigger must return True or "
        r"False\.",
    ):
        trainer.run()
    log = Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path)
    log.extend(LogReport(trigger=every_other, filename=None))
    with pytest.raises(TypeError, match=r"of the extension \"LogReport's log\" returned"):
        log.run()


def test_a_trigger_may_answer_a_numpy_bool(tmp_path):
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path)
    rec = trainer.extend(
        Recorder(), trigger=lambda tr: np.bool_(not tr.at_epoch_end and tr.iteration % 5 == 0)
    )
    trainer.run()
    assert [c[1] for c in rec.calls] == [5, 10]


@pytest.mark.parametrize(
    "out, err, words",
    [
        ("", ValueError, r"out='' names no folder; give one such as out='result', or out='\.'"),
        (None, TypeError, r"out must be a folder's path as a str or os\.PathLike .* NoneType"),
        (b"result", TypeError, r"out must be a folder's path as a str or os\.PathLike .* bytes"),
        ("a\x00b", ValueError, r"the path 'a\\x00b' holds a NUL byte"),
    ],
)
def test_an_out_that_names_no_folder_is_refused_when_the_trainer_is_made(
    tmp_path, monkeypatch, out, err, words
):
    """out='' failed only at run(), with "No such file or directory" for ''; bytes and
    None failed inside os.path with messages naming no Trainer."""
    monkeypatch.chdir(tmp_path)
    model, optimizer, loader = _setup()
    with pytest.raises(err, match=rf"^zerograd_nn\.training\.Trainer: {words}"):
        Trainer(model, optimizer, loader, max_iterations=1, out=out)
    assert os.listdir(tmp_path) == []


def test_out_dot_writes_into_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_iterations=2, out=".")
    trainer.extend(Snapshot(trigger=(2, "iteration")))
    trainer.run()
    assert trainer.iteration == 2
    assert [n for n in os.listdir(tmp_path) if n.endswith(".npz")] == ["snapshot_iter_00000002.npz"]


@pytest.mark.parametrize(
    "make, err, words",
    [
        (lambda: Evaluator([], model=3), TypeError, r"Evaluator: model must be callable"),
        (lambda: Evaluator([], metrics=[F.accuracy]), TypeError, r"Evaluator: metrics must be a"),
        (lambda: StepScheduler(None), TypeError, r"StepScheduler: scheduler must have a step"),
    ],
)
def test_extensions_refuse_what_would_fail_only_during_training(make, err, words):
    """Each was accepted, then failed inside the run with a bare AttributeError or
    "'int' object is not callable"."""
    with pytest.raises(err, match=words):
        make()


def test_the_trainer_refuses_a_non_callable_extension_and_non_dict_metrics(tmp_path):
    model, optimizer, loader = _setup()
    with pytest.raises(TypeError, match=r"metrics must be a dict of names to functions"):
        Trainer(model, optimizer, loader, max_iterations=1, metrics=[F.accuracy], out=tmp_path)
    trainer = Trainer(model, optimizer, loader, max_iterations=1, out=tmp_path)
    with pytest.raises(TypeError, match=r"^zerograd_nn\.training\.Trainer\.extend: an extension"):
        trainer.extend(3)
    assert trainer.run().iteration == 1  # nothing was filed


@pytest.mark.parametrize(
    "value, shown",
    [("x", r"str \('x'\)"), (np.ones(3), r"values of shape \(3,\)"), (None, r"NoneType \(None\)")],
)
def test_a_metric_that_is_not_one_number_is_named(tmp_path, value, shown):
    """A string failed with numpy's "could not convert string to float", an array with
    "cannot reshape array of size 3"; neither named the metric."""
    model, optimizer, loader = _setup()
    trainer = Trainer(
        model,
        optimizer,
        loader,
        max_iterations=2,
        metrics={"odd": lambda y, t: value},
        out=tmp_path,
    )
    with pytest.raises(
        TypeError,
        match=rf"^zerograd_nn\.training\.Trainer \(iteration 1, whose update is done\): 'odd' "
        rf"gave {shown}, not one number",
    ):
        trainer.run()
    evaluator = Evaluator(loader, metrics={"odd": lambda y, t: value})
    with pytest.raises(TypeError, match=r"^zerograd_nn\.training\.Evaluator: 'odd' gave"):
        evaluator.evaluate(trainer)


def test_print_report_takes_one_entry_as_a_string(tmp_path):
    """PrintReport("epoch") printed the columns 'e', 'p', 'o', 'c', 'h'."""
    model, optimizer, loader = _setup()
    out = io.StringIO()
    trainer = Trainer(model, optimizer, loader, max_epochs=2, out=tmp_path)
    trainer.extend(LogReport())
    trainer.extend(PrintReport("epoch", file=out))
    trainer.run()
    assert out.getvalue().split() == ["epoch", "1", "2"]


@pytest.mark.parametrize(
    "interval, err", [(0, ValueError), (-1, ValueError), (2.5, TypeError), (True, TypeError)]
)
def test_progress_bar_refuses_an_interval_that_is_not_a_positive_int(interval, err):
    """update_interval=0 failed at the first iteration with ZeroDivisionError."""
    with pytest.raises(err, match=r"^zerograd_nn\.training\.ProgressBar: update_interval must"):
        ProgressBar(enabled=False, update_interval=interval)


def test_plot_report_names_an_x_key_no_entry_holds(tmp_path):
    """It failed with a bare KeyError: 'nope'."""
    pytest.importorskip("matplotlib", reason="PlotReport draws with matplotlib")
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path)
    trainer.extend(LogReport())
    trainer.extend(PlotReport(["loss"], x_key="nope"))
    with pytest.raises(
        KeyError, match=r"PlotReport: x_key 'nope' is in none of the LogReport's entries \(they"
    ):
        trainer.run()


def test_resume_from_a_checkpoint_no_snapshot_wrote_says_what_it_is(tmp_path):
    """It said "holds no scheduler state; pass scheduler=None", advice resume cannot take."""
    model, optimizer, loader = _setup()
    model(np.zeros((1, 2), np.float32))
    path = save_checkpoint(tmp_path / "c.npz", model=model, optimizer=optimizer, iteration=7)
    before = [p.data.copy() for p in model.params()]
    trainer = Trainer(model, optimizer, loader, max_iterations=10, out=tmp_path)
    with pytest.raises(
        CheckpointError,
        match=r"^zerograd_nn\.training\.Trainer\.resume: '.*c\.npz' is a checkpoint but no "
        r"Trainer snapshot \(it holds no extension states: save_checkpoint\(\) wrote it",
    ) as info:
        trainer.resume(path)
    assert info.value.missing is None and trainer.iteration == 0
    for p, b in zip(model.params(), before):
        np.testing.assert_array_equal(p.data, b)


# -- a damaged snapshot changes nothing -----------------------------------------------------


class _TwoPartState(Extension):
    """An extension whose load_state_dict sets ``a`` before it reads ``b`` (fails half-way)."""

    def __init__(self):
        self.a, self.b = 7, 7

    def __call__(self, trainer):
        self.a += 1

    def state_dict(self):
        return {"a": self.a, "b": self.b}

    def load_state_dict(self, d):
        self.a = int(d["a"])
        self.b = int(d["b"])


class _Saved:
    """Stands in for a trainer's extension states when writing a damaged snapshot."""

    def __init__(self, d):
        self.d = d

    def state_dict(self):
        return self.d

    def load_state_dict(self, d):
        raise AssertionError("not loaded")


def _trained_for_resume(out):
    """A trained trainer (model, Adam, shuffling loader, LogReport) and its full state."""
    model, _, loader = _setup()
    optimizer = Adam().setup(model)
    loader = DataLoader(Spiral(train=True), 30, seed=3)
    trainer = Trainer(model, optimizer, loader, max_iterations=5, out=out)
    log = trainer.extend(LogReport(trigger=(2, "iteration"), filename=None))
    mine = trainer.extend(_TwoPartState(), name="mine")
    trainer.run()
    return trainer, log, mine


def _trainer_state(trainer, log, mine):
    model, optimizer, loader = trainer.model, trainer.optimizer, trainer.train_loader
    return {
        "weights": {k: (id(p.data), p.data.tobytes()) for k, p in model.named_params().items()},
        "optimizer": repr(optimizer.state_dict()),
        "loader": repr(loader.state_dict()),
        "rng": np.random.get_state()[1].tobytes(),
        "counters": (trainer.epoch, trainer.iteration, trainer.elapsed_time),
        "resumed": (trainer.resumed_from, trainer._resumed, trainer._resumed_at_epoch_end),
        "log": repr(log.state_dict()),
        "mine": (mine.a, mine.b),
    }


@pytest.mark.parametrize(
    "extra", [{"elapsed_time": "x", "at_epoch_end": False}, [1, 2], {"at_epoch_end": "no"}]
)
def test_resume_from_a_snapshot_whose_trainer_state_is_damaged_changes_nothing(tmp_path, extra):
    """It restored the model, optimizer, loader and random state, then failed on float('x')."""
    trainer, log, mine = _trained_for_resume(tmp_path)
    path = save_checkpoint(
        tmp_path / "damaged.npz",
        model=trainer.model,
        optimizer=trainer.optimizer,
        scheduler=_Saved({"mine": {"a": 1, "b": 2}}),
        loader=trainer.train_loader,
        iteration=2,
        extra=extra,
    )
    for p in trainer.model.params():  # the snapshot holds other weights than the model's
        p.data = p.data + 1
    np.random.seed(5)
    before = _trainer_state(trainer, log, mine)
    with pytest.raises(CheckpointError, match=r"damaged trainer state .*Nothing was changed"):
        trainer.resume(path)
    assert _trainer_state(trainer, log, mine) == before


def test_resume_undoes_an_extension_whose_state_fails_half_way(tmp_path):
    """The extension that raised kept the half of its state it had loaded (a = 1)."""
    trainer, log, mine = _trained_for_resume(tmp_path)
    saved = {"LogReport": {"log": [], "means": {}, "counts": {}}, "mine": {"a": 1, "b": "x"}}
    path = save_checkpoint(
        tmp_path / "half.npz",
        model=trainer.model,
        optimizer=trainer.optimizer,
        scheduler=_Saved(saved),
        loader=trainer.train_loader,
        extra=trainer.state_extra(),
    )
    before = _trainer_state(trainer, log, mine)
    with pytest.raises(ValueError, match=r"extension 'mine' does not fit .*Nothing was changed"):
        trainer.resume(path)
    assert _trainer_state(trainer, log, mine) == before
    assert mine.a == 12  # 7 and one call per iteration (5), not the 1 it half-loaded


def test_log_report_refuses_a_state_without_counts_unchanged():
    """It had replaced its log with the state's before the missing counts raised."""
    log = LogReport(filename=None)
    log.load_state_dict({"log": [{"loss": 1.0}], "means": {"loss": 2.0}, "counts": {"loss": 1}})
    before = repr(log.state_dict())
    with pytest.raises(KeyError, match="counts"):
        log.load_state_dict({"log": [{"loss": 9.0}], "means": {}})
    assert repr(log.state_dict()) == before


class _Unsaveable(Extension):
    """A user extension whose state a checkpoint cannot store (a set) from its 2nd call on."""

    def __init__(self):
        self.calls = 0

    def __call__(self, trainer):
        self.calls += 1

    def state_dict(self):
        return {"seen": {1, 2}} if self.calls >= 2 else {"calls": self.calls}

    def load_state_dict(self, d):
        pass


def test_a_snapshot_that_fails_to_write_keeps_its_list_of_files(tmp_path):
    """The failed file stayed in `written`: n_retains then counted it and removed a real one."""
    model, optimizer, loader = _setup()
    trainer = Trainer(model, optimizer, loader, max_iterations=6, out=tmp_path)
    snap = trainer.extend(Snapshot(n_retains=2), trigger=(1, "iteration"), name="snap")
    trainer.extend(_Unsaveable(), name="unsaveable", priority=200)  # runs before the Snapshot
    trainer.max_iterations = 1
    trainer.run()
    assert snap.written == [str(tmp_path / "snapshot_iter_00000001.npz")]
    before, files = list(snap.written), sorted(os.listdir(tmp_path))
    trainer.max_iterations = 2
    with pytest.raises(TypeError, match="cannot store|set"):
        trainer.run()
    assert snap.written == before and snap.state_dict() == {"written": before}
    assert sorted(os.listdir(tmp_path)) == files


def test_a_csv_log_written_after_a_resume_has_each_column_once(tmp_path):
    # after a resume, the first write of a CSV log rewrote it with every column once per
    # restored entry ("epoch,iteration,...,epoch,iteration,..."): the columns were
    # gathered from each entry without seeing those gathered from the entries before
    def drop_time(path):
        rows = list(csv.reader(path.open()))
        keep = [i for i, name in enumerate(rows[0]) if name != "elapsed_time"]
        return [[row[i] for i in keep] for row in rows]

    straight, logs = _two_logs(tmp_path / "a", "epoch.jsonl")
    straight.run()
    header = next(csv.reader((tmp_path / "a" / "steps.csv").open()))
    assert len(header) == len(set(header))
    resumed, _ = _two_logs(tmp_path / "b", "steps.csv", seed=1)
    resumed.resume(tmp_path / "a" / "snapshot_iter_00000010.npz").run()
    assert drop_time(tmp_path / "b" / "steps.csv") == drop_time(tmp_path / "a" / "steps.csv")


def test_a_run_resumed_into_another_folder_keeps_the_snapshots_it_started_from(tmp_path):
    # with n_retains, the resumed run (out=b) deleted the snapshots of folder a it was
    # resumed from: the saved list of files written named a's files, and each new
    # snapshot removed the oldest of them
    straight = _resumable(tmp_path / "a", 0, (5, "iteration"))
    straight.get_extension("Snapshot").n_retains = 2
    straight.max_iterations = 20
    straight.run()
    kept = {p.name: p.read_bytes() for p in (tmp_path / "a").glob("*.npz")}
    assert sorted(kept) == ["snapshot_iter_00000015.npz", "snapshot_iter_00000020.npz"]
    resumed = _resumable(tmp_path / "b", 1, (5, "iteration"))
    resumed.get_extension("Snapshot").n_retains = 2
    resumed.resume(tmp_path / "a").run()
    assert {p.name: p.read_bytes() for p in (tmp_path / "a").glob("*.npz")} == kept
    assert sorted(p.name for p in (tmp_path / "b").glob("*.npz")) == [
        "snapshot_iter_00000030.npz",
        "snapshot_iter_00000035.npz",
    ]


def test_snapshots_named_by_an_absolute_path_are_kept_to_n_retains(tmp_path):
    trainer = _resumable(tmp_path / "out", 0, (5, "iteration"))
    del trainer._extensions["Snapshot"]
    where = tmp_path / "elsewhere"
    trainer.extend(Snapshot(str(where / "s_{iteration}.npz"), (5, "iteration"), n_retains=2))
    trainer.run()
    assert sorted(p.name for p in where.iterdir()) == ["s_30.npz", "s_35.npz"]


@pytest.mark.parametrize("static", [False, True])
def test_a_dropped_trainer_frees_its_model_without_the_cyclic_collector(tmp_path, static):
    """The trainer holds no reference cycle (its step was once a bound method kept on
    itself, or a StaticGraph of one): dropping it with its model frees the model's
    Parameters at once."""
    import gc
    import weakref

    was = gc.isenabled()
    gc.disable()
    try:
        model, optimizer, loader = _setup()
        trainer = Trainer(model, optimizer, loader, max_epochs=1, out=tmp_path, static=static)
        trainer.extend(LogReport())
        trainer.run()
        if static:
            assert trainer.step.counts["replayed"] == 7  # 10 batches: 1 eager, 2 recorded
        else:
            assert trainer.step.__func__ is Trainer._train_step  # a bound method, as it was
        refs = [weakref.ref(p) for p in model.params()] + [weakref.ref(trainer)]
        del model, optimizer, loader, trainer
        assert [r() for r in refs] == [None] * len(refs)
    finally:
        if was:
            gc.enable()
