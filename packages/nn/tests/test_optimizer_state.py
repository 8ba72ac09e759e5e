"""Optimizers: settable lr, parameter groups, state dicts, pickling, all-or-nothing updates."""

import copy
import math
import pickle
import sys

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Parameter, Variable
from zerograd_nn import layers as L
from zerograd_nn import optimizers as O
from zerograd_nn.models import MLP, Model

ALL = {
    "SGD": lambda: O.SGD(0.1),
    "MomentumSGD": lambda: O.MomentumSGD(0.1),
    "AdaGrad": lambda: O.AdaGrad(0.1),
    "AdaDelta": lambda: O.AdaDelta(),
    "Adam": lambda: O.Adam(0.1),
    "AdamW": lambda: O.AdamW(0.1),
}
each = pytest.mark.parametrize("make", list(ALL.values()), ids=list(ALL))


class Net(Model):
    def __init__(self):
        super().__init__()
        self.fc = L.Linear(3, in_size=2)
        self.bn = L.BatchNorm()
        self.out = L.Linear(1, in_size=3)

    def forward(self, x):
        return self.out(self.bn(self.fc(x)))


def grads_for(model, seed):
    """Give every parameter a reproducible gradient (the same for twins of one model)."""
    rng = np.random.default_rng(seed)
    for p in model.params():
        p.grad = Variable(rng.standard_normal(p.data.shape).astype(p.data.dtype))


def trained(make, steps, model=None, seed0=0):
    model = model or MLP((3, 2))
    model(np.ones((1, 2), np.float32))
    opt = make().setup(model)
    for s in range(steps):
        grads_for(model, seed0 + s)
        opt.update()
    return model, opt


def copies(model):
    return {k: p.data.copy() for k, p in model.named_params().items()}


def opt_snapshot(opt):
    st = {id(p): {k: a.copy() for k, a in s.items()} for p, s in opt._state.items()}
    return st, getattr(opt, "t", None)


def assert_same_opt(opt, snap):
    st, t = snap
    assert getattr(opt, "t", None) == t
    assert set(st) == {id(p) for p in opt._state}
    for p, s in opt._state.items():
        for k, a in s.items():
            np.testing.assert_array_equal(a, st[id(p)][k])


# -- lr ---------------------------------------------------------------------------------


@each
def test_every_optimizer_has_a_settable_lr_that_scales_the_step(make):
    steps = []
    for lr in (1.0, 0.25):
        p = Parameter(np.array([1.0, -2.0]))
        opt = make().setup([p])
        opt.lr = lr
        opt.weight_decay = 0.0
        p.grad = Variable(np.array([0.5, 0.25]))
        opt.update()
        steps.append(p.data - np.array([1.0, -2.0]))
    np.testing.assert_allclose(steps[1], 0.25 * steps[0], rtol=1e-12)


def test_adam_alpha_and_lr_are_one_value():
    opt = O.Adam(alpha=0.3)
    assert opt.lr == 0.3
    opt.lr = 0.05
    assert opt.alpha == 0.05
    opt.alpha = 0.2
    assert opt.lr == 0.2 and opt.defaults["lr"] == 0.2


def test_bad_hyperparameters_are_refused_by_name():
    with pytest.raises(TypeError, match=r"SGD: lr must be a real number, got 'a' \(str\)"):
        O.SGD(lr="a")
    with pytest.raises(ValueError, match=r"Adam: alpha must be a finite number >= 0, got -1.0"):
        O.Adam().alpha = -1


