"""The shape, reduction, join and matmul derivatives are vjps: one body, two engines.

Their values are checked numerically (first and second order, both engines) in
test_functions.py; here: first-order backward records nothing, raw operands cost no
product, and shape-only derivatives need no input data.
"""

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Variable
from zerograd.backends import as_numpy
from zerograd.functions.broadcast import BroadcastTo, SumTo
from zerograd.functions.join import Concatenate, Stack
from zerograd.functions.linalg import MatMul
from zerograd.functions.reduction import Max, Min, Sum
from zerograd.functions.shape import GetItem, GetItemGrad, Reshape, Transpose
from zerograd.namespaces import array_ops_by_type
from zerograd.testing import check_backward

rng = np.random.default_rng(7)


def normal(*shape):
    return rng.standard_normal(shape)


def distinct(*shape):
    return rng.permutation(int(np.prod(shape))).reshape(shape) * 0.5


CLASSES = [
    BroadcastTo,
    SumTo,
    Sum,
    Max,
    Min,
    Reshape,
    Transpose,
    GetItem,
    GetItemGrad,
    Concatenate,
    Stack,
    MatMul,
]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_each_derivative_is_one_vjp(cls):
    owners = [k.__name__ for k in cls.__mro__[:-2] if "backward" in vars(k)]
    assert not owners, f"{cls.__name__}: backward defined in {owners}; define vjp only"
    assert cls._vjp, f"{cls.__name__}: the engine does not run it as a vjp"


