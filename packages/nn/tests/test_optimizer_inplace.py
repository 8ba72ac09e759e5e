"""Optimizers: in-place updates, hyperparameter ranges, Adam's ``lr`` keyword."""

import numpy as np
import pytest

from zerograd import Parameter, Variable
from zerograd.backends import Backend, get_backend
from zerograd_nn import optimizers as O

STATEFUL = {
    "MomentumSGD": (lambda **k: O.MomentumSGD(0.1, **k), ("v",)),
    "AdaGrad": (lambda **k: O.AdaGrad(0.1, **k), ("h",)),
    "AdaDelta": (lambda **k: O.AdaDelta(**k), ("msg", "msdx")),
    "Adam": (lambda **k: O.Adam(0.1, **k), ("m", "v")),
    "AdamW": (lambda **k: O.AdamW(0.1, **k), ("m", "v")),
}


@pytest.mark.parametrize("name", list(STATEFUL))
@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_updates_write_into_the_parameter_and_its_state(name, wd):
    make, names = STATEFUL[name]
    p = Parameter(np.array([[1.0, -2.0], [0.5, 3.0]], np.float32))
    opt = make(weight_decay=wd).setup([p])
    rng = np.random.default_rng(0)
    p.grad = Variable(rng.standard_normal((2, 2)).astype(np.float32))
    opt.update()  # the first update packs p.data into the flat buffer (a view of it)
    data = p.data
    state = opt.state(p, *names)
    for _ in range(3):
        p.grad = Variable(rng.standard_normal((2, 2)).astype(np.float32))
        opt.update()
        assert p.data is data and p.data.dtype == np.float32
        assert all(a is b for a, b in zip(opt.state(p, *names), state))  # no new arrays


ALL = {
    "SGD": lambda **k: O.SGD(0.1, **k),
    "SGD-momentum": lambda **k: O.SGD(0.1, momentum=0.9, **k),
    **{name: make for name, (make, _) in STATEFUL.items()},
}
PATHS = ("numpy out=", "default compute_into", "new arrays")


def _steps(make, wd, dtype, path, monkeypatch, n=3, extras=False):
    """A parameter after ``n`` updates, through one of the three paths to the same bits.

    ``extras``: two groups (one with its own lr), WeightDecay and ClipGrad hooks.
    """
    backend = get_backend("numpy")
    opt = make(weight_decay=wd)
    if path == "new arrays":  # what immutable arrays (JAX) get: the rule's new arrays
        monkeypatch.setattr(type(backend), "writable", lambda self, x: False)
    elif path == "default compute_into":  # what any backend with mutable arrays gets
        monkeypatch.setattr(type(backend), "compute_into", Backend.compute_into)
    p = Parameter(np.array([[1.0, -2.0, 0.0], [0.5, 3.0, -0.25]], dtype))
    q = Parameter(np.array([0.5, -1.5], dtype))
    if extras:
        opt.setup([{"params": [p], "lr": 0.05}, {"params": [q]}])
        opt.add_hook(O.WeightDecay(0.01))
        opt.add_hook(O.ClipGrad(1.0))
    else:
        opt.setup([p])
    rng = np.random.default_rng(7)
    grads = []
    for _ in range(n):
        grads.append(rng.standard_normal((2, 3)).astype(dtype))
        p.grad = Variable(grads[-1].copy())
        q.grad = Variable(rng.standard_normal(2).astype(dtype))
        opt.update()
    return (np.concatenate([p.data.ravel(), q.data]) if extras else p.data), grads


