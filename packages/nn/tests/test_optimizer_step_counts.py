"""Adam's bias correction counts each parameter's own steps, as PyTorch's and Chainer's do.

A parameter without a gradient in an update (frozen, unused, added to the model later)
takes no step and its moments stay as they were; its step count must stay too, or its
next step is bias-corrected for steps its moments never saw. The reference is Adam by hand
in numpy, with one count per parameter (``torch.optim.Adam``'s ``state["step"]``, with
DeZero's placement of ``eps``). Every test runs packed (the default) and per-parameter
(``flat.PACKED_BACKENDS`` empty).
"""

import copy
import math
import pickle

import numpy as np
import pytest

import zerograd
from zerograd import Parameter, Variable
from zerograd_nn import optimizers as O
from zerograd_nn.checkpoint import load_checkpoint, save_checkpoint
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import flat

SHAPES = [(3, 4), (4,), (), (0,), (2, 2)]
LR, WD = 0.01, 0.05
ADAMS = {
    "Adam": (lambda **k: O.Adam(lr=LR, **k), False),
    "Adam-L2": (lambda **k: O.Adam(lr=LR, weight_decay=WD, **k), False),
    "AdamW": (lambda **k: O.AdamW(lr=LR, weight_decay=WD, **k), True),
}
each_adam = pytest.mark.parametrize("name", list(ADAMS))
modes = pytest.mark.parametrize("packed", [True, False], ids=["packed", "per-param"])


@pytest.fixture
def mode(monkeypatch):
    def set_mode(packed):
        if not packed:
            monkeypatch.setattr(flat, "PACKED_BACKENDS", frozenset())

    return set_mode


def start(dtype=np.float64):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(dtype) for s in SHAPES]


def grad(step, i, shape, dtype=np.float64):
    return np.random.default_rng(100 * step + i).standard_normal(shape).astype(dtype)


def adam_by_hand(name, w0, steps, skipped, b1=0.9, b2=0.999, eps=1e-8):
    """Adam with a step count per parameter; ``(step, i)`` in ``skipped``: no gradient."""
    wd = WD if name != "Adam" else 0.0
    decoupled = ADAMS[name][1]
    ws = [w.copy() for w in w0]
    ms = [np.zeros_like(w) for w in w0]
    vs = [np.zeros_like(w) for w in w0]
    ts = [0] * len(w0)
    out = []
    for s in range(steps):
        for i, w in enumerate(ws):
            if (s, i) in skipped:
                continue
            g = grad(s, i, w.shape)
            if wd and not decoupled:
                g = g + w * wd
            ts[i] += 1
            ms[i] = ms[i] + (g - ms[i]) * (1 - b1)
            vs[i] = vs[i] + (g * g - vs[i]) * (1 - b2)
            step = LR * math.sqrt(1 - b2 ** ts[i]) / (1 - b1 ** ts[i])
            delta = ms[i] / (np.sqrt(vs[i]) + eps) * -step
            if decoupled:
                delta = delta - w * (LR * wd)
            ws[i] = w + delta
        out.append([w.copy() for w in ws])
    return out


def train(make, w0, steps, skipped, opt=None, ps=None, first=0, every=None):
    ps = ps or [Parameter(w.copy()) for w in w0]
    opt = opt or make().setup(ps)
    out = []
    for s in range(first, steps):
        for i, p in enumerate(ps):
            p.grad = None if (s, i) in skipped else Variable(grad(s, i, p.data.shape))
        opt.update()
        if every is not None:
            every(s, opt, ps)
        out.append([np.array(p.data, copy=True) for p in ps])
    return out, opt, ps


def assert_trajectories(got, want, rtol=1e-13):
    for s, (a, b) in enumerate(zip(got, want)):
        for i, (x, y) in enumerate(zip(a, b)):
            np.testing.assert_allclose(x, y, rtol=rtol, atol=1e-15, err_msg=f"step {s}, param {i}")


def assert_bits(got, want):
    for s, (a, b) in enumerate(zip(got, want)):
        for i, (x, y) in enumerate(zip(a, b)):
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), f"step {s}, param {i}"


LATE = {(s, 0) for s in range(6)} | {(s, 2) for s in range(3)}  # first gradients at 6, 3
GAPS = {(s, 0) for s in range(4, 11)} | {(s, 4) for s in (2, 3, 9)} | {(s, 1) for s in (0, 29)}