# name: (function, inputs); every op in the graph is one of this module's functions
GRAPHS = {
    "reshape": (lambda a: F.reshape(a, (3, 2)), [normal(2, 3)]),
    "transpose": (F.transpose, [normal(2, 3)]),
    "transpose_axes": (lambda a: F.transpose(a, (1, -1, 0)), [normal(2, 3, 4)]),
    "sum_axis": (lambda a: F.sum(a, axis=1), [normal(2, 3, 2)]),
    "sum_keep": (lambda a: F.sum(a, axis=(0, -1), keepdims=True), [normal(2, 3, 2)]),
    "broadcast_to": (lambda a: F.broadcast_to(a, (2, 3)), [normal(3)]),
    "sum_to": (lambda a: F.sum_to(a, (1, 3)), [normal(2, 3)]),
    "max_axis": (lambda a: F.max(a, axis=-1), [distinct(3, 4)]),
    "min_all": (F.min, [distinct(3, 4)]),
    "get_item": (lambda a: F.get_item(a, np.array([0, 0, 2])), [normal(3, 2)]),
    "get_item_twice": (lambda a: a[1:][:, 0], [normal(3, 2)]),
    "concatenate": (lambda a, b: F.concatenate([a, b], axis=-1), [normal(2, 3), normal(2, 1)]),
    "stack": (lambda a, b: F.stack([a, b], axis=1), [normal(2, 3), normal(2, 3)]),
    "matmul_2d": (F.matmul, [normal(2, 3), normal(3, 4)]),
    "matmul_vec_vec": (F.matmul, [normal(3), normal(3)]),
    "matmul_batched": (F.matmul, [normal(2, 1, 2, 3), normal(3, 3, 2)]),
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_first_order_backward_calls_no_function(name, arr, request):
    fn, inputs = GRAPHS[name]
    xs = [Variable(arr(x)) for x in inputs]
    y = fn(*xs)
    calls = request.getfixturevalue("function_calls")
    y.backward()
    assert calls == [], f"{name}: first-order backward ran {calls}; a vjp on arrays runs none"
    assert all(x.grad is not None for x in xs)


def _dense(g):
    return None if g is None else as_numpy(g.data if isinstance(g, Variable) else g)


MATMUL_SHAPES = {
    "2d": ((2, 3), (3, 4)),
    "vec_mat": ((3,), (3, 4)),
    "batched": ((2, 2, 3), (3, 4)),
    "batched_w": ((3,), (2, 3, 4)),
}


@pytest.mark.parametrize("raw", [0, 1], ids=["raw_x", "raw_w"])
@pytest.mark.parametrize("case", sorted(MATMUL_SHAPES))
def test_matmul_skips_the_gradient_of_a_raw_operand(case, raw, arr):
    shapes = MATMUL_SHAPES[case]
    data = [arr(normal(*s)) for s in shapes]
    operands = [d if i == raw else Variable(d) for i, d in enumerate(data)]
    y = F.matmul(*operands)
    f = y.creator
    gy = arr(normal(*y.shape))
    first = f.vjp(array_ops_by_type[type(gy)], tuple(data), y.data, gy)  # the first-order engine
    higher = f.backward(Variable(gy))  # the higher-order engine
    # matmul is linear in each operand: the gradient's element at i is the response to e_i
    x, w, g = (as_numpy(d) for d in (*data, gy))
    k = 1 - raw
    expected = np.zeros(shapes[k])
    for i in np.ndindex(shapes[k]):
        e = np.zeros(shapes[k])
        e[i] = 1.0
        expected[i] = np.sum(g * (np.matmul(e, w) if k == 0 else np.matmul(x, e)))
    for got in (first, higher):
        assert got[raw] is None, f"matmul {case}: computed the raw operand's gradient"
        np.testing.assert_allclose(_dense(got[k]), expected, rtol=1e-12, atol=1e-12)


def test_concatenate_and_stack_skip_raw_operands(arr):
    a, b, c = arr(normal(2, 3)), arr(normal(2, 1)), arr(normal(2, 2))
    v = Variable(c)
    y = F.concatenate([a, b, v], axis=1)
    gy = arr(np.arange(12.0).reshape(2, 6))
    for got in (
        y.creator.vjp(array_ops_by_type[type(gy)], (a, b, c), y.data, gy),
        y.creator.backward(Variable(gy)),
    ):
        assert got[0] is None and got[1] is None
        np.testing.assert_array_equal(_dense(got[2]), [[4.0, 5.0], [10.0, 11.0]])
    y = F.stack([v, c], axis=-1)
    gy = arr(np.arange(8.0).reshape(2, 2, 2))
    for got in (
        y.creator.vjp(array_ops_by_type[type(gy)], (c, c), y.data, gy),
        y.creator.backward(Variable(gy)),
    ):
        assert got[1] is None
        np.testing.assert_array_equal(_dense(got[0]), [[0.0, 2.0], [4.0, 6.0]])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize(
    "case",
    [
        ((2, 3), (3, 4), 0),
        ((3,), (2, 3, 4), 0),
        ((2, 1, 2, 3), (3, 3, 2), 1),
        ((3,), (3,), 1),
    ],
    ids=["2d", "vec_batched", "batched_bcast", "vec_vec"],
)
def test_matmul_with_one_raw_operand_is_differentiable_twice(case, order, dtype, arr):
    xs, ws, raw = case
    const = arr(normal(*(xs, ws)[raw]), dtype)
    var = arr(normal(*(ws, xs)[raw]), dtype)
    if raw == 0:
        check_backward(lambda w: F.matmul(const, w) ** 2, var, order=order)
    else:
        check_backward(lambda x: F.matmul(x, const) ** 2, var, order=order)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize(
    "name",
    [
        "max_all_0d",
        "max_lead_axis",
        "min_tuple_axes",
        "sum_0d",
        "sum_lead_axes",
        "stack_first",
        "cat_three",
        "get_item_bool",
    ],
)
def test_more_shapes_differentiate_twice(name, order, dtype, arr):
    fn, inputs = {
        "max_all_0d": (lambda a: F.max(a) * a, [distinct(3, 2)]),
        "min_tuple_axes": (lambda a: F.min(a, axis=(0, 2)) * 3.0, [distinct(2, 3, 2)]),
        "sum_0d": (lambda a: F.sum(a) ** 2, [normal()]),
        "sum_lead_axes": (lambda a: F.sum(a, axis=(1, 0)) ** 2, [normal(2, 3, 2)]),
        "max_lead_axis": (lambda a: F.max(a, axis=0) ** 2, [distinct(3, 2, 2)]),
        "stack_first": (lambda a, b: F.stack([a, b]) ** 2, [normal(2), normal(2)]),
        "cat_three": (lambda a, b: F.concatenate([a, b, a]) ** 2, [normal(1, 2), normal(2, 2)]),
        "get_item_bool": (lambda a: a[np.array([True, False, True])] ** 2, [normal(3, 2)]),
    }[name]
    check_backward(fn, *[arr(x, dtype) for x in inputs], order=order)


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: F.reshape(t, (6,)),
        lambda t: F.sum(t, axis=0),
        lambda t: F.sum_to(t, (3,)),
        lambda t: F.broadcast_to(t, (4, 2, 3)),
    ],
    ids=["reshape", "sum", "sum_to", "broadcast_to"],
)
def test_shape_only_derivatives_work_after_the_input_data_is_dropped(fn, arr):
    x = Variable(arr(normal(2, 3)))
    t = x * 2.0
    y = fn(t)
    t.data = None  # DeZero's memory trick (linear_simple): only the shape is needed
    y.backward()
    scale = 4.0 if y.ndim == 3 else 1.0
    np.testing.assert_array_equal(as_numpy(x.grad), np.full((2, 3), 2.0 * scale))