def test_a_0d_array_hyperparameter_is_taken_as_a_float_everywhere():
    """The core's checks took np.array(0.1), the optimizers refused it as "not a real
    number", and the hooks took anything (a string failed inside the update, nan and
    negative rates were applied)."""
    a = Parameter(np.array([1.0, -2.0]))
    opt = O.SGD(lr=np.array(0.5)).setup([a])
    assert type(opt.lr) is float and opt.lr == 0.5
    opt.param_groups[0]["lr"] = np.float32(0.25)
    opt.lr = np.array(0.25)
    assert type(opt.param_groups[0]["lr"]) is float
    decay, clip = O.WeightDecay(np.array(0.5)), O.ClipGrad(np.array(100.0))
    opt.add_hook(decay)
    opt.add_hook(clip)
    a.grad = Variable(np.array([2.0, 2.0]))
    opt.update()  # grad + 0.5 * a = [2.5, 1.0]; a - 0.25 * that
    np.testing.assert_array_equal(a.data, [1.0 - 0.625, -2.0 - 0.25])


@pytest.mark.parametrize(
    "bad, err, words",
    [
        (np.array([0.5]), TypeError, r"must be a real number, got array\(\[0\.5\]\)"),
        (np.array(True), TypeError, r"must be a real number, got array\(True\)"),
        ("0.5", TypeError, r"must be a real number, got '0\.5' \(str\)"),
        (float("nan"), ValueError, r"must be a finite number >= 0, got nan"),
        (-1.0, ValueError, r"must be a finite number >= 0, got -1\.0"),
    ],
)
def test_hooks_refuse_a_bad_rate_or_limit_when_made_and_at_the_update(bad, err, words):
    for cls, name in ((O.WeightDecay, "rate"), (O.ClipGrad, "max_norm")):
        with pytest.raises(err, match=rf"^{cls.__name__}: {name} {words}"):
            cls(bad)
        a = Parameter(np.array([1.0, -2.0]))
        opt = O.SGD(lr=0.1).setup([a])
        hook = cls(1.0)
        opt.add_hook(hook)
        setattr(hook, name, bad)  # assigned later: refused by the update, nothing changed
        a.grad = Variable(np.array([2.0, 2.0]))
        with pytest.raises(err, match=rf"^{cls.__name__}: {name} {words}"):
            opt.update()
        np.testing.assert_array_equal(a.data, [1.0, -2.0])
        np.testing.assert_array_equal(a.grad.data, [2.0, 2.0])


# -- parameter groups -------------------------------------------------------------------


def test_groups_have_their_own_hyperparameters():
    a, b = Parameter(np.array([1.0])), Parameter(np.array([1.0]))
    opt = O.SGD(lr=1.0).setup([{"params": [a], "lr": 0.1}, {"params": [b]}])
    a.grad, b.grad = Variable(np.array([2.0])), Variable(np.array([2.0]))
    opt.update()
    np.testing.assert_allclose([a.data[0], b.data[0]], [1.0 - 0.2, 1.0 - 2.0])
    assert [g["lr"] for g in opt.param_groups] == [0.1, 1.0]
    opt.lr = 0.5  # the uniform lr sets every group
    assert [g["lr"] for g in opt.param_groups] == [0.5, 0.5]


def test_adam_groups_accept_alpha():
    a = Parameter(np.array([1.0]))
    opt = O.Adam().setup([{"params": [a], "alpha": 0.25}])
    a.grad = Variable(np.array([3.0]))
    opt.update()
    np.testing.assert_allclose(a.data, [0.75])  # Adam's first step is lr * sign(grad)


@pytest.mark.parametrize(
    ("groups", "err", "words"),
    [
        ([{"params": [], "lr": 0.1, "nesterov": True}], ValueError, r"group 0 has unknown keys"),
        ([{"lr": 0.1}], ValueError, r'group 0 must be a dict with a "params" entry'),
        ([{"params": [1.0]}], TypeError, r"every item of group 0's params must be a Parameter"),
    ],
)
def test_bad_groups_are_refused(groups, err, words):
    with pytest.raises(err, match=words):
        O.SGD().setup(groups)


def test_a_parameter_in_two_groups_is_refused():
    p = Parameter(np.array([1.0]))
    with pytest.raises(ValueError, match=r"group 1 is also in an earlier group"):
        O.SGD().setup([{"params": [p]}, {"params": [p]}])


