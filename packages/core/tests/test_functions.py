"""Every tensor function: values against numpy, gradients against numerical ones."""

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Variable
from zerograd.testing import check_backward

rng = np.random.default_rng(42)


def positive(shape):
    return rng.uniform(0.5, 2.0, shape)


def normal(shape):
    return rng.standard_normal(shape)


def distinct(shape):
    """Values far apart so max/min have unique winners and clip has no kink nearby."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.37 - n * 0.15).reshape(shape)


# name: (zerograd function, numpy reference, input makers)
CASES = {
    "add": (lambda a, b: a + b, np.add, [normal((2, 3)), normal((2, 3))]),
    "add_broadcast": (lambda a, b: a + b, np.add, [normal((2, 3)), normal((3,))]),
    "add_broadcast_keep": (F.add, np.add, [normal((4, 1, 3)), normal((2, 1))]),
    "sub": (lambda a, b: a - b, np.subtract, [normal((2, 3)), normal((2, 1))]),
    "mul": (lambda a, b: a * b, np.multiply, [normal((3, 2)), normal((1, 2))]),
    "div": (lambda a, b: a / b, np.divide, [normal((2, 3)), positive((2, 3))]),
    "div_broadcast": (F.div, np.divide, [normal((2, 3)), positive((3,))]),
    "neg": (lambda a: -a, np.negative, [normal((2, 3))]),
    "pow_const": (lambda a: a**3, lambda a: a**3, [normal((2, 3))]),
    "pow_frac": (lambda a: a**0.5, np.sqrt, [positive((4,))]),
    "pow_var": (lambda a, b: a**b, np.power, [positive((2, 3)), normal((2, 3))]),
    "rpow": (lambda a: 2.0**a, lambda a: 2.0**a, [normal((3,))]),
    "rsub": (lambda a: 1.0 - a, lambda a: 1.0 - a, [normal((3,))]),
    "rdiv": (lambda a: 1.0 / a, lambda a: 1.0 / a, [positive((3,))]),
    "exp": (F.exp, np.exp, [normal((2, 3))]),
    "log": (F.log, np.log, [positive((2, 3))]),
    "sin": (F.sin, np.sin, [normal((2, 3))]),
    "cos": (F.cos, np.cos, [normal((2, 3))]),
    "tanh": (F.tanh, np.tanh, [normal((2, 3))]),
    "square": (F.square, np.square, [normal((2, 3))]),
    "sqrt": (F.sqrt, np.sqrt, [positive((2, 3))]),
    "clip": (lambda a: F.clip(a, -1.0, 1.0), lambda a: np.clip(a, -1, 1), [distinct((3, 4))]),
    "reshape": (lambda a: F.reshape(a, (3, 2)), lambda a: a.reshape(3, 2), [normal((2, 3))]),
    "reshape_infer": (lambda a: a.reshape(-1), lambda a: a.reshape(-1), [normal((2, 3))]),
    "transpose": (F.transpose, np.transpose, [normal((2, 3))]),
    "transpose_axes": (
        lambda a: F.transpose(a, (1, -1, 0)),
        lambda a: a.transpose(1, 2, 0),
        [normal((2, 3, 4))],
    ),
    "T": (lambda a: a.T, lambda a: a.T, [normal((2, 3))]),
    "get_item_int": (lambda a: a[1], lambda a: a[1], [normal((3, 4))]),
    "get_item_slice": (lambda a: a[:, 1:3], lambda a: a[:, 1:3], [normal((3, 4))]),
    "get_item_repeat": (
        lambda a: F.get_item(a, np.array([0, 0, 2, 0])),
        lambda a: a[np.array([0, 0, 2, 0])],
        [normal((3, 2))],
    ),
    "get_item_2d_repeat": (
        lambda a: a[np.array([0, 1, 1]), np.array([2, 0, 0])],
        lambda a: a[np.array([0, 1, 1]), np.array([2, 0, 0])],
        [normal((2, 3))],
    ),
    "expand_dims": (lambda a: F.expand_dims(a, -1), lambda a: a[..., None], [normal((2, 3))]),
    "flatten": (F.flatten, lambda a: a.reshape(2, -1), [normal((2, 3, 2))]),
    "sum": (F.sum, np.sum, [normal((2, 3))]),
    "sum_axis": (lambda a: F.sum(a, axis=1), lambda a: a.sum(axis=1), [normal((2, 3, 2))]),
    "sum_neg_axis_keep": (
        lambda a: a.sum(axis=(0, -1), keepdims=True),
        lambda a: a.sum(axis=(0, -1), keepdims=True),
        [normal((2, 3, 2))],
    ),
    "mean": (F.mean, np.mean, [normal((2, 3))]),
    "average_axis": (lambda a: F.average(a, 0), lambda a: a.mean(0), [normal((4, 3))]),
    "sum_to": (lambda a: F.sum_to(a, (1, 3)), lambda a: a.sum(0, keepdims=True), [normal((2, 3))]),
    "sum_to_lead": (lambda a: F.sum_to(a, (3,)), lambda a: a.sum(0), [normal((2, 3))]),
    "broadcast_to": (
        lambda a: F.broadcast_to(a, (2, 3)),
        lambda a: np.broadcast_to(a, (2, 3)),
        [normal((3,))],
    ),
    "max": (F.max, np.max, [distinct((3, 4))]),
    "max_axis": (lambda a: F.max(a, axis=-1), lambda a: a.max(-1), [distinct((3, 4))]),
    "min_keep": (
        lambda a: a.min(axis=0, keepdims=True),
        lambda a: a.min(0, keepdims=True),
        [distinct((3, 4))],
    ),
    "matmul_2d": (F.matmul, np.matmul, [normal((2, 3)), normal((3, 4))]),
    "matmul_op": (lambda a, b: a @ b, np.matmul, [normal((2, 3)), normal((3, 4))]),
    "matmul_vec_mat": (F.matmul, np.matmul, [normal((3,)), normal((3, 4))]),
    "matmul_mat_vec": (F.matmul, np.matmul, [normal((2, 3)), normal((3,))]),
    "matmul_vec_vec": (F.matmul, np.matmul, [normal((3,)), normal((3,))]),
    "matmul_batched": (F.matmul, np.matmul, [normal((2, 2, 3)), normal((3, 4))]),
    "matmul_batched_bcast": (F.matmul, np.matmul, [normal((2, 1, 2, 3)), normal((3, 3, 2))]),
    "matmul_vec_batched": (F.matmul, np.matmul, [normal((3,)), normal((2, 3, 4))]),
    "concatenate": (
        lambda a, b: F.concatenate([a, b], axis=-1),
        lambda a, b: np.concatenate([a, b], -1),
        [normal((2, 3)), normal((2, 2))],
    ),
    "cat": (
        lambda a, b: F.cat([a, b]),
        lambda a, b: np.concatenate([a, b]),
        [normal((1, 3)), normal((2, 3))],
    ),
    "stack": (
        lambda a, b: F.stack([a, b], axis=1),
        lambda a, b: np.stack([a, b], 1),
        [normal((2, 3)), normal((2, 3))],
    ),
}

LINEAR = {  # second derivative is identically zero: still checked, must be zero
    "add",
    "add_broadcast",
    "add_broadcast_keep",
    "sub",
    "neg",
    "reshape",
    "reshape_infer",
    "transpose",
    "transpose_axes",
    "T",
    "get_item_int",
    "get_item_slice",
    "get_item_repeat",
    "get_item_2d_repeat",
    "expand_dims",
    "flatten",
    "sum",
    "sum_axis",
    "sum_neg_axis_keep",
    "mean",
    "average_axis",
    "sum_to",
    "sum_to_lead",
    "broadcast_to",
    "concatenate",
    "cat",
    "stack",
    "rsub",
    "clip",
    "max",
    "max_axis",
    "min_keep",
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_value(name, dtype, arr, to_np):
    fn, ref, inputs = CASES[name]
    xs = [Variable(arr(x, dtype)) for x in inputs]  # Variables: raw arrays would test numpy
    y = fn(*xs)
    assert isinstance(y, Variable), name
    expected = ref(*[x.astype(dtype) for x in inputs])
    assert to_np(y).dtype == np.dtype(dtype), f"{name}: dtype {y.dtype}, expected {dtype}"
    np.testing.assert_allclose(to_np(y.data), expected, rtol=1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient(name, order, dtype, arr):
    fn, _, inputs = CASES[name]
    check_backward(fn, *[arr(x, dtype) for x in inputs], order=order)
