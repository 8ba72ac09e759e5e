"""Schedulers against the formulas (and worked examples) of PyTorch's documentation."""

import math

import numpy as np
import pytest

from zerograd import Parameter, Variable
from zerograd_nn import layers as L
from zerograd_nn import optimizers as O
from zerograd_nn import schedulers as S


def opt_with(*lrs, make=O.SGD):
    groups = [{"params": [Parameter(np.zeros(1))], "lr": lr} for lr in lrs]
    return make().setup(groups)


def lrs(sched, n):
    """The lr of group 0 at steps 0..n-1 (read from the optimizer)."""
    out = []
    for _ in range(n):
        out.append(sched.optimizer.param_groups[0]["lr"])
        sched.step()
    return out


def test_step_lr_matches_the_documented_example():
    # PyTorch's docs: lr 0.05 for epochs < 30, 0.005 for 30..59, 0.0005 for 60..89
    opt = opt_with(0.05)
    got = lrs(S.StepLR(opt, step_size=30, gamma=0.1), 90)
    want = [0.05] * 30 + [0.005] * 30 + [0.0005] * 30
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_exponential_lr_every_group():
    opt = opt_with(0.1, 0.4)
    sched = S.ExponentialLR(opt, gamma=0.9)
    for t in range(1, 6):
        sched.step()
        np.testing.assert_allclose(sched.get_last_lr(), [0.1 * 0.9**t, 0.4 * 0.9**t])
        assert opt.lr == sched.get_last_lr()[0]