def test_a_parameter_of_a_model_group_in_another_group_is_refused():
    model = MLP((3, 2))
    model(np.ones((1, 2)))
    with pytest.raises(ValueError, match=r"a Parameter of group 1 is also in an earlier group"):
        O.SGD().setup([{"params": model, "lr": 0.1}, {"params": [model.l0.W], "lr": 0.0}])
    with pytest.raises(ValueError, match=r"a Parameter of group 1 is also in an earlier group"):
        O.SGD().setup([{"params": [model.l1.b]}, {"params": model}])


def test_weight_decay_groups_spare_biases_and_normalization():
    model = Net()
    model(np.ones((4, 2), np.float32))
    groups = O.weight_decay_groups(model, 0.1)
    assert list(groups[0]["params"]) == ["fc.W", "out.W"]
    assert list(groups[1]["params"]) == [
        "fc.b", "bn.avg_mean", "bn.avg_var", "bn.gamma", "bn.beta", "out.b",
    ]  # fmt: skip
    before = copies(model)
    opt = O.SGD(lr=1.0).setup(groups)
    grads_for(model, 0)
    g = {k: p.grad.data.copy() for k, p in model.named_params().items()}
    opt.update()
    for k, p in model.named_params().items():
        decay = 0.1 * before[k] if k.endswith(".W") else 0.0
        np.testing.assert_allclose(p.data, before[k] - (g[k] + decay), rtol=1e-6)


def test_adamw_with_groups_leaves_biases_undecayed():
    decayed = MLP((3, 2))
    decayed(np.ones((1, 2), np.float32))
    plain = copy.deepcopy(decayed)
    opts = [
        O.Adam(0.1).setup(plain),
        O.AdamW(0.1, weight_decay=0.5).setup(O.weight_decay_groups(decayed, 0.5)),
    ]
    for s in range(2):
        for m, o in zip((plain, decayed), opts):
            grads_for(m, s)
            o.update()
    np.testing.assert_array_equal(decayed.l0.b.data, plain.l0.b.data)
    assert not np.allclose(decayed.l0.W.data, plain.l0.W.data)


def test_l2_weight_decay_matches_the_hook():
    a, b = Parameter(np.array([1.0, -3.0])), Parameter(np.array([1.0, -3.0]))
    opt_a = O.MomentumSGD(0.1, weight_decay=0.2).setup([a])
    opt_b = O.MomentumSGD(0.1).setup([b])
    opt_b.add_hook(O.WeightDecay(0.2))
    for _ in range(3):
        a.grad, b.grad = Variable(np.array([0.5, 0.5])), Variable(np.array([0.5, 0.5]))
        opt_a.update()
        opt_b.update()
    np.testing.assert_allclose(a.data, b.data, rtol=1e-12)


# -- state dicts and copies -------------------------------------------------------------


@each
def test_state_dict_resumes_exactly(make):
    model, opt = trained(make, 3)
    sd = opt.state_dict()
    twin = MLP((3, 2))
    twin(np.ones((1, 2), np.float32))
    twin.load_state_dict(model.state_dict())
    twin_opt = make().setup(twin)
    twin_opt.load_state_dict(sd)
    for s in range(3, 5):
        for m, o in ((model, opt), (twin, twin_opt)):
            grads_for(m, s)
            o.update()
    for k, p in model.named_params().items():
        assert np.array_equal(p.data, twin.named_params()[k].data), k


