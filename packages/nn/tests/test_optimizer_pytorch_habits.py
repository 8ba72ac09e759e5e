"""PyTorch's spellings of the optimizers: params first, lr=, step(), zero_grad(), momentum=."""

import pickle

import numpy as np
import pytest

from zerograd import Parameter, Variable
from zerograd_nn import optimizers as O
from zerograd_nn import schedulers as S
from zerograd_nn.layers import Linear
from zerograd_nn.models import MLP


def _model():
    model = MLP((3, 2))
    model(np.ones((1, 4), np.float32))  # makes the first layer's W
    return model


def _grads(model, seed=0):
    rng = np.random.default_rng(seed)
    for p in model.params():
        p.grad = Variable(rng.standard_normal(p.shape).astype(p.data.dtype))


@pytest.mark.parametrize(
    ("torch_style", "dezero_style"),
    [
        (lambda m: O.SGD(m.params(), lr=0.1), lambda m: O.SGD(lr=0.1).setup(m)),
        (lambda m: O.SGD(list(m.params()), 0.1), lambda m: O.SGD(0.1).setup(m)),
        (lambda m: O.Adam(m.params(), lr=1e-2), lambda m: O.Adam(alpha=1e-2).setup(m)),
        (lambda m: O.Adam(m, 1e-2), lambda m: O.Adam(1e-2).setup(m)),
        (lambda m: O.AdamW(m.params(), lr=1e-2), lambda m: O.AdamW(1e-2).setup(m)),
        (lambda m: O.MomentumSGD(m.params(), lr=0.1), lambda m: O.MomentumSGD(0.1).setup(m)),
        (lambda m: O.AdaGrad(tuple(m.params())), lambda m: O.AdaGrad().setup(m)),
        (
            lambda m: O.AdaDelta(iter(list(m.params())), lr=0.5),
            lambda m: O.AdaDelta(lr=0.5).setup(m),
        ),
    ],
)
def test_params_first_sets_the_optimizer_up_as_setup_does(torch_style, dezero_style):
    m1, m2 = _model(), _model()
    for p, q in zip(m1.params(), m2.params()):
        q.data = p.data.copy()
    o1, o2 = torch_style(m1), dezero_style(m2)
    assert type(o1) is type(o2) and o1.lr == o2.lr
    for step in range(3):
        _grads(m1, step), _grads(m2, step)
        o1.step()
        o2.update()
    for p, q in zip(m1.params(), m2.params()):
        np.testing.assert_array_equal(p.data, q.data)


def test_a_number_first_is_still_dezeros_lr_and_alpha():
    assert O.SGD(0.5).lr == 0.5 and O.SGD(0.5).target is None
    assert O.Adam(0.02).alpha == 0.02 and O.MomentumSGD(0.3, 0.5).momentum == 0.5
    assert O.SGD(np.float32(0.25)).lr == 0.25


def test_adam_refuses_alpha_and_lr_together_with_params_first():
    with pytest.raises(ValueError, match=r"Adam: alpha=0.5 and lr=0.1 name the same step size"):
        O.Adam(_model().params(), 0.5, lr=0.1)


@pytest.mark.parametrize("cls", [O.Adam, O.AdamW])
def test_a_group_giving_alpha_and_lr_apart_is_refused_and_changes_nothing(cls):
    """A group {"lr": 0.5, "alpha": 0.1} trained with the step size of the key written
    last (0.1 here), dropping the other without a word; the constructor refuses the same
    pair. The same value under both names is one step size."""
    model = _model()
    opt = cls(lr=0.01).setup(model)
    before = opt.param_groups
    w, b = list(model.l0.params()), list(model.l1.params())
    with pytest.raises(ValueError, match=r"group 1 gives lr=0.5 and alpha=0.1, two names of"):
        opt.setup([{"params": w}, {"params": b, "lr": 0.5, "alpha": 0.1}])
    assert opt.param_groups is before and opt.lr == 0.01
    opt.setup([{"params": w}, {"params": b, "lr": 0.5, "alpha": 0.5}])
    assert [g["lr"] for g in opt.param_groups] == [0.01, 0.5]