@modes
@each_adam
def test_a_parameter_joining_late_takes_adams_first_step(name, packed, mode):
    """It moved by 0.64 * lr at step 3 (and by up to 3.16 * lr later): bias-corrected as
    if its moments had seen every step the optimizer took."""
    mode(packed)
    w0 = start()
    got, opt, ps = train(ADAMS[name][0], w0, 12, LATE)
    assert_trajectories(got, adam_by_hand(name, w0, 12, LATE))
    assert opt.t == 12  # DeZero's count of updates stays


@modes
def test_the_first_step_of_a_late_parameter_is_lr_times_the_sign(packed, mode):
    mode(packed)
    p, q = Parameter(np.array([1.0, -1.0])), Parameter(np.array([2.0, 3.0]))
    opt = O.Adam(lr=0.1, eps=1e-300).setup([p, q])
    for _ in range(20):
        p.grad = Variable(np.array([1.0, -1.0]))
        opt.update()
    q.grad, p.grad = Variable(np.array([0.5, -4.0])), None
    opt.update()
    np.testing.assert_allclose(q.data, [1.9, 3.1], rtol=1e-12)


@modes
@each_adam
def test_a_parameter_without_a_gradient_keeps_its_moments_and_its_step_count(name, packed, mode):
    mode(packed)
    w0 = start()
    got, _, _ = train(ADAMS[name][0], w0, 30, GAPS)
    assert_trajectories(got, adam_by_hand(name, w0, 30, GAPS))


@modes
def test_packed_and_per_parameter_updates_write_the_same_bits_with_gaps(packed, mode, monkeypatch):
    w0 = start()
    mode(packed)
    got, _, _ = train(ADAMS["AdamW"][0], w0, 30, GAPS)
    monkeypatch.setattr(flat, "PACKED_BACKENDS", frozenset())
    want, _, _ = train(ADAMS["AdamW"][0], w0, 30, GAPS)
    assert_bits(got, want)


@modes
@each_adam
@pytest.mark.parametrize("at", [3, 7, 12])
def test_a_state_dict_saved_mid_way_resumes_bit_for_bit(name, at, packed, mode):
    mode(packed)
    make = ADAMS[name][0]
    w0 = start()
    want, _, _ = train(make, w0, 30, GAPS | LATE)
    first, opt, ps = train(make, w0, at, GAPS | LATE)
    d = copy.deepcopy(opt.state_dict())
    fresh = make().setup(ps)
    fresh.load_state_dict(d)
    rest, _, _ = train(make, w0, 30, GAPS | LATE, opt=fresh, ps=ps, first=at)
    assert_bits(first + rest, want)


def test_the_state_dict_holds_each_parameters_own_count():
    ps = [Parameter(w) for w in start()]
    opt = O.Adam().setup(ps)
    skipped = {(0, 1), (1, 1), (2, 1), (3, 1), (2, 4)}
    for s in range(5):
        for i, p in enumerate(ps):
            p.grad = None if (s, i) in skipped else Variable(grad(s, i, p.data.shape))
        opt.update()
    d = opt.state_dict()
    assert d["counters"] == {"t": 5}  # a count that is t is not repeated in the entry
    assert [d["state"][str(i)].get("t") for i in range(5)] == [None, 1, None, None, 4]


def test_a_state_dict_without_counts_per_parameter_puts_each_at_the_global_step():
    """What zerograd wrote before: every parameter with state had taken ``t`` steps."""
    w0 = start()
    make = ADAMS["Adam"][0]
    _, opt, ps = train(make, w0, 4, LATE)
    d = opt.state_dict()
    assert d["state"]["2"].pop("t") == 1
    fresh = make().setup(ps)
    fresh.load_state_dict(d)
    assert fresh._cohort(ps[2]) == 0  # 0 steps behind t = 4
    p = ps[2]
    before = p.data.copy()
    p.grad = Variable(grad(9, 2, p.data.shape))
    for q in ps[:2] + ps[3:]:
        q.grad = None
    fresh.update()
    m = d["state"]["2"]["m"] + (p.grad.data - d["state"]["2"]["m"]) * (1 - 0.9)
    v = d["state"]["2"]["v"] + (p.grad.data**2 - d["state"]["2"]["v"]) * (1 - 0.999)
    step = LR * math.sqrt(1 - 0.999**5) / (1 - 0.9**5)  # step 5 of everyone saved at 4
    np.testing.assert_allclose(p.data - before, -step * m / (np.sqrt(v) + 1e-8), rtol=1e-12)


