"""Adversarial checks of the training surfaces: schedules, the trainer, checkpoints,
inspection and the finite checks, each against an independent reference (PyTorch's
documented recursions written out by hand, numpy, an uninterrupted run)."""

import math
import warnings

import numpy as np
import pytest

from zerograd import Parameter
from zerograd_nn import optimizers as O
from zerograd_nn import schedulers as S


def _opt(*lrs):
    return O.SGD().setup([{"params": [Parameter(np.zeros(1))], "lr": lr} for lr in lrs])


def _run(sched, n, change=None):
    """The lr of each group after each of ``n`` steps; ``change(i, opt)`` runs before step i."""
    out = []
    for i in range(n):
        if change is not None:
            change(i, sched.optimizer)
        sched.step()
        out.append([g["lr"] for g in sched.optimizer.param_groups])
    return np.array(out)


def _set_lr(at, value):
    def change(i, opt):
        if i == at:
            opt.lr = value

    return change


# PyTorch's chainable forms (torch/optim/lr_scheduler.py, get_lr): each step computes the
# next lr from the group's current one, so an lr set by hand carries on.
def _torch_step(lr, t, step_size, gamma):
    return lr * gamma if t % step_size == 0 else lr


def _torch_cosine(lr, t, base, T, eta):  # noqa: N803
    if (t - 1 - T) % (2 * T) == 0:
        return lr + (base - eta) * (1 - math.cos(math.pi / T)) / 2
    c = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
    return c * (lr - eta) + eta


def _torch_linear(lr, t, start, total):
    if t > total:
        return lr
    return lr * (1 + (1 - start) / (total * start + (t - 1) * (1 - start)))


def _torch_run(base, n, rule, at, value):
    lr, out = base, []
    for i in range(n):
        if i == at:
            lr = value
        lr = rule(lr, i + 1)
        out.append(lr)
    return np.array(out)


@pytest.mark.parametrize(
    ("make", "rule"),
    [
        (lambda o: S.StepLR(o, 3, 0.5), lambda lr, t: _torch_step(lr, t, 3, 0.5)),
        (lambda o: S.ExponentialLR(o, 0.9), lambda lr, t: lr * 0.9),
        (
            lambda o: S.CosineAnnealingLR(o, 10),
            lambda lr, t: _torch_cosine(lr, t, 0.1, 10, 0.0),
        ),
        (
            lambda o: S.CosineAnnealingLR(o, 10, eta_min=0.01),
            lambda lr, t: _torch_cosine(lr, t, 0.1, 10, 0.01),
        ),
        (lambda o: S.LinearWarmup(o, 8, 0.25), lambda lr, t: _torch_linear(lr, t, 0.25, 8)),
    ],
    ids=["StepLR", "ExponentialLR", "CosineAnnealingLR", "CosineAnnealingLR-eta_min", "Warmup"],
)
def test_an_lr_set_by_hand_carries_on_as_in_pytorch(make, rule):
    sched = make(_opt(0.1))
    first = sched.optimizer.lr
    got = _run(sched, 9, _set_lr(4, 0.5))[:, 0]
    want = _torch_run(first, 9, rule, 4, 0.5)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    assert got[4] != pytest.approx(_run(make(_opt(0.1)), 9)[4, 0])  # the change was kept


def test_a_cosine_past_t_max_climbs_back_to_the_moved_base_where_pytorchs_resets():
    """how-to-train.md: an lr set by hand carries on as PyTorch's does up to T_max; past it
    zerograd's cosine climbs back towards the base the change moved (the value at the
    change's step on the curve), PyTorch's towards the base lr it started from."""
    T, eta, at, value = 5, 0.01, 2, 0.05  # noqa: N806
    got = _run(S.CosineAnnealingLR(_opt(0.1), T, eta_min=eta), 4 * T, _set_lr(at, value))[:, 0]
    torch = _torch_run(0.1, 4 * T, lambda lr, t: _torch_cosine(lr, t, 0.1, T, eta), at, value)
    np.testing.assert_allclose(got[:T], torch[:T], rtol=1e-13)  # steps 1..T
    moved = eta + (value - eta) * 2 / (1 + math.cos(math.pi * at / T))  # value at step at
    curve = [eta + (moved - eta) * (1 + math.cos(math.pi * t / T)) / 2 for t in range(1, 4 * T + 1)]
    np.testing.assert_allclose(got[at:], curve[at:], rtol=1e-13)
    assert max(got[T:]) == pytest.approx(moved) and max(torch[T:]) == pytest.approx(0.1)