def test_pytorch_param_groups_are_setups_groups():
    model = _model()
    opt = O.SGD([{"params": model.l0.params()}, {"params": model.l1.params(), "lr": 0.5}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    before = model.l1.b.data.copy()
    _grads(model)
    g = model.l1.b.grad.data.copy()
    opt.step()
    np.testing.assert_allclose(model.l1.b.data, before - 0.5 * g, rtol=1e-6)


def test_zero_grad_clears_the_gradients_of_what_it_updates():
    model, other = _model(), Parameter(np.ones(2))
    other.grad = Variable(np.ones(2))
    opt = O.Adam(model.params())
    _grads(model)
    opt.zero_grad()
    assert all(p.grad is None for p in model.params())
    assert other.grad is not None  # not one of the optimizer's
    opt2 = O.SGD([{"params": [other]}, {"params": model.params()}])
    _grads(model)
    opt2.zero_grad()
    assert other.grad is None and all(p.grad is None for p in model.params())


def test_zero_grad_and_step_before_setup_say_what_to_do():
    with pytest.raises(
        RuntimeError,
        match=r"SGD.zero_grad\(\): the optimizer has not been set up \(no target\); "
        r"call optimizer.setup",
    ):
        O.SGD().zero_grad()
    with pytest.raises(
        RuntimeError,
        match=r"Adam.update\(\): the optimizer has not been set up \(no target\); "
        r"call optimizer.setup",
    ):
        O.Adam().step()


def test_step_is_update_for_dezero_style_subclasses_too():
    class Halve(O.Optimizer):
        def update_one(self, param):
            param.data -= 0.5 * param.grad.data

    p = Parameter(np.array([1.0]))
    opt = Halve().setup([p])
    p.grad = Variable(np.array([1.0]))
    opt.step()
    np.testing.assert_array_equal(p.data, [0.5])


def test_a_single_parameter_or_a_string_first_is_refused_as_an_lr():
    words = r"SGD\(...\): the first argument is one Parameter; give a list of Parameters"
    with pytest.raises(TypeError, match=words):
        O.SGD(Parameter(np.ones(1)), lr=0.1)
    with pytest.raises(TypeError, match=r"SGD: lr must be a real number, got '0.1' \(str\)"):
        O.SGD("0.1")


# -- SGD(momentum=...) -------------------------------------------------------------------


def test_sgd_momentum_is_pytorchs_formula():
    p = Parameter(np.array([1.0, -2.0]))
    opt = O.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01)
    grads = [np.array([0.5, 1.0]), np.array([-1.0, 0.25]), np.array([2.0, 2.0])]
    w, v = np.array([1.0, -2.0]), np.zeros(2)
    for g in grads:
        p.grad = Variable(g.copy())
        opt.step()
        d = g + 0.01 * w  # by hand: torch.optim.SGD with dampening 0, nesterov False
        v = 0.9 * v + d
        w = w - 0.1 * v
        np.testing.assert_allclose(p.data, w, rtol=1e-15)
        np.testing.assert_allclose(opt.state(p, "v")[0], v, rtol=1e-15)


def test_sgd_momentum_scales_the_whole_velocity_by_the_scheduled_lr():
    # PyTorch's velocity holds gradients: halving lr halves the whole next step, where
    # MomentumSGD's (steps taken at the old lr) would not be halved
    p, q = Parameter(np.array([0.0])), Parameter(np.array([0.0]))
    sgd, msgd = O.SGD([p], lr=1.0, momentum=0.5), O.MomentumSGD([q], lr=1.0, momentum=0.5)
    s1, s2 = S.StepLR(sgd, 1, 0.5), S.StepLR(msgd, 1, 0.5)
    for x in (p, q):
        x.grad = Variable(np.array([1.0]))
    sgd.step(), msgd.step(), s1.step(), s2.step()
    for x in (p, q):
        x.grad = Variable(np.array([1.0]))
    sgd.step(), msgd.step()
    np.testing.assert_array_equal(p.data, [-1.0 - 0.5 * (0.5 * 1.0 + 1.0)])  # -1.75
    np.testing.assert_array_equal(q.data, [-1.0 + (0.5 * -1.0 - 0.5 * 1.0)])  # -2.0


def test_sgd_without_momentum_keeps_no_state_and_its_state_dict_format():
    p = Parameter(np.array([1.0]))
    opt = O.SGD([p], lr=0.1)
    p.grad = Variable(np.array([1.0]))
    opt.step()
    sd = opt.state_dict()
    assert sd["state"] == {} and sd["groups"][0]["momentum"] == 0.0


def test_an_sgd_saved_before_momentum_existed_still_loads_and_updates():
    p = Parameter(np.array([1.0]))
    opt = O.SGD([p], lr=0.1)
    sd = opt.state_dict()
    for d in (sd["defaults"], *sd["groups"]):
        del d["momentum"]  # as written by the SGD without momentum
    fresh = O.SGD([p], lr=0.5, momentum=0.0)
    fresh.load_state_dict(sd)
    assert fresh.lr == 0.1
    p2, old = pickle.loads(pickle.dumps((p, opt)))
    for g in (old.defaults, *old.param_groups):
        del g["momentum"]  # an SGD pickled before momentum existed
    p2.grad = Variable(np.array([1.0]))
    old.step()
    np.testing.assert_allclose(p2.data, [0.9])


def test_linear_and_optimizers_compose_the_pytorch_way():
    layer = Linear(2, in_size=3)
    opt = O.SGD(layer.params(), lr=0.1, momentum=0.9)
    x = Variable(np.ones((4, 3), np.float32))
    for _ in range(3):
        opt.zero_grad()
        loss = (layer(x) ** 2).sum()
        loss.backward()
        opt.step()
    assert opt.state(layer.W, "v")[0].shape == (3, 2)


# -- keys written into a parameter group -----------------------------------------------


@pytest.mark.parametrize(
    ("make", "key", "value", "words"),
    [
        (
            lambda ps: O.Adam(ps, lr=0.1),
            "betas",
            (0.95, 0.999),
            r"^Adam\.update\(\): a parameter group holds \['betas'\], which Adam does not "
            r"read \(its keys: \['beta1', 'beta2', 'eps', 'lr', 'weight_decay'\]\); nothing "
            r"was updated\. PyTorch's betas are group\['beta1'\] and group\['beta2'\]\. ",
        ),
        (
            lambda ps: O.SGD(ps, lr=0.1, momentum=0.9),
            "nesterov",
            True,
            r"^SGD\.update\(\): a parameter group holds \['nesterov'\], which SGD does not "
            r"read \(its keys: \['lr', 'momentum', 'weight_decay'\]\); nothing was updated",
        ),
        (
            lambda ps: O.AdamW(ps),
            "amsgrad",
            True,
            r"holds \['amsgrad'\], which AdamW does not read",
        ),
        (lambda ps: O.AdaGrad(ps), "momentum", 0.9, r"holds \['momentum'\], which AdaGrad"),
    ],
)
def test_a_key_the_optimizer_does_not_read_written_into_a_group_is_refused(make, key, value, words):
    """PyTorch's OneCycleLR habit, ``group["betas"] = ...``, changed nothing, silently."""
    p = Parameter(np.array([1.0, -2.0]))
    opt = make([p])
    p.grad = Variable(np.array([0.5, 1.0]))
    opt.step()
    before, state = p.data.copy(), opt.state_dict()
    opt.param_groups[0][key] = value
    with pytest.raises(ValueError, match=words + r".*Remove it: del optimizer\.param_groups"):
        opt.step()
    np.testing.assert_array_equal(p.data, before)
    after = opt.state_dict()
    assert after["counters"] == state["counters"]
    for k, entry in state["state"].items():
        for name, a in entry.items():
            np.testing.assert_array_equal(after["state"][k][name], a)
    with pytest.raises(ValueError, match=words):
        opt.update_one(p)
    del opt.param_groups[0][key]
    opt.step()
    assert not np.array_equal(p.data, before)


def test_betas_is_beta1_and_beta2():
    """PyTorch's ``betas=(b1, b2)`` gives the same optimizer as DeZero's two keywords."""
    p = Parameter(np.array([1.0, 2.0]))
    torch_style = O.Adam([p], lr=0.1, betas=(0.8, 0.9))
    assert torch_style.defaults == O.Adam(lr=0.1, beta1=0.8, beta2=0.9).defaults
    assert O.AdamW([p], betas=(0.5, 0.6)).defaults["beta2"] == 0.6
    with pytest.raises(TypeError, match=r"give two numbers \(beta1, beta2\), got \(0.9,\)"):
        O.Adam([p], betas=(0.9,))
    with pytest.raises(TypeError, match="give betas=.* or beta1=/beta2=, not both"):
        O.Adam([p], betas=(0.9, 0.99), beta1=0.5)


@pytest.mark.parametrize(
    ("cls", "keyword", "says"),
    [
        (O.SGD, "nesterov", "no Nesterov momentum"),
        (O.SGD, "dampening", "no dampening"),
        (O.Adam, "amsgrad", "no AMSGrad"),
        (O.Adam, "maximize", "negated loss"),
        (O.AdaGrad, "lr_decay", "scheduler"),
        (O.AdaGrad, "initial_accumulator_value", "starts at zero"),
        (O.Adam, "foreach", "flat buffers already"),
        (O.SGD, "fused", "flat buffers already"),
    ],
)
def test_a_pytorch_keyword_without_counterpart_says_so(cls, keyword, says):
    p = Parameter(np.array([1.0]))
    with pytest.raises(
        TypeError, match=rf"{cls.__name__}\({keyword}=\.\.\.\): PyTorch's option"
    ) as e:
        cls([p], **{keyword: True})
    assert says in str(e.value)
    assert "takes: " in str(e.value)


def test_zero_grad_set_to_none_false_zeros_in_place():
    p = Parameter(np.array([1.0, 2.0]))
    q = Parameter(np.array([3.0]))  # no gradient: stays None
    opt = O.SGD([p, q], lr=0.1)
    p.grad = Variable(np.array([3.0, 4.0]))
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g
    np.testing.assert_array_equal(g.data, [0.0, 0.0])
    assert q.grad is None
    opt.zero_grad()
    assert p.grad is None
    with pytest.raises(TypeError, match="set_to_none must be True or False"):
        opt.zero_grad(set_to_none="no")


@pytest.mark.parametrize("steady", [True, False])
def test_a_non_parameter_put_into_a_group_by_hand_is_named(steady):
    """It met Python's AttributeError ('int' object has no attribute 'grad')."""
    p = Parameter(np.array([1.0, 2.0]))
    p.grad = Variable(np.array([1.0, 1.0]))
    opt = O.Adam([p], lr=0.1)
    if steady:
        opt.update()  # packed: the next update takes the steady path
    before, t = p.data.copy(), opt.t
    opt.param_groups[0]["params"].append(5)
    with pytest.raises(TypeError, match=r"param_groups\[0\]\['params'\] holds int, not only"):
        opt.update()
    np.testing.assert_array_equal(p.data, before)
    assert opt.t == t


def test_a_group_appended_by_hand_without_its_hyperparameters_is_named():
    """It met "beta1 must be a real number, got None", which named no group."""
    p, q = Parameter(np.array([1.0])), Parameter(np.array([2.0]))
    p.grad, q.grad = Variable(np.array([1.0])), Variable(np.array([1.0]))
    opt = O.Adam([p], lr=0.1)
    opt.param_groups.append({"params": [q]})
    with pytest.raises(ValueError, match=r"a parameter group has no 'beta1': a group appended"):
        opt.update()
    np.testing.assert_array_equal(p.data, [1.0])
    np.testing.assert_array_equal(q.data, [2.0])


def test_a_groups_betas_are_its_beta1_and_beta2():
    """PyTorch's per-group betas, accepted by the constructor already, were an unknown key
    in a group given to setup."""
    model = _model()
    w, b = list(model.l0.params()), list(model.l1.params())
    opt = O.Adam([{"params": w}, {"params": b, "betas": [0.5, 0.9]}], lr=0.01)
    assert [(g["beta1"], g["beta2"]) for g in opt.param_groups] == [(0.9, 0.999), (0.5, 0.9)]
    before = opt.param_groups
    with pytest.raises(TypeError, match=r"group 1: betas=\(0.5,\): give two numbers"):
        opt.setup([{"params": w}, {"params": b, "betas": (0.5,)}])
    with pytest.raises(TypeError, match=r"group 0: give betas=\(beta1, beta2\) or beta1="):
        opt.setup([{"params": w, "betas": (0.5, 0.9), "beta1": 0.5}])
    with pytest.raises(ValueError, match=r"beta2 must be a finite number in \[0, 1\)"):
        opt.setup([{"params": w, "betas": (0.5, 1.0)}])
    assert opt.param_groups is before
    with pytest.raises(ValueError, match=r"group 0 has unknown keys \['betas'\]"):
        O.SGD(lr=0.1).setup([{"params": w, "betas": (0.5, 0.9)}])


@pytest.mark.parametrize(
    ("call", "words"),
    [
        # torch.optim.Adadelta(params, 0.5) is lr=0.5; DeZero's first argument is rho
        (lambda ps: O.AdaDelta(ps, 0.5), r"AdaDelta\(params, 0.5\): PyTorch's Adadelta reads lr"),
        # torch.optim.Adagrad(params, 0.01, 1e-4): lr, lr_decay; DeZero's: lr, eps
        (lambda ps: O.AdaGrad(ps, 0.01, 1e-4), r"Adagrad reads lr_decay .* AdaGrad's eps"),
        (lambda ps: O.SGD(ps, 0.1, 0.9), r"SGD\(params, 0.1, 0.9\): PyTorch's SGD reads momentum"),
        (lambda ps: O.Adam(ps, 1e-3, (0.9, 0.99)), r"PyTorch's Adam reads betas .* Adam's beta1"),
    ],
)
def test_numbers_after_the_parameters_read_otherwise_by_pytorch_are_refused(call, words):
    """After the parameters (PyTorch's form), a positional number that PyTorch's optimizer
    reads as another hyperparameter than DeZero's order does was taken DeZero's way without
    a word (AdaDelta(params, 0.5) trained with rho=0.5 and lr=1). One TypeError names both
    readings; the first number, lr in both, still goes by position."""
    with pytest.raises(TypeError, match=words):
        call(_model().params())
    assert O.AdaGrad(_model().params(), 0.05).lr == 0.05
    assert O.Adam(_model().params(), 0.02).alpha == 0.02
    opt = O.AdaDelta(_model().params(), lr=0.5)
    assert (opt.lr, opt.rho) == (0.5, 0.95)
    assert O.AdaDelta(0.5).rho == 0.5 and O.MomentumSGD(_model().params(), 0.1, 0.5).momentum == 0.5