def test_cosine_annealing_formula():
    opt = opt_with(0.5)
    got = lrs(S.CosineAnnealingLR(opt, T_max=10, eta_min=0.01), 11)
    want = [0.01 + 0.49 * (1 + math.cos(math.pi * t / 10)) / 2 for t in range(11)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got[10] == pytest.approx(0.01)


@pytest.mark.parametrize(("T_0", "T_mult"), [(4, 1), (3, 2), (2, 3)])
def test_cosine_warm_restarts_formula(T_0, T_mult):  # noqa: N803
    opt = opt_with(1.0)
    got = lrs(S.CosineAnnealingWarmRestarts(opt, T_0=T_0, T_mult=T_mult, eta_min=0.1), 40)
    for t, lr in enumerate(got):
        # PyTorch's closed form for the period of step t
        if T_mult == 1:
            t_cur, t_i = t % T_0, T_0
        elif t >= T_0:
            n = int(math.log(t / T_0 * (T_mult - 1) + 1, T_mult))
            t_cur, t_i = t - T_0 * (T_mult**n - 1) / (T_mult - 1), T_0 * T_mult**n
        else:
            t_cur, t_i = t, T_0
        assert lr == pytest.approx(0.1 + 0.9 * (1 + math.cos(math.pi * t_cur / t_i)) / 2), t
    restarts = [t for t in range(1, 40) if got[t] == pytest.approx(1.0)]
    want = {(4, 1): [4, 8, 12], (3, 2): [3, 9, 21], (2, 3): [2, 8, 26]}[(T_0, T_mult)]
    assert restarts[:3] == want


def test_linear_warmup_matches_linear_lr_example():
    # PyTorch's LinearLR example: lr 0.05, start_factor 0.5, total_iters 4
    opt = opt_with(0.05)
    got = lrs(S.LinearWarmup(opt, warmup_steps=4, start_factor=0.5), 7)
    np.testing.assert_allclose(got, [0.025, 0.03125, 0.0375, 0.04375, 0.05, 0.05, 0.05])


def test_adam_alpha_is_scheduled():
    opt = opt_with(0.2, make=O.Adam)
    S.StepLR(opt, step_size=1, gamma=0.5).step()
    assert opt.alpha == opt.lr == 0.1


def test_sequential_warmup_then_cosine_restarts_the_second_at_its_step_0():
    opt = opt_with(1.0)
    warm = S.LinearWarmup(opt, warmup_steps=3, start_factor=0.25)
    cos = S.CosineAnnealingLR(opt, T_max=5)
    got = lrs(S.SequentialLR(opt, [warm, cos], milestones=[3]), 9)
    want = [0.25, 0.5, 0.75] + [(1 + math.cos(math.pi * t / 5)) / 2 for t in range(6)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_chained_multiplies_the_factors():
    opt = opt_with(1.0, 2.0)
    warm = S.LinearWarmup(opt, warmup_steps=4, start_factor=0.2)
    decay = S.ExponentialLR(opt, gamma=0.9)
    chain = S.ChainedScheduler([warm, decay])
    for t in range(8):
        w = 0.2 + 0.8 * min(t, 4) / 4
        np.testing.assert_allclose(chain.get_last_lr(), [w * 0.9**t, 2 * w * 0.9**t])
        chain.step()


@pytest.mark.parametrize("restarts_first", [True, False])
def test_chained_warm_restarts_multiply_their_factor_in_either_order(restarts_first):
    """from-pytorch.md: a chain multiplies every factor, CosineAnnealingWarmRestarts' too,
    whatever the order. PyTorch's ChainedScheduler lets the restarts' closed form replace
    the lr at each step, so the order matters there: with base 0.1, T_0=5 and
    ExponentialLR(0.9), torch 2.13 gives [0.1, 0.08141, 0.05891, 0.03109, 0.00859, 0.09,
    ...] with the restarts first (gamma once, never compounded) and the bare restarts,
    0.1 again at step 5, with them last."""
    opt = opt_with(0.1)
    restarts, decay = S.CosineAnnealingWarmRestarts(opt, T_0=5), S.ExponentialLR(opt, 0.9)
    chain = S.ChainedScheduler([restarts, decay] if restarts_first else [decay, restarts])
    want = [0.1 * (1 + math.cos(math.pi * (t % 5) / 5)) / 2 * 0.9**t for t in range(12)]
    np.testing.assert_allclose(lrs(chain, 12), want, rtol=1e-13)


def test_reduce_on_plateau_by_hand():
    opt = opt_with(1.0)
    sched = S.ReduceLROnPlateau(opt, factor=0.5, patience=2)
    got = []
    for m in [1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5]:
        sched.step(m)
        got.append(opt.lr)
    assert got == [1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.25]


def test_reduce_on_plateau_max_mode_cooldown_and_min_lr():
    opt = opt_with(1.0)
    sched = S.ReduceLROnPlateau(opt, mode="max", factor=0.1, patience=0, cooldown=1, min_lr=0.05)
    got = []
    for m in [Variable(np.array(1.0)), 0.5, 0.5, 0.5, 0.5]:
        sched.step(m)
        got.append(sched.get_last_lr()[0])
    # step 2 is bad (reduce, cooldown 1), step 3 is in cooldown, step 4 reduces to min_lr
    assert got == [1.0, pytest.approx(0.1), pytest.approx(0.1), 0.05, 0.05]


@pytest.mark.parametrize(
    "make",
    [
        lambda o: S.StepLR(o, 2, gamma=0.5),
        lambda o: S.CosineAnnealingWarmRestarts(o, 2, T_mult=2),
        lambda o: S.SequentialLR(o, [S.LinearWarmup(o, 2), S.ExponentialLR(o, 0.8)], [2]),
        lambda o: S.ChainedScheduler([S.LinearWarmup(o, 3), S.ExponentialLR(o, 0.8)]),
    ],
    ids=["StepLR", "WarmRestarts", "SequentialLR", "ChainedScheduler"],
)
def test_state_dict_resumes_the_same_schedule(make):
    a_opt = opt_with(1.0)
    a = make(a_opt)
    for _ in range(3):
        a.step()
    b_opt = opt_with(1.0)
    b = make(b_opt)
    b.load_state_dict(a.state_dict())
    b_opt.load_state_dict(a_opt.state_dict())
    for _ in range(5):
        a.step()
        b.step()
        assert a.get_last_lr() == b.get_last_lr() and a_opt.lr == b_opt.lr


def test_plateau_state_dict_round_trip():
    opt = opt_with(1.0)
    a = S.ReduceLROnPlateau(opt, patience=1)
    for m in (3.0, 2.0, 2.5):
        a.step(m)
    b = S.ReduceLROnPlateau(opt_with(1.0), patience=1)
    b.load_state_dict(a.state_dict())
    assert (b.best, b.num_bad_epochs, b.last_epoch) == (2.0, 1, 3)


def test_a_foreign_state_is_refused_and_changes_nothing():
    s = S.StepLR(opt_with(1.0), 3)
    s.step()
    before = s.state_dict()
    with pytest.raises(ValueError, match=r"StepLR.load_state_dict: expected the keys"):
        s.load_state_dict(S.ExponentialLR(opt_with(1.0), 0.5).state_dict())
    bad = dict(before, gamma="big")
    with pytest.raises(ValueError, match=r"gamma should be like 0.1, got 'big'"):
        s.load_state_dict(bad)
    assert s.state_dict() == before


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("last_epoch", 2.5),  # a step count that is not whole derails every later lr
        ("last_epoch", True),
        ("step_size", 3.0),
        ("gamma", float("nan")),
        ("base_lrs", ["0.1"]),
        ("_last_lr", [float("nan")]),
        ("base_lrs", 0.1),
    ],
)
def test_a_state_value_of_the_wrong_kind_is_refused_and_changes_nothing(key, value):
    s = S.StepLR(opt_with(1), 3)  # an int lr: the lists still take floats
    s.step()
    before = s.state_dict()
    with pytest.raises(ValueError, match=rf"StepLR.load_state_dict: {key} should be like"):
        s.load_state_dict(dict(before, **{key: value}))
    assert s.state_dict() == before
    s.load_state_dict(dict(before, base_lrs=[0.5], last_epoch=np.int64(4)))
    assert (s.base_lrs, s.last_epoch) == ([0.5], 4)