@pytest.mark.parametrize("extras", [False, True], ids=["", "groups+hooks"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("wd", [0.0, 0.1])
@pytest.mark.parametrize("name", list(ALL))
def test_in_place_steps_give_the_bits_of_the_new_array_path(name, wd, dtype, extras, monkeypatch):
    got = {}
    for path in PATHS:
        with monkeypatch.context() as mp:
            got[path] = _steps(ALL[name], wd, dtype, path, mp, extras=extras)[0]
    assert got["numpy out="].dtype == dtype and got["new arrays"].dtype == dtype
    np.testing.assert_array_equal(got["numpy out="], got["new arrays"])
    np.testing.assert_array_equal(got["default compute_into"], got["new arrays"])


def _by_hand(name, p, grads, wd):
    """The optimizers' formulas written plainly (float64), step after step."""
    lr, eps, rho, b1, b2 = 0.1, 1e-8, 0.95, 0.9, 0.999
    p = p.astype(np.float64)
    v = h = msg = msdx = m = np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        g = g.astype(np.float64)
        if name != "AdamW":
            g = g + wd * p
        if name == "SGD":
            p = p - lr * g
        elif name == "SGD-momentum":  # PyTorch's: the velocity sums gradients
            v = 0.9 * v + g
            p = p - lr * v
        elif name == "MomentumSGD":
            v = 0.9 * v - lr * g
            p = p + v
        elif name == "AdaGrad":
            h = h + g * g
            p = p - lr * g / (np.sqrt(h) + eps)
        elif name == "AdaDelta":
            msg = rho * msg + (1 - rho) * g * g
            dx = np.sqrt((msdx + 1e-6) / (msg + 1e-6)) * g
            msdx = rho * msdx + (1 - rho) * dx * dx
            p = p - 1.0 * dx
        else:  # Adam, AdamW
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            step = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
            p = p - step * m / (np.sqrt(v) + eps) - (lr * wd * p if name == "AdamW" else 0)
    return p


@pytest.mark.parametrize("wd", [0.0, 0.1])
@pytest.mark.parametrize("name", list(ALL))
def test_every_path_follows_the_formula_by_hand(name, wd, monkeypatch):
    start = np.array([[1.0, -2.0, 0.0], [0.5, 3.0, -0.25]])
    for n in (1, 3):
        for path in PATHS:
            with monkeypatch.context() as mp:
                got, grads = _steps(ALL[name], wd, np.float64, path, mp, n)
            np.testing.assert_allclose(got, _by_hand(name, start, grads, wd), rtol=1e-12, atol=0)


def test_an_update_without_hooks_makes_no_variable_and_no_function(monkeypatch):
    import zerograd

    ps = [Parameter(np.ones((2, 3), np.float32)), Parameter(np.ones(3, np.float32))]
    opts = [make().setup(ps) for make in ALL.values()]
    for p in ps:
        p.grad = Variable(np.full(p.shape, 0.5, np.float32))

    def refuse(*args, **kwargs):
        raise AssertionError("the update made a Variable or called a Function")

    monkeypatch.setattr(Variable, "__init__", refuse)
    monkeypatch.setattr(zerograd.Function, "__call__", refuse)
    for opt in opts:
        opt.update()
    assert ps[0].data[0, 0] != 1.0


def test_arrays_the_backend_cannot_write_take_the_new_array_path(monkeypatch):
    backend = get_backend("numpy")
    monkeypatch.setattr(type(backend), "writable", lambda self, x: False)
    p = Parameter(np.array([1.0, 2.0]))
    opt = O.MomentumSGD(0.1).setup([p])
    p.grad = Variable(np.array([0.5, -0.5]))
    opt.update()
    (v,) = opt.state(p, "v")
    p.grad = Variable(np.array([0.5, -0.5]))
    opt.update()
    np.testing.assert_array_equal(v, [-0.05, 0.05])  # not written: a new array instead
    assert opt.state(p, "v")[0] is not v
    np.testing.assert_allclose(p.data, [1.0 - 0.05 - 0.095, 2.0 + 0.05 + 0.095])


class _Accumulate(O.Optimizer):
    """``a += grad; param -= lr * a``: a rule written once, as a subclass would."""

    lr = O.hyperparameter()
    _state_names = ("a",)

    def __init__(self, lr):
        super().__init__()
        self.lr = lr

    def _scratch_count(self, hp):
        return 1

    def _rule(self, u, data, grad, state, scratch, hp):
        a = u.add(state["a"], grad, out=state["a"])
        return u.multiply(a, -hp["lr"], out=scratch[0]), {"a": a}


@pytest.mark.parametrize("writable", [True, False])
def test_a_subclass_writes_its_rule_once_and_gets_both_paths(writable, monkeypatch):
    if not writable:
        monkeypatch.setattr(type(get_backend("numpy")), "writable", lambda self, x: False)
    p = Parameter(np.array([1.0, 2.0]))
    opt = _Accumulate(0.5).setup([p])
    p.grad = Variable(np.array([1.0, -1.0]))
    opt.update()
    (a,) = opt.state(p, "a")
    p.grad = Variable(np.array([1.0, 3.0]))
    opt.update()
    np.testing.assert_array_equal(p.data, [1.0 - 0.5 - 1.0, 2.0 + 0.5 - 1.0])
    np.testing.assert_array_equal(opt.state(p, "a")[0], [2.0, 2.0])
    assert (opt.state(p, "a")[0] is a) is writable  # written in place only where it can be


def test_a_subclass_hands_its_hyperparameters_to_the_base_which_sets_them_in_order():
    class Two(O.Optimizer):
        lr = O.hyperparameter()
        eps = O.hyperparameter(open=("low",))

        def __init__(self, lr, eps):
            super().__init__(lr=lr, eps=eps)

    opt = Two(0.1, 1e-3)
    assert list(opt.defaults.items()) == [("lr", 0.1), ("eps", 1e-3)]
    assert (opt.lr, opt.eps) == (0.1, 1e-3)
    with pytest.raises(ValueError, match=r"^Two: lr must be .*got -1\.0"):
        Two(-1.0, 0.0)  # both are bad: the first given is named
    with pytest.raises(ValueError, match=r"^Two: eps must be .*got 0\.0"):
        Two(0.1, 0.0)


# -- hyperparameter ranges --------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: O.Adam(beta1=1.0), r"Adam: beta1 must be a finite number in \[0, 1\), got 1.0"),
        (lambda: O.Adam(beta1=1.5), r"Adam: beta1 must be a finite number in \[0, 1\), got 1.5"),
        (lambda: O.Adam(beta2=1.0), r"Adam: beta2 must be a finite number in \[0, 1\), got 1.0"),
        (lambda: O.Adam(eps=0), r"Adam: eps must be a finite number > 0, got 0.0"),
        (lambda: O.AdamW(beta2=-0.1), r"AdamW: beta2 must be a finite number in \[0, 1\)"),
        (lambda: O.AdaGrad(eps=0.0), r"AdaGrad: eps must be a finite number > 0, got 0.0"),
        (lambda: O.AdaDelta(rho=1.5), r"AdaDelta: rho must be a finite number in \[0, 1\]"),
        (lambda: O.MomentumSGD(momentum=2), r"MomentumSGD: momentum must be a finite number in"),
    ],
)
def test_hyperparameters_out_of_range_are_refused_at_construction(make, words):
    with pytest.raises(ValueError, match=words):
        make()