def test_an_lr_set_by_hand_in_one_group_carries_on_in_that_group_only():
    sched = S.StepLR(_opt(0.1, 0.2), 2, 0.5)

    def change(i, opt):
        if i == 3:
            opt.param_groups[1]["lr"] = 1.0

    got = _run(sched, 6, change)
    np.testing.assert_allclose(got[:, 0], [0.1, 0.05, 0.05, 0.025, 0.025, 0.0125], rtol=1e-15)
    np.testing.assert_allclose(got[:, 1], [0.2, 0.1, 0.1, 0.5, 0.5, 0.25], rtol=1e-15)


def test_reduce_on_plateau_and_a_schedule_on_one_optimizer_multiply():
    # PyTorch: both act on the group's lr, so the plateau's cut stays under the decay
    opt = _opt(1.0)
    decay = S.ExponentialLR(opt, 0.5)
    plateau = S.ReduceLROnPlateau(opt, factor=0.1, patience=0)
    got = []
    for metric in [1.0, 2.0, 3.0, 0.5]:
        decay.step()
        plateau.step(metric)
        got.append(opt.lr)
    np.testing.assert_allclose(got, [0.5, 0.025, 0.00125, 0.000625], rtol=1e-13)


def test_two_schedules_stepped_apart_chain_as_in_pytorch():
    opt = _opt(1.0)
    a, b = S.StepLR(opt, 2, 0.5), S.ExponentialLR(opt, 0.9)
    got = []
    for _ in range(5):
        a.step()
        b.step()
        got.append(opt.lr)
    want, lr = [], 1.0
    for t in range(1, 6):
        lr = _torch_step(lr, t, 2, 0.5) * 0.9
        want.append(lr)
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_warm_restarts_replace_an_lr_set_by_hand_as_pytorch_does():
    # PyTorch's CosineAnnealingWarmRestarts computes each lr from base_lrs alone
    sched = S.CosineAnnealingWarmRestarts(_opt(0.1), 4)
    got = _run(sched, 6, _set_lr(2, 0.5))[:, 0]
    want = [0.05 + 0.05 * math.cos(math.pi * (t % 4) / 4) for t in range(1, 7)]
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_sequential_and_chained_follow_an_lr_set_by_hand():
    opt = _opt(0.1)
    seq = S.SequentialLR(opt, [S.ExponentialLR(opt, 0.5), S.StepLR(opt, 1, 0.1)], [5])
    got = _run(seq, 7, _set_lr(2, 1.0))[:, 0]
    # PyTorch: the first schedule goes on from 1.0; at the milestone the second starts
    # at its step 0 from the base lr
    np.testing.assert_allclose(got, [0.05, 0.025, 0.5, 0.25, 0.1, 0.01, 0.001], rtol=1e-13)

    opt = _opt(0.1)
    chain = S.ChainedScheduler([S.StepLR(opt, 2, 0.5), S.ExponentialLR(opt, 0.9)])
    got = _run(chain, 5, _set_lr(2, 1.0))[:, 0]
    want, lr = [], 0.1
    for t in range(1, 6):
        lr = 1.0 if t == 3 else lr
        lr = _torch_step(lr, t, 2, 0.5) * 0.9
        want.append(lr)
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_a_hand_set_lr_saved_before_the_next_step_resumes_identically():
    straight = _run(S.StepLR(_opt(0.1), 2, 0.5), 8, _set_lr(3, 0.7))
    first = S.StepLR(_opt(0.1), 2, 0.5)
    got = list(_run(first, 3))
    first.optimizer.lr = 0.7  # then saved, before the step that follows it
    opt = _opt(0.1)
    second = S.StepLR(opt, 2, 0.5)
    second.load_state_dict(first.state_dict())
    opt.load_state_dict(first.optimizer.state_dict())
    got += list(_run(second, 5))
    np.testing.assert_array_equal(np.array(got), straight)


def test_a_change_a_schedule_cannot_follow_is_one_warning():
    sched = S.ExponentialLR(_opt(0.1), 0.0)  # lr 0 from step 1 on, whatever the base
    sched.step()
    sched.optimizer.lr = 0.3
    with pytest.warns(UserWarning, match=r"ExponentialLR: the lr of group 0 was set to 0.3"):
        sched.step()
    assert sched.optimizer.lr == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()


# -- the trainer ----------------------------------------------------------------------------