def test_adam_state_dict_names_hyperparameters_and_moments():
    model, opt = trained(lambda: O.Adam(0.1), 3)
    sd = opt.state_dict()
    assert sd["type"] == "Adam" and sd["counters"] == {"t": 3}
    assert sd["groups"][0]["params"] == ["l0.W", "l0.b", "l1.W", "l1.b"]
    assert sd["groups"][0]["lr"] == 0.1 and sd["groups"][0]["beta2"] == 0.999
    np.testing.assert_array_equal(sd["state"]["l1.b"]["m"], opt._state[model.l1.b]["m"])
    sd["state"]["l1.b"]["m"] += 1  # a copy
    assert not np.array_equal(sd["state"]["l1.b"]["m"], opt._state[model.l1.b]["m"])


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda d: d.update(type="SGD"), r"saved by SGD, not Adam: load it into SGD"),
        (lambda d: d["state"]["l0.W"].update(m=np.zeros((9, 9))), r"l0.W.m: shape \(9, 9\)"),
        (lambda d: d["state"].update(zz={}), r"state for 'zz', which is not a parameter here"),
        (lambda d: d["groups"][0].update(lr="x"), r"group 0: Adam: lr must be a real number"),
        (lambda d: d["counters"].update(t=None), r"counter 't' must be an int"),
        (lambda d: d["state"]["l0.W"].pop("v"), r"l0.W: state \['v'\] missing"),
        (
            lambda d: d["state"]["l1.b"].update(m=np.array([1e39, 0.5])),
            r"l1.b.m holds 1 finite value\(s\) beyond the range of float32",
        ),
        (
            lambda d: d["counters"].update(t=-3),
            r"^Adam.load_state_dict: the state dict does not fit this optimizer \(counter 't' "
            r"counts steps taken: an int >= 0, got -3\)\. Nothing was changed\.$",
        ),
        (
            lambda d: d["state"]["l0.b"].update(v=-np.ones(3, np.float32)),
            r"l0.b.v: holds negative or nan values; it is a mean of squares, never below 0",
        ),
        (
            lambda d: d["state"]["l0.b"]["v"].__setitem__(1, np.nan),
            r"l0.b.v: holds negative or nan values",
        ),
    ],
)
def test_bad_optimizer_state_is_refused_and_changes_nothing(edit, words):
    _, opt = trained(lambda: O.Adam(0.1), 2)
    sd = opt.state_dict()
    for st in sd["state"].values():
        for k in st:
            st[k] = st[k] + 1
    sd["counters"]["t"] = 7
    edit(sd)
    snap = opt_snapshot(opt)
    with pytest.raises(ValueError, match=words):
        opt.load_state_dict(sd)
    assert_same_opt(opt, snap)
    assert opt.lr == 0.1


def test_adam_refuses_a_negative_step_counter_and_updates_on_afterwards():
    """``t = -3`` was taken, and the next update failed with "math domain error"."""
    model, opt = trained(lambda: O.Adam(0.1), 2)
    sd = opt.state_dict()
    sd["counters"]["t"] = -3
    with pytest.raises(ValueError, match=r"counter 't' counts steps taken: an int >= 0"):
        opt.load_state_dict(sd)
    assert opt.t == 2
    sd["counters"]["t"] = 0  # a state saved before the first step: fine
    opt.load_state_dict(sd)
    before = copies(model)
    grads_for(model, 5)
    opt.update()
    assert opt.t == 1
    assert all(np.isfinite(p.data).all() for p in model.params())
    assert any(not np.array_equal(before[k], p.data) for k, p in model.named_params().items())


@pytest.mark.parametrize(
    ("make", "name"),
    [(lambda: O.AdaGrad(0.1), "h"), (lambda: O.AdaDelta(), "msdx"), (lambda: O.AdamW(0.1), "v")],
    ids=["AdaGrad", "AdaDelta", "AdamW"],
)
def test_a_mean_of_squares_below_zero_is_refused(make, name):
    _, opt = trained(make, 2)
    sd = opt.state_dict()
    sd["state"]["l1.W"][name] = sd["state"]["l1.W"][name] - 1
    snap = opt_snapshot(opt)
    with pytest.raises(ValueError, match=rf"l1.W.{name}: holds negative or nan values"):
        opt.load_state_dict(sd)
    assert_same_opt(opt, snap)


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda d: d.update(counters=[1]), r"d\['counters'\] is of type list, not a dict"),
        (lambda d: d.update(groups=3), r"d\['groups'\] is of type int, not a list of dicts"),
        (lambda d: d["groups"].__setitem__(0, 5), r"d\['groups'\] is of type list, not a list"),
        (lambda d: d["state"].update({"l0.W": 3}), r"d\['state'\] is of type dict, not a dict of"),
        (lambda d: d.update(defaults=[]), r"d\['defaults'\] is of type list, not a dict"),
    ],
)
def test_a_state_dict_of_the_wrong_shape_is_refused_by_part(edit, words):
    _, opt = trained(lambda: O.Adam(0.1), 2)
    sd = opt.state_dict()
    edit(sd)
    snap = opt_snapshot(opt)
    with pytest.raises(TypeError, match=r"^Adam.load_state_dict\(d\): " + words):
        opt.load_state_dict(sd)
    assert_same_opt(opt, snap)