def test_a_parameter_without_an_entry_starts_afresh_at_step_one():
    p, q = Parameter(np.array([1.0, -1.0])), Parameter(np.array([2.0, 3.0]))
    opt = O.Adam(lr=0.1, eps=1e-300).setup([p, q])
    for _ in range(5):
        p.grad = q.grad = Variable(np.array([1.0, -1.0]))
        opt.update()
    d = opt.state_dict()
    del d["state"]["1"]  # as saved before q had a gradient
    fresh = O.Adam(lr=0.1, eps=1e-300).setup([p, q])
    fresh.load_state_dict(d)
    before = q.data.copy()
    q.grad, p.grad = Variable(np.array([0.5, -4.0])), None
    fresh.update()
    np.testing.assert_allclose(q.data - before, [-0.1, 0.1], rtol=1e-12)


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        (-1, r"\(1\.t: a step count must be an int >= 0, got -1\)"),
        (2.5, r"\(1\.t: a step count must be an int >= 0, got 2\.5\)"),
        (True, r"\(1\.t: a step count must be an int >= 0, got True\)"),
    ],
)
def test_a_bad_count_per_parameter_is_refused_and_changes_nothing(bad, words):
    w0 = start()
    _, opt, ps = train(ADAMS["Adam"][0], w0, 3, LATE)
    d = opt.state_dict()
    before = opt.state_dict()
    d["state"]["1"]["t"] = bad
    d["state"]["4"]["m"] = d["state"]["4"]["m"] + 1
    with pytest.raises(ValueError, match=r"^Adam\.load_state_dict: .*" + words):
        opt.load_state_dict(d)
    after = opt.state_dict()
    assert after["counters"] == before["counters"]
    for k, entry in before["state"].items():
        for sk, a in entry.items():
            np.testing.assert_array_equal(after["state"][k][sk], a)


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_copied_optimizer_keeps_the_counts(how):
    w0 = start()
    make = ADAMS["AdamW"][0]
    want, _, _ = train(make, w0, 20, GAPS)
    first, opt, ps = train(make, w0, 8, GAPS)
    pair = (ps, opt)
    ps2, opt2 = pickle.loads(pickle.dumps(pair)) if how == "pickle" else copy.deepcopy(pair)
    rest, _, _ = train(make, w0, 20, GAPS, opt=opt2, ps=ps2, first=8)
    assert_bits(first + rest, want)


def test_an_optimizer_pickled_without_counts_puts_each_parameter_at_the_global_step():
    w0 = start()
    make = ADAMS["Adam"][0]
    _, opt, ps = train(make, w0, 4, LATE)  # parameter 0 had no gradient yet: no state
    state = opt.__getstate__()
    state.pop("_behind", None)  # as pickled before counts per parameter
    copy_ = O.Adam.__new__(O.Adam)
    copy_.__setstate__(state)
    assert sorted(copy_.state_dict()["state"]) == ["1", "2", "3", "4"]
    assert all("t" not in e for e in copy_.state_dict()["state"].values())  # each at t = 4


@pytest.mark.parametrize("joins_after, dezero_ratio", [(2, 0.64), (1000, 2.5), (20000, 3.16)])
def test_a_late_parameter_takes_lr_where_dezeros_step_count_gave_a_multiple(
    joins_after, dezero_ratio
):
    """From DeZero and the changelog: DeZero's step size after t updates,
    ``optimizer.step_size()`` (DeZero's ``Adam.lr``), times a fresh parameter's first
    ``m / sqrt(v) = (1 - beta1) / sqrt(1 - beta2)``, is 0.64 times Adam's first step at
    the third update, 2.5 times after 1,000 and 3.16 in the long run; zerograd's step is
    ``lr``."""
    p, q = Parameter(np.array([1.0])), Parameter(np.array([2.0]))
    opt = O.Adam(lr=0.1, eps=1e-300).setup([p, q])
    for _ in range(joins_after):
        p.grad = Variable(np.array([1.0]))
        opt.update()
    assert opt.t == joins_after
    p.grad, q.grad = None, Variable(np.array([-4.0]))
    opt.update()
    dezero_step = opt.step_size() * (1 - 0.9) / math.sqrt(1 - 0.999)
    assert dezero_step / 0.1 == pytest.approx(dezero_ratio, abs=0.02)  # as the docs round it
    np.testing.assert_allclose(q.data, [2.1], rtol=1e-12)  # Adam's first step: lr


