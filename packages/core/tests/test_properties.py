"""Property-based gradient checks: first and second order against numerical gradients over
random shapes and dtypes (hypothesis, derandomized so every run draws the same cases)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import zerograd.functions as F
from zerograd.backends import as_array_of
from zerograd.testing import check_backward

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
DTYPES = st.sampled_from(["float64", "float32"])
ORDERS = pytest.mark.parametrize("order", [1, 2])


def _data(backend, shape, dtype, seed, low=-2.0, high=2.0, spread=False):
    """Random values in [low, high]; ``spread`` keeps them at least 0.05 apart (no ties, so
    max/min have a gradient the numerical one can see)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    if spread:
        values = low + (rng.permutation(n) + rng.uniform(0.0, 0.5, n)) * 0.1
    else:
        values = rng.uniform(low, high, n)
    return as_array_of(values.reshape(shape).astype(dtype), backend)


SEEDS = st.integers(0, 2**31 - 1)
BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a**b,
}


@ORDERS
@pytest.mark.parametrize("op", list(BINARY))
@SETTINGS
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
    dtype=DTYPES,
    seed=SEEDS,
)
def test_broadcasting_binary_ops(backend, op, order, shapes, dtype, seed):
    s0, s1 = shapes.input_shapes
    positive = op in ("div", "pow")  # keep away from 0 (div) and from negative bases (pow)
    a = _data(backend, s0, dtype, seed, 0.5 if op == "pow" else -2.0, 2.0)
    b = _data(backend, s1, dtype, seed + 1, 0.5 if positive else -2.0, 2.0)
    check_backward(BINARY[op], a, b, order=order)


def _axes(draw, ndim):
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none" or ndim == 0:
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    return tuple(draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim)))


REDUCTIONS = {"sum": F.sum, "mean": F.mean, "max": F.max, "min": F.min}


@ORDERS
@pytest.mark.parametrize("op", list(REDUCTIONS))
@SETTINGS
@given(
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3),
    data=st.data(),
    dtype=DTYPES,
    seed=SEEDS,
)
def test_reductions(backend, op, order, shape, data, dtype, seed):
    axis = _axes(data.draw, len(shape))
    keepdims = data.draw(st.booleans())
    extremum = op in ("max", "min")
    if extremum:
        dtype = "float64"  # float32's numerical step would cross between near values
    x = _data(backend, shape, dtype, seed, spread=extremum)
    check_backward(lambda v: REDUCTIONS[op](v, axis=axis, keepdims=keepdims), x, order=order)


@st.composite
def _big_and_small(draw):
    """A shape and a smaller one that broadcasts to it (leading axes dropped, some set to 1)."""
    big = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))
    small = list(big[draw(st.integers(0, len(big))) :])
    for i in range(len(small)):
        if draw(st.booleans()):
            small[i] = 1
    return big, tuple(small)


@ORDERS
@SETTINGS
@given(shapes=_big_and_small(), dtype=DTYPES, seed=SEEDS)
def test_sum_to(backend, order, shapes, dtype, seed):
    big, small = shapes
    x = _data(backend, big, dtype, seed)
    check_backward(lambda v: F.sum_to(v, small) * F.sum_to(v, small), x, order=order)


@ORDERS
@SETTINGS
@given(shapes=_big_and_small(), dtype=DTYPES, seed=SEEDS)
def test_broadcast_to(backend, order, shapes, dtype, seed):
    big, small = shapes
    x = _data(backend, small, dtype, seed)
    check_backward(lambda v: F.broadcast_to(v, big) * F.broadcast_to(v, big), x, order=order)


@st.composite
def _shape_and_index(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    if draw(st.booleans()):
        index = draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    else:  # an integer array on the first axis, repeats allowed (they must add up)
        ids = draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=1, max_size=5))
        index = (np.array(ids),) + tuple(slice(None) for _ in shape[1:])
    return shape, index


@ORDERS
@SETTINGS
@given(case=_shape_and_index(), dtype=DTYPES, seed=SEEDS)
def test_get_item(backend, order, case, dtype, seed):
    shape, index = case
    if isinstance(index, tuple):
        index = tuple(as_array_of(i, backend) if isinstance(i, np.ndarray) else i for i in index)
    x = _data(backend, shape, dtype, seed)
    check_backward(lambda v: F.get_item(v, index) * F.get_item(v, index), x, order=order)


@st.composite
def _matmul_shapes(draw):
    m, k, n = (draw(st.integers(1, 3)) for _ in range(3))
    kind = draw(st.sampled_from(["1d-1d", "1d-nd", "nd-1d", "nd-nd"]))
    batches = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    b0, b1 = batches.input_shapes
    left = (k,) if kind.startswith("1d") else b0 + (m, k)
    right = (k,) if kind.endswith("1d") else b1 + (k, n)
    return left, right


@ORDERS
@SETTINGS
@given(shapes=_matmul_shapes(), dtype=DTYPES, seed=SEEDS)
def test_matmul(backend, order, shapes, dtype, seed):
    left, right = shapes
    a = _data(backend, left, dtype, seed)
    b = _data(backend, right, dtype, seed + 1)
    check_backward(F.matmul, a, b, order=order)