def test_out_of_range_assignments_and_groups_change_nothing():
    p = Parameter(np.array([1.0]))
    opt = O.Adam().setup([p])
    with pytest.raises(ValueError, match=r"Adam: beta1 must be a finite number in \[0, 1\)"):
        opt.beta1 = 1.0
    assert opt.beta1 == 0.9 and opt.param_groups[0]["beta1"] == 0.9
    with pytest.raises(ValueError, match=r"Adam: eps must be a finite number > 0, got 0.0"):
        O.Adam().setup([{"params": [p], "eps": 0.0}])


@pytest.mark.parametrize(
    ("key", "value", "err", "words"),
    [
        ("lr", "x", TypeError, r"Adam.update\(\): lr must be a real number, got 'x' \(str\)"),
        ("beta1", 1.0, ValueError, r"Adam.update\(\): beta1 must be a finite number in \[0, 1\)"),
        ("eps", None, TypeError, r"Adam.update\(\): eps must be a real number, got None"),
    ],
)
def test_a_group_edited_by_hand_is_checked_before_anything_changes(key, value, err, words):
    a, b = Parameter(np.array([1.0, 2.0])), Parameter(np.array([3.0]))
    opt = O.Adam(0.1).setup([{"params": [a]}, {"params": [b]}])
    a.grad, b.grad = Variable(np.array([1.0, 1.0])), Variable(np.array([1.0]))
    opt.update()
    before = (a.data.copy(), b.data.copy(), opt.t, [x.copy() for x in opt.state(a, "m", "v")])
    opt.param_groups[1][key] = value
    with pytest.raises(err, match=words):
        opt.update()
    np.testing.assert_array_equal(a.data, before[0])
    np.testing.assert_array_equal(b.data, before[1])
    assert opt.t == before[2]
    for x, y in zip(opt.state(a, "m", "v"), before[3]):
        np.testing.assert_array_equal(x, y)


# -- Adam(lr=...) -----------------------------------------------------------------------


@pytest.mark.parametrize("make", [O.Adam, O.AdamW])
def test_adam_takes_lr_as_the_keyword_for_alpha(make):
    opt = make(lr=0.01)
    assert opt.alpha == 0.01 and opt.lr == 0.01
    assert make(alpha=0.02, lr=0.02).lr == 0.02
    with pytest.raises(ValueError, match=rf"{make.__name__}: alpha=0.5 and lr=0.1 name the same"):
        make(alpha=0.5, lr=0.1)


def _returns_instead_of_writing(self, op, x1, x2=None, *, out):
    """A plugin's mistake: the result made as a new array, ``out`` left as it was."""
    return getattr(np, op)(x1) if x2 is None else getattr(np, op)(x1, x2)


@pytest.mark.parametrize("size", [2, (1 << 16) + 1])  # packed flat, and one by one
@pytest.mark.parametrize("make", [lambda: O.SGD(0.1), lambda: O.Adam(0.1)])
def test_a_compute_into_that_does_not_write_is_refused_not_left_stale(size, make, monkeypatch):
    from zerograd.backends import BackendPluginError
    from zerograd_nn.optimizers.inplace import IntoArrays

    backend = get_backend("numpy")
    monkeypatch.setattr(type(backend), "compute_into", _returns_instead_of_writing)
    monkeypatch.setattr(IntoArrays, "_made", {})  # asked afresh, as for a new plugin
    p = Parameter(np.linspace(-1.0, 1.0, size))
    before = p.data.copy()
    opt = make().setup([p])
    p.grad = Variable(np.ones(size))
    saved = opt.state_dict()
    with pytest.raises(
        BackendPluginError,
        match=r"^zerograd-nn: backend 'numpy' \(plugin 'numpy', from zerograd-numpy\): "
        r"compute_into\('add', x1, x2, out=out\) left out as \[0\.0, 0\.0\] where \[2\.0, "
        r"6\.0\] belongs: it must write the result into out\. Nothing was updated\. Fix the "
        r"plugin \(zerograd\.testing\.conformance checks it\), or have writable\(\) answer "
        r"False, so that the optimizers make new arrays\.$",
    ):
        opt.update()
    np.testing.assert_array_equal(p.data, before)
    assert opt.state_dict() == saved  # no state, no step counted
