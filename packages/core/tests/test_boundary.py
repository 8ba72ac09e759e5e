"""Garbage is refused at the boundary with one TypeError naming the call, what it got and
what it accepts; lists are accepted wherever an op accepts data."""

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Parameter, Variable
from zerograd.backends import as_numpy


@pytest.mark.parametrize("cls", [Variable, Parameter])
def test_variable_of_a_variable_is_refused(cls, arr):
    x = Variable(arr([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"Variable\(data\): data is already a Variable.*detach"):
        cls(x)


@pytest.mark.parametrize(
    "data",
    [
        np.array(["a", "b"]),
        np.array([b"a"]),
        np.array([None, 1.0], dtype=object),
        np.array(["2020-01-01"], dtype="datetime64[D]"),
        np.array([1], dtype="timedelta64[s]"),
        np.str_("a"),
    ],
    ids=["str", "bytes", "object", "datetime", "timedelta", "str scalar"],
)
def test_non_numeric_arrays_are_refused(data):
    with pytest.raises(TypeError, match=r"Variable\(data\): data has dtype .* give bool, integer"):
        Variable(data)


L = [[1.0, 2.0], [3.0, 4.0]]
NP = np.array(L)

# (name, call on a list, the same call on numpy arrays)
LIST_CALLS = [
    ("reshape", lambda x: F.reshape(x, (4, 1)), lambda a: a.reshape(4, 1)),
    ("transpose", F.transpose, np.transpose),
    (
        "broadcast_to",
        lambda x: F.broadcast_to(x, (3, 2, 2)),
        lambda a: np.broadcast_to(a, (3, 2, 2)),
    ),
    ("sum_to", lambda x: F.sum_to(x, (2,)), lambda a: a.sum(axis=0)),
    ("expand_dims", lambda x: F.expand_dims(x, 0), lambda a: a[None]),
    ("flatten", F.flatten, lambda a: a.reshape(2, -1)),
    ("sum", F.sum, np.sum),
    ("mean", lambda x: F.mean(x, axis=1), lambda a: a.mean(axis=1)),
    ("max", F.max, np.max),
    ("min", F.min, np.min),
    ("exp", F.exp, np.exp),
    ("log", F.log, np.log),
    ("sqrt", F.sqrt, np.sqrt),
    ("clip", lambda x: F.clip(x, 1.5, 3.5), lambda a: np.clip(a, 1.5, 3.5)),
    ("get_item", lambda x: F.get_item(x, 1), lambda a: a[1]),
    ("matmul", lambda x: F.matmul(x, L), lambda a: a @ a),
    ("concatenate", lambda x: F.concatenate([x, L]), lambda a: np.concatenate([a, a])),
    ("stack", lambda x: F.stack([x, L]), lambda a: np.stack([a, a])),
    ("add", lambda x: F.add(x, L), lambda a: a + a),
    ("pow", lambda x: F.pow(x, 2), lambda a: a**2),
]


@pytest.mark.parametrize("name, call, ref", LIST_CALLS, ids=[c[0] for c in LIST_CALLS])
def test_lists_are_accepted_wherever_an_op_takes_data(name, call, ref):
    y = call(L)
    assert isinstance(y, Variable)
    np.testing.assert_allclose(as_numpy(y), ref(NP))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: F.sum(None), r"Sum: input 0: got None \(NoneType\), which is not numeric"),
        (lambda: F.max(None), r"Max: input 0: got None"),
        (lambda: F.min("abc"), r"Min: input 0: got 'abc' \(str\)"),
        (lambda: F.transpose("abc"), r"Transpose: input 0: got 'abc' \(str\)"),
        (lambda: F.exp(None), r"Exp: input 0: got None.*give a Variable, an array"),
        (lambda: F.mean(None), r"mean: got None"),
        (lambda: F.reshape(None, (1,)), r"reshape: got None"),
        (lambda: F.broadcast_to("a", (2,)), r"broadcast_to: got 'a'"),
        (lambda: F.sum_to(None, ()), r"sum_to: got None"),
        (lambda: F.flatten(None), r"flatten: got None"),
        (lambda: F.expand_dims(None, 0), r"expand_dims: got None"),
        (lambda: Variable(NP) + None, r"Add: input 1: got None"),
        (lambda: "a" * Variable(NP), r"Mul: input 1: got 'a' \(str\)"),
        (lambda: F.matmul(["a"], Variable(NP)), r"MatMul: input 0: got \['a'\] \(list\)"),
        (lambda: F.concatenate([Variable(NP), None]), r"Concatenate: input 1: got None"),
        (
            lambda: F.sum(NP, axis="a"),
            r"sum: axis must be None, an int or a tuple of ints, got 'a'",
        ),
        (lambda: F.max(NP, axis=[0, "b"]), r"max: axis must be None, an int or a tuple of ints"),
        (lambda: F.transpose(NP, "ab"), r"transpose: axes must be None or a sequence of ints"),
        (lambda: F.reshape(NP, ("a", 2)), r"reshape: the shape must be a tuple of ints"),
    ],
)
def test_garbage_is_refused_with_one_type_error_naming_the_function(call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_mean_of_nothing_is_nan_with_numpy_warning(arr):
    x = Variable(arr(np.zeros(0)))
    with pytest.warns(RuntimeWarning, match=r"mean of empty slice \(input of shape \(0,\)\)"):
        y = F.mean(x)
    assert np.isnan(float(y))
    with pytest.warns(RuntimeWarning, match="mean of empty slice"):
        y = F.mean(Variable(arr(np.zeros((0, 3)))), axis=0)
    np.testing.assert_array_equal(as_numpy(y), np.full(3, np.nan))
    y = F.mean(Variable(arr(np.zeros((0, 3)))), axis=1)  # nothing to average: no warning
    assert y.shape == (0,) and as_numpy(y).dtype == np.float64


def test_flatten_of_0d_gives_one_element_as_numpy():
    y = F.flatten(Variable(np.array(3.0)))
    assert y.shape == np.array(3.0).flatten().shape == (1,)
    y.backward()


@pytest.mark.parametrize(
    "name, call",
    [
        ("sum", lambda k: F.sum(NP, 0, keepdims=k)),
        ("max", lambda k: F.max(NP, 0, keepdims=k)),
        ("min", lambda k: F.min(NP, 0, keepdims=k)),
        ("mean", lambda k: F.mean(NP, 0, keepdims=k)),
        ("sum", lambda k: Variable(NP).sum(0, k)),
        ("Variable.argmax", lambda k: Variable(NP).argmax(0, keepdims=k)),
    ],
)
def test_keepdims_is_a_bool_as_zerograd_checks_flag_says(name, call):
    """numpy's bools count (np.True_ was refused with "must be True or False, got
    np.True_"); numbers are refused (keepdims=2 meant True; argmax took any value)."""
    assert np.shape(as_numpy(call(np.True_))) == (1, 2)
    assert np.shape(as_numpy(call(np.False_))) == (2,)
    for bad in (1, 0, 2, "yes", None):
        with pytest.raises(TypeError) as info:
            call(bad)
        assert str(info.value) == f"{name}: keepdims must be True or False, got {bad!r}"


def test_batched_matmul_mismatch_names_both_shapes():
    a, b = Variable(np.ones((2, 3, 4))), Variable(np.ones((3, 4, 5)))
    with pytest.raises(
        ValueError,
        match=r"matmul: the batch axes of shapes \(2, 3, 4\) and \(3, 4, 5\) do not broadcast: "
        r"\(2,\) against \(3,\)",
    ):
        F.matmul(a, b)


@pytest.mark.parametrize(
    "call, err, match",
    [
        (lambda: F.sum(NP, (0, 0)), ValueError, r"sum: axis \(0, 0\) names one axis twice"),
        (lambda: F.mean(NP, (1, -1)), ValueError, r"mean: axis \(1, -1\) names one axis twice"),
        (lambda: F.sum(np.array(1.0), 0), ValueError, r"sum: axis 0 .*it has none: use axis=None"),
        (lambda: F.sum(NP, keepdims="yes"), TypeError, "sum: keepdims must be True or False"),
        (lambda: F.max(NP, keepdims=None), TypeError, "max: keepdims must be True or False"),
        (lambda: F.expand_dims(NP, "a"), TypeError, "expand_dims: axis must be an int, got 'a'"),
        (lambda: F.broadcast_to(NP, "ab"), TypeError, r"broadcast_to: the shape must be an int"),
        (lambda: F.sum_to(NP, [None]), TypeError, r"sum_to: the shape must be an int"),
        (lambda: F.concatenate(NP), TypeError, r"concatenate: xs must be a list or tuple.*ndarray"),
        (lambda: F.stack(Variable(NP)), TypeError, r"stack: xs must be a list or tuple.*Variable"),
        (lambda: F.clip(NP, "a", 1), TypeError, r"clip: x_min must be a number, an array or None"),
        (lambda: F.clip(NP, None, None), TypeError, r"clip: give at least one of x_min and x_max"),
        (lambda: Variable(NP) + np.ones(3), ValueError, r"Add: shapes \(2, 2\) and \(3,\) do not"),
        (lambda: F.mul(np.ones(3), NP), ValueError, r"Mul: shapes \(3,\) and \(2, 2\) do not"),
        (lambda: F.transpose(np.array(1.0), (0,)), ValueError, r"0 axes of the input; pass \(\)"),
        (lambda: F.max(np.zeros((0, 3)), axis=0), ValueError, r"max: .*no elements along the"),
        (lambda: Variable(None) + 1, TypeError, r"Add: input 0 is a Variable whose data is None"),
        (lambda: F.exp(Variable(None)), TypeError, r"Exp: input 0 is a Variable whose data is"),
    ],
)
def test_wrong_arguments_get_one_clear_error(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_edge_shapes_follow_numpy():
    # reducing a non-empty axis of an empty array gives an empty result, as numpy's
    y = F.max(Variable(np.zeros((0, 3))), axis=1)
    assert y.shape == np.zeros((0, 3)).max(axis=1).shape == (0,)
    assert F.flatten(np.zeros((0, 3))).shape == (0, 3)  # numpy cannot infer -1 here
    assert F.broadcast_to(np.ones(3), 3).shape == np.broadcast_to(np.ones(3), 3).shape
    assert F.sum_to(np.ones((2, 3)), 3).shape == (3,)


@pytest.mark.parametrize("lo, hi", [(None, 0.5), (0.5, None), (0.3, 1.0)])
def test_clip_with_one_open_bound_has_the_right_gradient(lo, hi):
    a = np.array([0.2, 0.7, 1.5])
    x = Variable(a)
    y = F.clip(x, lo, hi)
    np.testing.assert_array_equal(y.data, np.clip(a, lo, hi))
    F.sum(y).backward()
    inside = np.ones(3, bool)
    if lo is not None:
        inside &= a >= lo
    if hi is not None:
        inside &= a <= hi
    np.testing.assert_array_equal(x.grad.data, inside.astype(float))


def test_as_array_of_a_variable_is_its_data(arr):
    import zerograd

    x = Variable(arr([1.0, 2.0]))
    assert zerograd.as_array(x) is x.data
    assert zerograd.as_array(x, like=x.data) is x.data


@pytest.mark.parametrize("name", ["retain_grad", "create_graph"])
def test_backwards_switches_are_bools_as_zerograd_checks_flag_says(name):
    """retain_grad="no" meant True (read by its truth); numpy's bools count."""
    x = Variable(np.array([1.0, 2.0]))
    y = F.sum(x * x)
    for bad in ("no", 1, None):
        with pytest.raises(TypeError) as info:
            y.backward(**{name: bad})
        assert str(info.value) == f"backward: {name} must be True or False, got {bad!r}"
        assert x.grad is None  # nothing changed
    y.backward(**{name: np.True_})
    np.testing.assert_array_equal(as_numpy(x.grad.data), [2.0, 4.0])


@pytest.mark.parametrize("name", ["grad", "value_and_grad", "jacrev", "jacfwd", "vjp", "jvp"])
def test_the_transforms_has_aux_is_a_bool(name):
    """has_aux="no" meant True (read by its truth); numpy's bools count."""
    from zerograd import func

    def make(has_aux):
        f = lambda x: (F.sum(x * x), 0) if has_aux else F.sum(x * x)  # noqa: E731
        x = np.array([1.0, 2.0])
        if name == "vjp":
            return func.vjp(f, x, has_aux=has_aux)
        if name == "jvp":
            return func.jvp(f, (x,), (np.ones(2),), has_aux=has_aux)
        return getattr(func, name)(f, has_aux=has_aux)(x)

    for bad in ("no", 1, None):
        with pytest.raises(TypeError) as info:
            make(bad)
        assert str(info.value) == f"{name}: has_aux must be True or False, got {bad!r}"
    assert len(make(np.True_)) == (3 if name in ("vjp", "jvp") else 2)