@modes
def test_update_one_takes_the_parameters_next_step(packed, mode):
    """Before any update() it divided by zero (the bias correction of step 0)."""
    mode(packed)
    p, q = Parameter(np.array([1.0, -1.0])), Parameter(np.array(2.0))
    opt = O.Adam(lr=0.1, eps=1e-300).setup([p, q])
    p.grad = Variable(np.array([3.0, -0.5]))
    opt.update_one(p)
    np.testing.assert_allclose(p.data, [0.9, -0.9], rtol=1e-12)
    assert opt.t == 0 and opt.state_dict()["state"]["0"]["t"] == 1
    q.grad = Variable(np.array(1.0))
    opt.update()  # p's second step, q's first
    assert opt.t == 1
    counts = {k: e.get("t") for k, e in opt.state_dict()["state"].items()}
    assert counts == {"0": 2, "1": None}  # q's count is t
    np.testing.assert_allclose(q.data, 1.9, rtol=1e-12)


def test_lent_gradients_then_an_update_count_as_one_step():
    """Data-parallel training packs before the update (Optimizer.lend_gradients)."""
    w0 = start()
    make = ADAMS["Adam"][0]
    want, _, _ = train(make, w0, 12, LATE | GAPS)
    ps = [Parameter(w.copy()) for w in w0]
    opt = make().setup(ps)
    got = []
    for s in range(12):
        for i, p in enumerate(ps):
            p.grad = None if (s, i) in LATE | GAPS else Variable(grad(s, i, p.data.shape))
        opt.lend_gradients()
        opt.update()
        got.append([np.array(p.data, copy=True) for p in ps])
    assert_bits(got, want)


def test_float32_parameters_follow_the_float64_reference():
    w0 = start(np.float32)
    ps = [Parameter(w.copy()) for w in w0]
    opt = O.Adam(lr=LR).setup(ps)
    for s in range(12):
        for i, p in enumerate(ps):
            g = None if (s, i) in LATE else Variable(grad(s, i, p.data.shape, np.float32))
            p.grad = g
        opt.update()
    want = adam_by_hand("Adam", [w.astype(np.float64) for w in w0], 12, LATE)[-1]
    for p, w in zip(ps, want):
        assert p.data.dtype == np.float32
        np.testing.assert_allclose(p.data, w, rtol=2e-6, atol=1e-6)


def test_a_checkpoint_keeps_the_counts_of_a_model_with_a_frozen_layer(tmp_path):
    """A model's layer frozen for the first steps (``FreezeParam``), then trained."""

    def run(steps, model=None, opt=None, first=0):
        if model is None:
            zerograd.seed(0)
            model = MLP((4, 3))
            model(np.ones((2, 3)))
            opt = O.Adam(lr=LR).setup(model)
            freeze = O.FreezeParam(model.l0)
            opt.add_hook(freeze)
        for s in range(first, steps):
            if s == 4:
                opt.hooks.clear()
            for i, p in enumerate(model.params()):
                p.grad = Variable(grad(s, i, p.data.shape, p.data.dtype))
            opt.update()
        return model, opt

    want, _ = run(9)
    model, opt = run(6)
    path = save_checkpoint(tmp_path / "c", model=model, optimizer=opt)
    model2 = MLP((4, 3))
    model2(np.ones((2, 3)))
    opt2 = O.Adam(lr=LR).setup(model2)
    load_checkpoint(path, model=model2, optimizer=opt2)
    assert {k: e.get("t") for k, e in opt2.state_dict()["state"].items()} == {
        "l0.W": 2,
        "l0.b": 2,
        "l1.W": None,
        "l1.b": None,
    }
    got, _ = run(9, model2, opt2, first=6)
    for k, p in want.named_params().items():
        assert p.data.tobytes() == got.named_params()[k].data.tobytes(), k
