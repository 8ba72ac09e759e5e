"""Habits PyTorch and Chainer users bring: no_grad as a decorator, float(loss), detach,
comparisons, Variable.to returning the Variable, zerograd.seed; and book compatibility."""

import numpy as np
import pytest

import zerograd
import zerograd.functions as F
from zerograd import Config, Variable, no_grad, test_mode
from zerograd.backends import Backend, as_numpy
from zerograd.testing import array_allclose, array_equal


def test_no_grad_and_test_mode_work_bare_called_and_as_with():
    @no_grad
    def bare():
        return Config.enable_backprop, Variable(np.ones(1)) * 2

    @no_grad()
    def called(x):
        return x * 2

    flag, y = bare()
    assert flag is False and y.creator is None
    assert called(Variable(np.ones(1))).creator is None
    assert bare.__name__ == "bare"
    with no_grad():
        assert Config.enable_backprop is False
    assert Config.enable_backprop is True

    @test_mode
    def evaluate():
        return Config.train

    assert evaluate() is False and Config.train is True
    with pytest.raises(TypeError, match=r"no_grad: use it as `with no_grad\(\):`.*got int 5"):
        no_grad(5)


def test_float_int_bool_of_one_element_variables(arr):
    loss = F.sum(Variable(arr([1.25, 2.0])))
    assert float(loss) == 3.25 and type(float(loss)) is float
    assert int(Variable(arr([[7.9]]))) == 7
    assert bool(Variable(arr([0.0]))) is False and bool(Variable(arr(2.0))) is True
    x = Variable(arr([1.0, 2.0]))
    for to in (float, int, bool):
        with pytest.raises(
            TypeError,
            match=rf"{to.__name__}\(\) of a Variable needs exactly one element, "
            r"got shape \(2,\)",
        ):
            to(x)
    with pytest.raises(TypeError, match=r"got shape \(0,\)"):
        bool(Variable(arr(np.zeros(0))))


def test_detach_shares_data_and_cuts_the_graph(arr):
    x = Variable(arr([1.0, 2.0]))
    h = x * 3
    d = h.detach()
    assert d.data is h.data and d.creator is None and d.grad is None and type(d) is Variable
    y = F.sum(d * x)
    y.backward()
    np.testing.assert_allclose(as_numpy(x.grad), [3.0, 6.0])  # d counts as a constant


def test_comparisons_give_backend_boolean_arrays_without_graph(arr):
    x = Variable(arr([-1.0, 0.0, 2.0]))
    a = np.array([-1.0, 0.0, 2.0])
    array_type = type(arr([0.0]))
    for got, want in [
        (x > 0, a > 0),
        (x >= 0, a >= 0),
        (x < 0.5, a < 0.5),
        (x <= Variable(arr([0.0, 0.0, 0.0])), a <= 0),
        (x > [0.0, -1.0, 3.0], a > [0.0, -1.0, 3.0]),
        (0 < x, 0 < a),
        ([0.0, 0.0, 0.0] < x, np.zeros(3) < a),
    ]:
        assert type(got) is array_type and as_numpy(got).dtype == bool
        np.testing.assert_array_equal(as_numpy(got), want)


def test_variables_stay_hashable_with_identity_equality(arr):
    a, b = Variable(arr([1.0])), Variable(arr([1.0]))
    assert a == a and a != b and len({a, b}) == 2 and {a: 1}[a] == 1


def test_to_returns_the_variable(arr):
    x = Variable(arr([1.0]))
    assert x.to("numpy") is x and x.to_cpu() is x
    assert type(x.data) is np.ndarray


class _Seeded(Backend):
    name = "seeded"

    def __init__(self, available):
        self.available, self.seeds = available, []

    def owns(self, t):
        return False

    def is_available(self):
        return self.available

    def seed(self, n):
        self.seeds.append(n)


def test_seed_seeds_every_available_backend(monkeypatch):
    from zerograd.backends.registry import registry

    registry.ensure_loaded()
    on, off = _Seeded(True), _Seeded(False)
    monkeypatch.setitem(registry.backends, "seeded-on", on)
    monkeypatch.setitem(registry.backends, "seeded-off", off)
    zerograd.seed(np.int64(7))
    first = np.random.rand(3)
    zerograd.seed(7)
    np.testing.assert_array_equal(np.random.rand(3), first)
    assert on.seeds == [7, 7, 7, 7] and off.seeds == []


