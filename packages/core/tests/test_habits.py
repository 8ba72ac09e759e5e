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


# -- PyTorch's keywords on the reductions and shape functions -----------------------------
def _bare(f, *args, **kwargs):
    """``f(...)``'s value and its inputs' gradients (of the sum of its output)."""
    xs = [Variable(a) for a in args]
    y = f(*xs, **kwargs)
    F.sum(y).backward()
    return y, [x.grad for x in xs]


@pytest.mark.parametrize("kind", ["function", "method"])
def test_sum_and_mean_take_pytorchs_dim_and_keepdim(rand, to_np, kind):
    data = rand(3, 4)
    ref = to_np(data)
    for name, reference in (("sum", np.sum), ("mean", np.mean)):
        call = (
            getattr(F, name) if kind == "function" else (lambda v, n=name, **k: getattr(v, n)(**k))
        )
        for keywords, numpy_keywords in (
            ({"dim": 1}, {"axis": 1}),
            ({"dim": 0, "keepdim": True}, {"axis": 0, "keepdims": True}),
            ({"dim": (0, 1)}, {"axis": (0, 1)}),
            ({"keepdim": True}, {"keepdims": True}),
            ({"axis": -1, "dim": -1}, {"axis": -1}),  # one argument, given twice alike
        ):
            y, (g,) = _bare(call, data, **keywords)
            np.testing.assert_allclose(to_np(y.data), reference(ref, **numpy_keywords), rtol=1e-12)
            n = ref.size // np.asarray(reference(ref, **numpy_keywords)).size
            np.testing.assert_allclose(
                to_np(g.data), np.full((3, 4), 1.0 if name == "sum" else 1 / n)
            )


def test_sum_and_mean_refuse_dim_and_axis_that_disagree(rand):
    x = Variable(rand(2, 3))
    with pytest.raises(ValueError) as caught:
        F.sum(x, axis=0, dim=1)
    assert str(caught.value) == (
        "sum: axis=0 and dim=1 name the same argument (dim is PyTorch's name for axis); "
        "pass one of them."
    )
    with pytest.raises(ValueError, match=r"^mean: keepdims=True and keepdim=False name the same"):
        x.mean(keepdims=True, keepdim=False)
    assert x.grad is None and x.creator is None


@pytest.mark.parametrize(
    "name, indices", [("max", "x.argmax(axis=1)"), ("min", "(-x).argmax(axis=1)")]
)
def test_max_and_min_refuse_pytorchs_dim_naming_axis_and_the_indices(rand, to_np, name, indices):
    """PyTorch's max(x, dim) returns values and indices: taking dim= would hand back one
    Variable, whose rows ``values, indices = F.max(x, dim=1)`` would unpack in silence."""
    x = Variable(rand(2, 3))
    for call in (lambda: getattr(F, name)(x, dim=1), lambda: getattr(x, name)(dim=1)):
        with pytest.raises(TypeError) as caught:
            call()
        assert str(caught.value) == (
            f"{name}: dim= is PyTorch's keyword, not zerograd's (DeZero's): PyTorch's "
            f"{name}(x, dim) returns values and indices; write F.{name}(x, axis=1) for the "
            f"values (PyTorch's a{name}) and {indices} for the indices."
        )
    with pytest.raises(TypeError) as caught:
        getattr(F, name)(x, axis=1, keepdim=True)
    assert str(caught.value) == (
        f"{name}: keepdim= is PyTorch's keyword, not zerograd's (DeZero's): write keepdims=: "
        f"F.{name}(x, axis=1, keepdims=True)."
    )
    with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'out'$"):
        getattr(F, name)(x, out=None)
    assert x.grad is None and x.creator is None
    # what the message says to write gives PyTorch's values and indices
    values = getattr(F, name)(x, axis=1)
    picked = eval(indices, {"x": x})  # noqa: S307
    np.testing.assert_array_equal(to_np(values.data), getattr(np, name)(to_np(x.data), axis=1))
    np.testing.assert_array_equal(to_np(picked), getattr(np, f"arg{name}")(to_np(x.data), axis=1))