def test_an_optimizer_names_the_parameters_that_are_not_a_models():
    model, opt = trained(lambda: O.Adam(0.1), 1)
    twin = MLP((3, 2))
    twin(np.ones((1, 2), np.float32))
    assert opt.params_outside(model) == []
    assert opt.params_outside(twin) == ["l0.W", "l0.b", "l1.W", "l1.b"]
    head = O.SGD(0.1).setup(model.l1)  # a part of the model: nothing outside
    assert head.params_outside(model) == []
    with pytest.raises(RuntimeError, match=r"SGD: the optimizer has not been set up"):
        O.SGD(0.1).params_outside(model)


def test_a_parameter_without_an_entry_starts_afresh():
    _, opt = trained(lambda: O.Adam(0.1), 2)
    sd = opt.state_dict()
    del sd["state"]["l0.W"]  # as saved before l0.W had a gradient
    opt.load_state_dict(sd)
    again = opt.state_dict()
    assert sorted(again["state"]) == ["l0.b", "l1.W", "l1.b"]
    for k, st in sd["state"].items():
        for name, a in st.items():
            np.testing.assert_array_equal(again["state"][k][name], a)


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
@each
def test_model_and_optimizer_copy_and_train_on_identically(make, how):
    model, opt = trained(make, 2)
    pair = (model, opt)
    m2, o2 = pickle.loads(pickle.dumps(pair)) if how == "pickle" else copy.deepcopy(pair)
    assert o2.target is m2 or list(o2.target.params())[0] is m2.l0.W
    for s in range(2, 4):
        for m, o in ((model, opt), (m2, o2)):
            grads_for(m, s)
            o.update()
    for k, p in model.named_params().items():
        assert np.array_equal(p.data, m2.named_params()[k].data), k


# -- all or nothing ---------------------------------------------------------------------


def test_read_only_parameter_fails_before_anything_changes():
    model, opt = trained(lambda: O.Adam(0.1), 1)
    grads_for(model, 5)
    model.l1.b.data.flags.writeable = False
    before, snap = copies(model), opt_snapshot(opt)
    grads = {k: p.grad for k, p in model.named_params().items()}
    with pytest.raises(
        ValueError, match=r"parameter 3 \('l1.b'\) of shape \(2,\) holds a read-only"
    ):
        opt.update()
    for k, p in model.named_params().items():
        np.testing.assert_array_equal(p.data, before[k])
        assert p.grad is grads[k]
    assert_same_opt(opt, snap)


def test_reshaped_parameter_is_refused_until_the_state_is_cleared():
    p, q = Parameter(np.array([1.0, 2.0])), Parameter(np.array([3.0]))
    opt = O.MomentumSGD(0.1).setup([q, p])
    p.grad, q.grad = Variable(np.ones(2)), Variable(np.ones(1))
    opt.update()
    p.data = np.zeros(3)
    p.grad, q.grad = Variable(np.ones(3)), Variable(np.ones(1))
    q_before, snap = q.data.copy(), opt_snapshot(opt)
    with pytest.raises(ValueError, match=r"now has shape \(3,\) but its optimizer state 'v'"):
        opt.update()
    np.testing.assert_array_equal(q.data, q_before)
    np.testing.assert_array_equal(p.data, np.zeros(3))
    assert_same_opt(opt, snap)
    opt.clear_state()
    opt.update()
    np.testing.assert_allclose(p.data, [-0.1, -0.1, -0.1])