def _trainer(out, failing=None, metrics=None, **kw):
    import zerograd_nn.functional as F
    from zerograd_nn import DataLoader
    from zerograd_nn.datasets import Spiral
    from zerograd_nn.models import MLP
    from zerograd_nn.training import LogReport, StepScheduler, Trainer

    np.random.seed(0)
    model = MLP((10, 3))
    optimizer = O.SGD(1.0).setup(model)
    loader = DataLoader(Spiral(train=True), 30, seed=1)  # 10 batches
    trainer = Trainer(model, optimizer, loader, F.softmax_cross_entropy, out=out, **kw)
    trainer.metrics.update(metrics or {})
    if failing is not None:
        # at every point, before the others
        trainer.extend(failing, name="failing", priority=300, trigger=lambda t: True)
    trainer.extend(StepScheduler(S.StepLR(optimizer, 1, 0.9)), name="epochly")
    trainer.extend(
        StepScheduler(S.ExponentialLR(optimizer, 0.99), trigger=(1, "iteration")), name="each"
    )
    trainer.extend(LogReport(filename=None, trigger=(1, "iteration")))
    return trainer


class _FailsOnce:
    """Raises the first time it runs at ``point`` (an iteration, or 'epoch N')."""

    def __init__(self, point):
        self.point, self.failed = point, False

    def __call__(self, trainer):
        here = f"epoch {trainer.epoch}" if trainer.at_epoch_end else trainer.iteration
        if here == self.point and not self.failed:
            self.failed = True
            raise OSError("the disk is full")


def _same_run(a, b):
    for p, q in zip(a.model.params(), b.model.params()):
        np.testing.assert_array_equal(p.data, q.data)
    assert a.optimizer.lr == b.optimizer.lr
    assert [e["iteration"] for e in a.get_extension("LogReport").log] == [
        e["iteration"] for e in b.get_extension("LogReport").log
    ]
    assert (a.epoch, a.iteration) == (b.epoch, b.iteration)


@pytest.mark.parametrize("point", [7, 10, "epoch 1"], ids=["iteration", "last-batch", "epoch"])
def test_run_again_after_an_extension_raised_runs_the_rest_of_that_point(tmp_path, point):
    straight = _trainer(tmp_path, max_epochs=2).run()
    failing = _FailsOnce(point)
    split = _trainer(tmp_path, failing, max_epochs=2)
    with pytest.raises(OSError, match="the disk is full") as info:
        split.run()
    assert "run() again first runs the extensions of this point" in info.value.__notes__[0]
    split.run()
    assert failing.failed
    _same_run(split, straight)


def test_run_again_after_a_metric_raised_runs_that_iterations_extensions(tmp_path):
    import zerograd_nn.functional as F

    calls = []

    def accuracy(y, t):
        calls.append(1)
        if len(calls) == 4:
            raise ZeroDivisionError("a metric's bug")
        return F.accuracy(y, t)

    straight = _trainer(tmp_path, max_epochs=1, metrics={"acc": F.accuracy}).run()
    split = _trainer(tmp_path, max_epochs=1, metrics={"acc": accuracy})
    with pytest.raises(ZeroDivisionError) as info:
        split.run()
    assert split.iteration == 4
    note = info.value.__notes__[0]
    assert "the metric 'acc' raised at iteration 4, whose update was done" in note
    assert set(split.observation) == {"loss", "lr"}  # that update's, not the one before
    split.run()
    _same_run(split, straight)


def _plain_trainer(loader, out, **kw):
    from zerograd_nn.models import MLP
    from zerograd_nn.training import Trainer

    np.random.seed(0)
    model = MLP((10, 3))
    return Trainer(model, O.SGD(1.0).setup(model), loader, out=out, **kw)


def test_a_generator_as_loader_is_refused_when_it_runs_out_not_counted_as_an_epoch(tmp_path):
    from zerograd_nn import DataLoader
    from zerograd_nn.datasets import Spiral

    batches = (b for b in DataLoader(Spiral(train=True), 30))
    trainer = _plain_trainer(batches, tmp_path, max_epochs=3)
    ends = []
    trainer.extend(lambda t: ends.append(t.epoch), trigger=(1, "epoch"))
    with pytest.raises(ValueError, match=r"is an iterator \(generator\).*ran out in epoch 2"):
        trainer.run()
    assert ends == [1]  # epoch 2 trained nothing: it was not counted, nothing ran for it
    assert (trainer.epoch, trainer.iteration) == (1, 10)


