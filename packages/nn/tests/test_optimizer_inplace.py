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
    data = p.data
    rng = np.random.default_rng(0)
    p.grad = Variable(rng.standard_normal((2, 2)).astype(np.float32))
    opt.update()
    state = opt.state(p, *names)
    for _ in range(3):
        p.grad = Variable(rng.standard_normal((2, 2)).astype(np.float32))
        opt.update()
        assert p.data is data and p.data.dtype == np.float32
        assert all(a is b for a, b in zip(opt.state(p, *names), state))  # no new arrays


ALL = {
    "SGD": lambda **k: O.SGD(0.1, **k),
    **{name: make for name, (make, _) in STATEFUL.items()},
}


def _three_steps(make, wd, dtype, path, monkeypatch):
    """A parameter after three updates, through one of the three paths to the same bits."""
    backend = get_backend("numpy")
    opt = make(weight_decay=wd)
    if path == "new arrays":  # the general path: _compute's new arrays, added at the end
        monkeypatch.setattr(type(opt), "_step", None)
    elif path == "default compute_into":  # what any backend with mutable arrays gets
        monkeypatch.setattr(type(backend), "compute_into", Backend.compute_into)
    p = Parameter(np.array([[1.0, -2.0, 0.0], [0.5, 3.0, -0.25]], dtype))
    opt.setup([p])
    rng = np.random.default_rng(7)
    for _ in range(3):
        p.grad = Variable(rng.standard_normal((2, 3)).astype(dtype))
        opt.update()
    return p.data


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("wd", [0.0, 0.1])
@pytest.mark.parametrize("name", list(ALL))
def test_in_place_steps_give_the_bits_of_the_new_array_path(name, wd, dtype, monkeypatch):
    got = {}
    for path in ("numpy out=", "default compute_into", "new arrays"):
        with monkeypatch.context() as mp:
            got[path] = _three_steps(ALL[name], wd, dtype, path, mp)
    assert got["numpy out="].dtype == dtype
    np.testing.assert_array_equal(got["numpy out="], got["new arrays"])
    np.testing.assert_array_equal(got["default compute_into"], got["new arrays"])


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


def test_a_subclass_overriding_compute_is_not_bypassed_by_the_in_place_path():
    class Frozen(O.Adam):
        def _compute(self, data, grad, state, hp):
            return data * 0, {"m": state["m"], "v": state["v"]}

    p, q = Parameter(np.array([1.0, 2.0])), Parameter(np.array([1.0, 2.0]))
    frozen, adam = Frozen().setup([p]), O.Adam().setup([q])
    moments = None
    for _ in range(2):
        for param, opt in ((p, frozen), (q, adam)):
            param.grad = Variable(np.array([0.5, -0.5]))
            opt.update()
        moments = moments or adam.state(q, "m", "v")
    np.testing.assert_array_equal(p.data, [1.0, 2.0])  # Frozen's own _compute ran
    assert all(a is b for a, b in zip(adam.state(q, "m", "v"), moments))  # Adam's in place
    np.testing.assert_allclose(q.data, [1.0 - 0.002, 2.0 + 0.002])  # two steps of lr * sign


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