@pytest.mark.parametrize(
    ("call", "err", "words"),
    [
        (lambda o: S.StepLR(o, 0), ValueError, r"StepLR: step_size must be a positive int"),
        (lambda o: S.ExponentialLR(o, -1), ValueError, r"ExponentialLR: gamma must be a number"),
        (lambda o: S.LinearWarmup(o, 3, 0), ValueError, r"start_factor must be a number in \(0,"),
        (lambda o: S.ReduceLROnPlateau(o, mode="up"), ValueError, r"mode must be 'min' or 'max'"),
        (lambda o: S.SequentialLR(o, [S.StepLR(o, 1)], [2]), ValueError, r"milestones must be 0"),
        (
            lambda o: S.ChainedScheduler([S.ReduceLROnPlateau(o)]),
            TypeError,
            r"ReduceLROnPlateau needs a metric",
        ),
        (lambda o: S.ReduceLROnPlateau(o).step("x"), TypeError, r"metric must be a number"),
    ],
)
def test_bad_arguments_are_named(call, err, words):
    with pytest.raises(err, match=words):
        call(opt_with(1.0))


def test_a_scheduler_needs_a_set_up_optimizer():
    with pytest.raises(ValueError, match=r"call optimizer.setup\(model\) before making"):
        S.StepLR(O.SGD(), 2)


@pytest.mark.parametrize(
    ("target", "words"),
    [
        (None, r"StepLR\(optimizer, \.\.\.\): optimizer must be an optimizer .* got NoneType\.$"),
        (L.Linear(2), r"got Linear \(a model: pass the optimizer set up on it"),
    ],
)
def test_a_scheduler_of_something_else_says_what_it_got(target, words):
    with pytest.raises(TypeError, match=words):
        S.StepLR(target, 1)