@pytest.mark.parametrize("name", ["concatenate", "cat", "concat", "stack"])
def test_concatenate_cat_concat_and_stack_take_pytorchs_dim(rand, to_np, name):
    join = getattr(F, name)  # concat: the array API standard's name, numpy 2's, PyTorch's
    a, b = rand(2, 3, seed=1), rand(2, 3, seed=2)
    ref = np.stack if name == "stack" else np.concatenate
    for dim in (0, 1, -1):
        y, (ga, gb) = _bare(lambda u, v, d=dim: join([u, v], dim=d), a, b)
        np.testing.assert_array_equal(to_np(y.data), ref([to_np(a), to_np(b)], axis=dim))
        np.testing.assert_array_equal(to_np(ga.data), np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"axis=1 and dim=0 name the same argument"):
        join([a, b], axis=1, dim=0)


def test_transpose_refuses_pytorchs_dim0_and_dim1_naming_the_permutation_that_swaps(rand):
    """PyTorch's transpose(dim0, dim1) swaps two axes; zerograd's (numpy's, DeZero's) takes
    the new order of every axis."""
    x = Variable(rand(2, 3, 4))
    for call in (lambda: x.transpose(dim0=0, dim1=2), lambda: F.transpose(x, dim0=0, dim1=2)):
        with pytest.raises(TypeError) as caught:
            call()
        assert str(caught.value) == (
            "transpose: dim0= is PyTorch's keyword, not zerograd's (DeZero's): transpose takes "
            "the new order of every axis, as numpy's (DeZero's), not two axes to swap; to swap "
            "axes 0 and 2 of this 3-D input write transpose(x, (2, 1, 0)) or x.transpose(2, 1, 0)."
        )
    assert x.transpose(2, 1, 0).shape == (4, 3, 2)  # what the message says swaps them
    with pytest.raises(TypeError, match=r"to swap two axes, list every axis"):
        F.transpose(x, dim1=2)
    with pytest.raises(TypeError, match=r"^transpose\(\) got an unexpected keyword argument 'ax'$"):
        x.transpose(ax=(1, 0, 2))
    # two axes by position: numpy's error, with the permutation PyTorch's meaning gives
    with pytest.raises(ValueError) as caught:
        x.transpose(0, 2)
    assert str(caught.value) == (
        "transpose: axes (0, 2) are not a permutation of the 3 axes of the input; pass each of "
        "0..2 (or its negative) exactly once (PyTorch's transpose(dim0, dim1) swaps two axes; "
        "to swap axes 0 and 2 write transpose(x, (2, 1, 0)))."
    )
    assert x.grad is None and x.creator is None


def test_transpose_of_two_axes_of_a_matrix_is_numpys_permutation_not_a_swap(rand, to_np):
    # x.transpose(0, 1) of a 2-D x keeps its order (numpy's); PyTorch's swaps: write
    # x.transpose() or x.T (x.transpose(1, 0))
    x = Variable(rand(2, 3))
    np.testing.assert_array_equal(to_np(x.transpose(0, 1).data), to_np(x.data))
    np.testing.assert_array_equal(to_np(x.transpose(1, 0).data), to_np(x.data).T)
    np.testing.assert_array_equal(to_np(x.T.data), to_np(x.data).T)


def test_variable_reshape_takes_the_shape_keyword(rand, to_np):
    x = Variable(rand(2, 6))
    y = x.reshape(shape=(3, 4))
    np.testing.assert_array_equal(to_np(y.data), to_np(x.data).reshape(3, 4))
    assert x.reshape(shape=-1).shape == (12,)
    with pytest.raises(TypeError) as caught:
        x.reshape(3, 4, shape=(3, 4))
    assert str(caught.value) == (
        "Variable.reshape: the shape is given twice, by position (3, 4) and as shape=(3, 4); "
        "give one of them"
    )
    with pytest.raises(
        TypeError, match=r"^Variable.reshape\(\) got an unexpected keyword .*'size'"
    ):
        x.reshape(size=(3, 4))


def test_flatten_refuses_pytorchs_start_dim_saying_what_it_keeps(rand):
    x = Variable(rand(2, 3, 4))
    with pytest.raises(TypeError) as caught:
        F.flatten(x, start_dim=1)
    assert str(caught.value).startswith(
        "flatten: start_dim= is PyTorch's keyword, not zerograd's (DeZero's): flatten keeps the "
        "first axis and joins all the others, as PyTorch's flatten(x, start_dim=1): write "
        "F.flatten(x); to join other axes, reshape: "
    )
    assert F.flatten(x).shape == (2, 12)
    assert F.reshape(x, (x.shape[0], x.shape[1], -1)).shape == (2, 3, 4)
    with pytest.raises(TypeError, match=r"^flatten\(\) got an unexpected keyword argument 'axis'$"):
        F.flatten(x, axis=1)