class _DrawsOnFirstSeed(_Seeded):
    """Its first seed imports 'its library', which draws from numpy's global state (as
    importing JAX does)."""

    def seed(self, n):
        if not self.seeds:
            np.random.rand()
        super().seed(n)


@pytest.mark.parametrize("first", [True, False], ids=["seeded-before-numpy", "after-numpy"])
def test_seed_is_repeatable_when_a_backend_draws_while_it_loads(monkeypatch, first):
    from zerograd.backends.registry import registry

    registry.ensure_loaded()
    backends = dict(registry.backends)
    drawer = _DrawsOnFirstSeed(True)
    order = {"drawer": drawer, **backends} if first else {**backends, "drawer": drawer}
    monkeypatch.setattr(registry, "backends", order)
    np.random.seed(7)
    expected = np.random.rand(3)
    zerograd.seed(7)  # the drawer's first seed draws once, after numpy may have been seeded
    np.testing.assert_array_equal(np.random.rand(3), expected)


@pytest.mark.parametrize(
    "n, err, match",
    [
        ("1", TypeError, r"zerograd.seed: the seed must be an int, got '1'"),
        (1.5, TypeError, "must be an int"),
        (-1, ValueError, r"zerograd.seed: the seed must be in \[0, 2\*\*32\), got -1"),
        (2**32, ValueError, "got 4294967296"),
    ],
)
def test_seed_refuses_what_numpy_would_not_take(n, err, match):
    with pytest.raises(err, match=match):
        zerograd.seed(n)


def test_setup_variable_is_a_harmless_no_op():
    assert zerograd.setup_variable() is None
    y = Variable(np.array(2.0)) * 3 + 1
    assert float(y) == 7.0


def test_array_allclose_broadcasts_like_numpy_and_dezero(arr):
    assert array_allclose(Variable(arr([[1.0, 1.0], [1.0, 1.0]])), 1.0)
    assert array_allclose(arr([1.0, 2.0]), [[1.0, 2.0], [1.0, 2.00001]])
    assert not array_allclose(arr([1.0, 2.0]), [[1.0, 2.0], [1.0, 2.1]])
    assert array_equal([1, 2], arr([1.0, 2.0]))
    assert not array_equal(arr([1.0]), arr([[1.0]]))  # numpy.array_equal: shapes must match


# -- PyTorch habits (issue 42): argmax, backward(retain_graph=...) -------------------------
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_argmax_is_the_backends_argmax_as_an_array(rand, to_np, axis, keepdims):
    data = rand(4, 5)
    x = Variable(data)
    got = x.argmax(axis, keepdims=keepdims)
    assert not isinstance(got, Variable)  # an index has no gradient, and == compares values
    expected = np.argmax(to_np(data), axis=axis, keepdims=keepdims)
    np.testing.assert_array_equal(to_np(got), expected)
    np.testing.assert_array_equal(to_np(x.argmax(dim=axis, keepdims=keepdims)), expected)
    assert x.creator is None and x.grad is None


def test_argmax_gives_an_accuracy_with_elementwise_equality(arr, to_np):
    scores = Variable(arr([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]))
    labels = arr([1, 0, 0], "int64")
    assert float(to_np(scores.argmax(1) == labels).mean()) == pytest.approx(2 / 3)
    assert int(to_np(Variable(arr(5.0)).argmax())) == 0  # 0-d: the one element


def test_argmax_refuses_axis_and_dim_that_disagree(arr):
    with pytest.raises(ValueError, match=r"Variable.argmax: axis=0 and dim=1 name the same"):
        Variable(arr([[1.0, 2.0]])).argmax(0, dim=1)


def test_backward_takes_retain_graph_and_keeps_the_graph_either_way(arr, to_np):
    x = Variable(arr(3.0))
    y = x * x
    y.backward(retain_graph=True)
    y.backward(retain_graph=False)  # the graph is kept anyway: the second pass adds up
    assert float(to_np(x.grad.data)) == 12.0
    with pytest.raises(TypeError, match=r"^backward: retain_graph must be True or False, got 1"):
        y.backward(retain_graph=1)
    assert float(to_np(x.grad.data)) == 12.0  # the refused call changed nothing