@pytest.mark.parametrize("make", [ALL["Adam"], ALL["MomentumSGD"]], ids=["Adam", "MomentumSGD"])
def test_a_raising_hook_after_weight_decay_changes_nothing(make):
    model, opt = trained(make, 1)
    opt.add_hook(O.WeightDecay(0.5))

    def boom(params):
        params[0].grad.data[...] = 0.0  # writes into the gradient WeightDecay made
        raise RuntimeError("hook failed")

    opt.add_hook(boom)
    grads_for(model, 7)
    grads = {k: (p.grad, p.grad.data, p.grad.data.copy()) for k, p in model.named_params().items()}
    before, snap = copies(model), opt_snapshot(opt)
    with pytest.raises(RuntimeError, match="hook failed"):
        opt.update()
    for k, p in model.named_params().items():
        np.testing.assert_array_equal(p.data, before[k])
        g, data, values = grads[k]
        assert p.grad is g and p.grad.data is data
        np.testing.assert_array_equal(data, values)
    assert_same_opt(opt, snap)


def test_hooks_cannot_leak_through_a_shared_gradient():
    a, b = Parameter(np.array([1.0])), Parameter(np.array([3.0]))
    shared = Variable(np.array([1.0]))
    a.grad = b.grad = shared
    opt = O.SGD(lr=1.0).setup([a, b])
    opt.add_hook(O.WeightDecay(0.1))
    opt.update()
    np.testing.assert_allclose([a.data[0], b.data[0]], [1.0 - 1.1, 3.0 - 1.3])
    np.testing.assert_array_equal(shared.data, [1.0])

    def double_in_place(params):
        for p in params:
            p.grad.data *= 2

    a.data[...], b.data[...] = 0.0, 0.0
    a.grad = b.grad = Variable(np.array([1.0]))
    opt = O.SGD(lr=1.0).setup([a, b])
    opt.add_hook(double_in_place)
    opt.update()
    np.testing.assert_allclose([a.data[0], b.data[0]], [-2.0, -2.0])


def test_in_place_hooks_work_on_gradients_that_share_memory_after_backward():

    a, b = Parameter(np.array([1.0, 2.0])), Parameter(np.array([3.0, 4.0]))
    F.sum(a + b).backward()

    def halve(params):
        for p in params:
            p.grad.data *= 0.5  # DeZero-style in-place hook code

    opt = O.SGD(lr=1.0).setup([a, b])
    opt.add_hook(halve)
    opt.update()
    np.testing.assert_array_equal(a.data, [0.5, 1.5])
    np.testing.assert_array_equal(b.data, [2.5, 3.5])


def test_clip_grad_clips_a_shared_gradient_once():
    a, b = Parameter(np.array([0.0])), Parameter(np.array([0.0]))
    a.grad = b.grad = Variable(np.array([3.0]))
    opt = O.SGD(lr=1.0).setup([a, b])
    opt.add_hook(O.ClipGrad(3.0 * np.sqrt(2) / 2))  # total norm 3*sqrt(2): halve each
    opt.update()
    np.testing.assert_allclose([a.data[0], b.data[0]], [-1.5, -1.5], rtol=1e-6)


def test_a_hook_writing_in_place_then_raising_leaves_the_gradients_as_they_were():
    model, opt = trained(lambda: O.MomentumSGD(0.1), 1)

    def scale_then_fail(params):
        for p in params:
            p.grad.data *= 10.0  # DeZero-style in-place hook code
        raise RuntimeError("late failure")

    opt.add_hook(scale_then_fail)
    grads_for(model, 3)
    grads = {k: (p.grad, p.grad.data.copy()) for k, p in model.named_params().items()}
    before = copies(model)
    with pytest.raises(RuntimeError, match="late failure"):
        opt.update()
    for k, p in model.named_params().items():
        assert p.grad is grads[k][0]
        np.testing.assert_array_equal(p.grad.data, grads[k][1])
        np.testing.assert_array_equal(p.data, before[k])