@pytest.mark.parametrize(
    "make",
    [
        lambda o: S.StepLR(o, 2),
        lambda o: S.ReduceLROnPlateau(o),
        lambda o: S.SequentialLR(o, [S.LinearWarmup(o, 2), S.ExponentialLR(o, 0.8)], [2]),
    ],
    ids=["StepLR", "ReduceLROnPlateau", "SequentialLR"],
)
def test_a_state_for_another_number_of_groups_is_refused_and_changes_nothing(make):
    two = make(opt_with(1.0, 0.5))
    one_opt = opt_with(0.1)
    one = make(one_opt)
    before, lr = one.state_dict(), one_opt.lr
    words = r"the state is for 2 parameter groups \(\w+\) but the optimizer has 1;"
    with pytest.raises(ValueError, match=words):
        one.load_state_dict(two.state_dict())
    assert one.state_dict() == before and one_opt.lr == lr


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda o: S.StepLR(o, 3, last_epoch=9), r"StepLR\(last_epoch=\.\.\.\).*set_step\(t\)"),
        (lambda o: S.CosineAnnealingLR(o, T_max=5, last_epoch=2), r"load_state_dict"),
        (lambda o: S.ExponentialLR(o, 0.9, verbose=True), r"ExponentialLR\(verbose=.*get_last_lr"),
        (lambda o: S.ReduceLROnPlateau(o, verbose=True), r"ReduceLROnPlateau\(verbose="),
        (lambda o: S.ReduceLROnPlateau(o, last_epoch=3), r"Plateau\(last_epoch=.*load_state"),
    ],
)
def test_pytorchs_last_epoch_and_verbose_say_what_to_write(make, words):
    """PyTorch's scheduler keywords without a counterpart (last_epoch= to resume, the
    deprecated verbose=) are one TypeError saying what to write, as the optimizers'
    are; the optimizer's lr is left as it was."""
    opt = opt_with(0.5)
    with pytest.raises(TypeError, match=words):
        make(opt)
    assert opt.param_groups[0]["lr"] == 0.5 and opt.initial_lrs is None
    sched = S.StepLR(opt, 3, gamma=0.5)  # what the message of last_epoch says
    sched.set_step(9)
    assert opt.param_groups[0]["lr"] == 0.5 * 0.5**3


def _append_group(opt, lr):
    """PyTorch's optimizer.add_param_group({"params": [...], "lr": lr}), by hand."""
    opt.param_groups.append({**opt.param_groups[0], "params": [Parameter(np.zeros(1))], "lr": lr})


@pytest.mark.parametrize(
    ("make", "want"),
    [
        (lambda o: S.StepLR(o, 2, 0.5), [0.2, 0.2, 0.1, 0.1, 0.05]),
        (lambda o: S.ExponentialLR(o, 0.5), [0.2, 0.1, 0.05, 0.025, 0.0125]),
        (lambda o: S.CosineAnnealingLR(o, 10), [0.329772, 0.251923, 0.174075, 0.103846, 0.048113]),
        (
            lambda o: S.ChainedScheduler([S.LinearWarmup(o, 4, 0.25), S.StepLR(o, 2, 0.5)]),
            [0.246154, 0.246154, 0.123077, 0.123077, 0.061538],
        ),
    ],
    ids=["StepLR", "ExponentialLR", "CosineAnnealingLR", "ChainedScheduler"],
)
def test_a_group_appended_after_the_scheduler_carries_on_from_its_lr(make, want):
    """A group appended to param_groups after three steps (PyTorch's add_param_group) made
    the next step() fail with an IndexError. It carries on from its lr, as PyTorch's
    chainable schedulers do: torch.optim.SGD([p], lr=0.1), the scheduler, three step()s,
    opt.add_param_group({"params": [q], "lr": 0.4}), five more step()s give the new
    group's lrs below (torch 2.13, rounded to 6 digits); the first group's are unchanged."""
    opt = opt_with(0.1)
    sched = make(opt)
    alone = make(opt_with(0.1))
    for _ in range(3):
        sched.step()
        alone.step()
    _append_group(opt, 0.4)
    got, first = [], []
    for _ in range(5):
        sched.step()
        alone.step()
        got.append(opt.param_groups[1]["lr"])
        first.append(opt.param_groups[0]["lr"] == alone.optimizer.param_groups[0]["lr"])
    np.testing.assert_allclose(got, want, rtol=1e-5)  # 6 digits
    assert all(first) and len(sched.get_last_lr()) == 2