def test_a_loader_without_len_that_yields_nothing_trains_no_epoch(tmp_path):
    class Empty:
        def __iter__(self):
            return iter(())

    trainer = _plain_trainer(Empty(), tmp_path, max_epochs=2)
    ends = []
    trainer.extend(lambda t: ends.append(t.epoch), trigger=(1, "epoch"))
    with pytest.raises(ValueError, match=r"the training loader yielded no batch in epoch 1"):
        trainer.run()
    assert ends == [] and trainer.epoch == 0


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda o: S.StepLR(o, 2, gamma=math.inf), "StepLR: gamma must be a finite number"),
        (lambda o: S.ExponentialLR(o, math.inf), "ExponentialLR: gamma must be a finite"),
        (lambda o: S.CosineAnnealingLR(o, 5, eta_min=math.inf), "eta_min must be a finite"),
        (
            lambda o: S.CosineAnnealingWarmRestarts(o, 5, eta_min=math.inf),
            "eta_min must be a finite",
        ),
    ],
)
def test_a_schedule_of_infinite_numbers_is_refused_when_made(make, words):
    opt = _opt(0.1)
    with pytest.raises(ValueError, match=words):
        make(opt)
    assert opt.lr == 0.1 and getattr(opt, "initial_lrs", None) is None


def test_linear_warmup_names_the_interval_it_takes():
    for bad in (math.nan, 1.5, 0.0):
        with pytest.raises(ValueError, match=r"start_factor must be a number in \(0, 1\]"):
            S.LinearWarmup(_opt(0.1), 3, bad)


# -- inspection and the finite checks -------------------------------------------------------


def test_summary_of_a_model_returning_a_list_or_a_dict_shows_each_shape():
    import zerograd_nn.layers as L
    from zerograd import Config
    from zerograd_nn import Model

    class Heads(Model):
        def __init__(self, wrap):
            super().__init__()
            self.l0, self.wrap = L.Linear(3), wrap

        def forward(self, x):
            y = self.l0(x)
            return self.wrap(y, y[:, :2])

    for wrap, want in (
        (lambda a, b: [a, b], [(5, 3), (5, 2)]),
        (lambda a, b: {"a": a, "b": b}, {"a": (5, 3), "b": (5, 2)}),
    ):
        model = Heads(wrap)
        s = model.summary(np.zeros((5, 4), np.float32), verbose=False)
        assert s.rows[0]["output_shape"] == want and s.rows[1]["output_shape"] == (5, 3)
        assert s.total_params == 15 and Config.train and "forward" not in model.__dict__


def test_all_finite_and_nonfinite_count_take_a_variable():
    from zerograd import Variable
    from zerograd_nn.finite import all_finite, nonfinite_count

    a = np.array([1.0, np.nan, np.inf, -np.inf, 0.0])
    assert all_finite(Variable(a)) is False and nonfinite_count(Variable(a)) == 3
    assert all_finite(Variable(np.ones(2))) is True


def test_finite_names_how_many_values_are_bad():
    from zerograd import Variable
    from zerograd_nn.finite import NonFiniteError, finite

    with pytest.raises(NonFiniteError, match=r"shape \(4,\) holds 2 nan or inf of 4 values"):
        finite(Variable(np.array([1.0, np.nan, np.inf, 2.0])))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"patience": "3"}, TypeError, r"patience must be an int >= 0, got '3' \(str\)"),
        ({"patience": -1}, ValueError, r"patience must be an int >= 0, got -1"),
        ({"min_delta": math.nan}, ValueError, r"min_delta must be a number, not nan"),
        ({"min_delta": math.inf}, ValueError, r"min_delta must be a finite number, got inf"),
        ({"min_delta": "0.1"}, TypeError, r"min_delta must be a real number, got '0.1'"),
    ],
)
def test_early_stopping_refuses_arguments_that_could_never_work(kwargs, error, match):
    """A string patience failed at the first check with a raw comparison error; a nan
    min_delta made no value an improvement, so training stopped after ``patience`` checks."""
    from zerograd_nn.training import EarlyStopping

    with pytest.raises(error, match=f"EarlyStopping: {match}"):
        EarlyStopping(**kwargs)
    assert EarlyStopping(min_delta=-0.5).min_delta == 0.5  # the size, as Keras takes it


def test_step_with_an_epoch_names_set_step_and_changes_nothing():
    """PyTorch's deprecated ``scheduler.step(epoch)`` met Python's bare "takes 1 positional
    argument but 2 were given"."""
    opt = _opt(0.1)
    sched = S.StepLR(opt, 2)
    with pytest.raises(TypeError, match=r"StepLR.step\(\) takes no epoch .*set_step\(t\)"):
        sched.step(3)
    assert sched.last_epoch == 0 and opt.param_groups[0]["lr"] == 0.1
    sched.set_step(3)  # what the message says to write
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01)