class Immutable(np.ndarray):
    """Stands for an array type that cannot change in place (JAX): ``+=`` makes a new one."""

    def __iadd__(self, other):
        return np.add(np.asarray(self), other).view(Immutable)


@each
def test_arrays_that_cannot_change_in_place_get_new_arrays(make):
    p = Parameter(np.array([1.0, -2.0]).view(Immutable))
    q = Parameter(np.array([1.0, -2.0]))
    opts = [make().setup([p]), make().setup([q])]
    kept = np.array([1.0, -2.0])
    for _ in range(2):
        before = p.data
        for param, opt in ((p, opts[0]), (q, opts[1])):
            param.grad = Variable(np.array([0.5, 0.25]))
            opt.update()
        assert p.data is not before and type(p.data) is Immutable
        np.testing.assert_array_equal(np.asarray(before), kept)  # the old array is untouched
        kept = np.asarray(p.data).copy()
    np.testing.assert_array_equal(np.asarray(p.data), q.data)


def test_loading_state_into_an_optimizer_never_set_up_is_refused_and_changes_nothing():
    _, opt = trained(lambda: O.Adam(0.1), 2)
    state = opt.state_dict()
    fresh = O.Adam(0.5)
    with pytest.raises(
        RuntimeError,
        match=r"^Adam.load_state_dict\(\): the optimizer has not been set up \(no target\); "
        r"call optimizer.setup\(model\) first",
    ):
        fresh.load_state_dict(state)
    assert fresh.target is None and fresh.lr == 0.5 and fresh.t == 0


def test_clip_grad_after_freeze_param_clips_the_gradients_left():
    """FreezeParam drops gradients, ClipGrad then read them (AttributeError on None); it
    clips what is left, as PyTorch's clip_grad_norm_ skips parameters without one."""
    a, b = Parameter(np.array([0.0])), Parameter(np.array([0.0, 0.0]))
    a.grad = Variable(np.array([100.0]))
    b.grad = Variable(np.array([3.0, 4.0]))  # norm 5: clipped to 1
    opt = O.SGD(lr=1.0).setup([a, b])
    opt.add_hook(O.FreezeParam(a))
    opt.add_hook(O.ClipGrad(1.0))
    opt.update()
    np.testing.assert_array_equal(a.data, [0.0])
    np.testing.assert_allclose(b.data, [-0.6, -0.8], rtol=1e-5)


def test_weight_decay_after_freeze_param_decays_the_gradients_left():
    """FreezeParam drops gradients; WeightDecay after it read them (AttributeError on None,
    nothing updated). It decays what is left, as torch.optim's weight_decay skips
    parameters without a gradient."""
    a, b = Parameter(np.array([1.0])), Parameter(np.array([2.0, -4.0]))
    a.grad = Variable(np.array([100.0]))
    b.grad = Variable(np.array([3.0, 5.0]))
    opt = O.SGD(lr=1.0).setup([a, b])
    opt.add_hook(O.FreezeParam(a))
    opt.add_hook(O.WeightDecay(0.5))
    opt.update()
    np.testing.assert_array_equal(a.data, [1.0])
    # b - lr * (g + 0.5 * b) = [2 - (3 + 1), -4 - (5 - 2)]
    np.testing.assert_array_equal(b.data, [-2.0, -7.0])