def test_a_group_appended_to_a_sequence_starts_the_next_scheduler_from_its_lr():
    opt = opt_with(0.1)
    sched = S.SequentialLR(opt, [S.LinearWarmup(opt, 4, 0.25), S.StepLR(opt, 2, 0.5)], [4])
    for _ in range(3):
        sched.step()
    _append_group(opt, 0.4)
    got = []
    for _ in range(4):  # PyTorch's SequentialLR fails here (its zip of the groups' lrs)
        sched.step()
        got.append(opt.param_groups[1]["lr"])
    # step 4 is the milestone: the StepLR after it starts the new group from its 0.4
    np.testing.assert_allclose(got, [0.4, 0.4, 0.2, 0.2], rtol=1e-15)
    assert opt.param_groups[0]["lr"] == 0.05


def test_a_group_removed_after_the_scheduler_is_refused_and_changes_nothing():
    opt = opt_with(0.1, 0.2)
    sched = S.StepLR(opt, 1, 0.5)
    sched.step()
    opt.param_groups.pop()
    before = sched.state_dict()
    with pytest.raises(ValueError, match=r"StepLR.step\(\): the optimizer has 1 parameter group"):
        sched.step()
    assert sched.state_dict() == before and opt.param_groups[0]["lr"] == 0.05


def test_plateau_takes_appended_groups_with_its_one_min_lr_or_asks_for_one_per_group():
    """Its reductions skipped a group appended later (zip with the min_lrs of the groups
    it was made for). One min_lr for all extends to it, as in PyTorch (lrs 0.2, 0.1, 0.05
    after torch's add_param_group({"params": [q], "lr": 0.4})); different ones per
    group are a ValueError saying to give one per group, with nothing changed."""
    opt = opt_with(0.1)
    sched = S.ReduceLROnPlateau(opt, patience=0, factor=0.5)
    sched.step(1.0)
    _append_group(opt, 0.4)
    got = []
    for _ in range(3):
        sched.step(1.0)
        got.append([g["lr"] for g in opt.param_groups])
    assert got == [[0.05, 0.2], [0.025, 0.1], [0.0125, 0.05]]
    assert sched.min_lrs == [0.0, 0.0]

    opt = opt_with(0.1, 0.1)
    sched = S.ReduceLROnPlateau(opt, patience=0, factor=0.5, min_lr=[0.0, 0.01])
    sched.step(1.0)
    _append_group(opt, 0.4)
    before = sched.state_dict()
    with pytest.raises(ValueError, match=r"min_lr gives 2 values, one per group"):
        sched.step(1.0)
    assert sched.state_dict() == before
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.1, 0.4]
    sched.min_lrs = [0.0, 0.01, 0.3]
    sched.step(1.0)
    assert [g["lr"] for g in opt.param_groups] == [0.05, 0.05, 0.3]


def test_a_scheduler_made_after_a_group_was_appended_keeps_the_first_base_lrs():
    """Schedulers made one after another start from the groups' lrs when the first was
    made; a group appended since starts from its own (PyTorch's initial_lr, set once per
    group). The first group's base became its scheduled lr of the moment."""
    opt = opt_with(0.1)
    first = S.StepLR(opt, 1, 0.5)
    first.step()
    _append_group(opt, 0.4)
    assert S.ExponentialLR(opt, 0.9).base_lrs == [0.1, 0.4]
    assert opt.initial_lrs == [0.1, 0.4]