def test_freeze_param_leaves_the_gradients_of_parameters_outside_the_update():
    """FreezeParam dropped the gradient of every parameter it froze, also one the
    optimizer does not update: another optimizer's (a GAN's discriminator, frozen in the
    generator's optimizer) then silently skipped it, and a later hook that raised left it
    dropped. It drops only gradients of the parameters the update is given."""
    g, d = Parameter(np.array([1.0])), Parameter(np.array([2.0]))
    g.grad, d.grad = Variable(np.array([0.5])), Variable(np.array([4.0]))
    d_grad = d.grad
    opt_g = O.SGD(lr=1.0).setup([g])
    opt_g.add_hook(O.FreezeParam(d))
    opt_d = O.SGD(lr=0.25).setup([d])
    opt_g.update()
    assert d.grad is d_grad
    opt_d.update()
    np.testing.assert_array_equal(g.data, [0.5])
    np.testing.assert_array_equal(d.data, [1.0])  # 2 - 0.25 * 4

    def boom(params):
        raise RuntimeError("late failure")

    opt_g.add_hook(boom)
    with pytest.raises(RuntimeError, match="late failure"):
        opt_g.update()
    assert d.grad is d_grad
    np.testing.assert_array_equal(d_grad.data, [4.0])


def _edge_values(spec):
    """Floats on both sides of each bound of ``spec``, and the non-finite ones."""
    low, high = spec.low, spec.high
    vals = [low, math.nextafter(low, -math.inf), math.nextafter(low, math.inf), 0.5, 1.0]
    if high != math.inf:
        vals += [high, math.nextafter(high, -math.inf), math.nextafter(high, math.inf)]
    return [*vals, 1e300, sys.float_info.max, math.inf, -math.inf, math.nan, -0.0]


@each
def test_a_float_written_into_a_group_by_hand_is_checked_at_each_bound(make):
    """update() checks every group's hyperparameters (a fast path for floats in range):
    at each bound and just past it, a value is taken exactly when it lies in the
    documented interval and is finite; a refused one changes nothing."""
    opt = make()
    specs = type(opt).hyperparameter_specs()
    for name, spec in specs.items():
        if spec.key != name:  # an alias (Adam's alpha): its key is checked under lr
            continue
        for v in _edge_values(spec):
            p = Parameter(np.array([1.0, -2.0]))
            o = make().setup([p])
            o.param_groups[0][name] = v
            p.grad = Variable(np.array([0.5, 0.5]))
            before = p.data.copy()
            ok = spec.accepts(v) and math.isfinite(v)
            if ok:
                with np.errstate(all="ignore"):  # 1e300 and the largest float are taken
                    o.update()
                continue
            with pytest.raises((ValueError, TypeError), match=rf"update\(\): .*{name}"):
                o.update()
            np.testing.assert_array_equal(p.data, before)


@pytest.mark.parametrize(
    ("dtype", "grad_dtype"),
    [(np.float32, np.float64), (np.float64, np.float32), (np.float16, np.float16)],
)
@pytest.mark.parametrize(
    "make", [lambda: O.Adam(0.1), lambda: O.SGD(0.1, momentum=0.9), lambda: O.AdaDelta()]
)
def test_a_0d_parameter_updated_from_a_cast_gradient_keeps_state_arrays(make, dtype, grad_dtype):
    """A 0-d parameter whose step is computed apart (a gradient of another dtype, a
    float16 parameter, widened) kept numpy scalars as its state (numpy's arithmetic on 0-d
    arrays gives scalars): state_dict() and save_checkpoint then failed with "numpy.float32
    is not an array". The state is 0-d arrays of the parameter's dtype, and a state dict
    taken mid-run resumes the run bit for bit."""

    def run(resume_at=None):
        p = Parameter(np.array(1.5, dtype))
        opt = make().setup([p])
        for s in range(6):
            if s == resume_at:
                d = opt.state_dict()
                p, opt = Parameter(p.data.copy()), make()
                opt.setup([p]).load_state_dict(d)
            p.grad = Variable(np.array(0.25 * (s + 1), grad_dtype))
            opt.update()
        return p, opt

    p, opt = run()
    for a in opt._state[p].values():
        assert type(a) is np.ndarray and a.shape == () and a.dtype == dtype
    d = opt.state_dict()
    assert all(type(a) is np.ndarray for a in d["state"]["0"].values() if not isinstance(a, int))
    q, _ = run(resume_at=3)
    assert q.data.tobytes() == p.data.tobytes()
