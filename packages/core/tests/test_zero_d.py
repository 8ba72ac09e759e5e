"""Variable.data is always an array of its backend, 0-d included, whatever ran before."""

import numpy as np
import pytest

import zerograd
import zerograd.functions as F
from zerograd import Variable
from zerograd.backends import get_array_module


def _ops(arr):
    """Every zerograd.functions op with a 0-d result, by name."""
    s = lambda: Variable(arr(0.5))  # noqa: E731
    v = lambda: Variable(arr([0.5, 2.0]))  # noqa: E731
    m = lambda: Variable(arr([[0.5, 2.0], [1.5, 3.0]]))  # noqa: E731
    return {
        "sum": lambda: F.sum(v()),
        "sum 0-d": lambda: F.sum(s()),
        "mean": lambda: F.mean(m()),
        "average": lambda: F.average(v()),
        "max": lambda: F.max(v()),
        "min": lambda: F.min(m()),
        "Variable.sum": lambda: v().sum(),
        "get_item int": lambda: v()[1],
        "get_item ints": lambda: F.get_item(m(), (1, 0)),
        "neg": lambda: -s(),
        "F.neg": lambda: F.neg(F.sum(v())),
        "add": lambda: s() + s(),
        "add scalar": lambda: F.sum(v()) + 1.0,
        "radd": lambda: 1 + s(),
        "sub": lambda: s() - 2,
        "rsub": lambda: 2 - s(),
        "mul": lambda: s() * s(),
        "div": lambda: s() / 4.0,
        "rdiv": lambda: 1.0 / s(),
        "pow": lambda: s() ** 2,
        "pow var": lambda: s() ** s(),
        "rpow": lambda: 2.0 ** s(),
        "exp": lambda: F.exp(s()),
        "log": lambda: F.log(s()),
        "sin": lambda: F.sin(s()),
        "cos": lambda: F.cos(s()),
        "tanh": lambda: F.tanh(s()),
        "square": lambda: F.square(s()),
        "sqrt": lambda: F.sqrt(s()),
        "clip": lambda: F.clip(s(), 0.0, 0.25),
        "reshape": lambda: F.reshape(Variable(arr([3.0])), ()),
        "transpose": lambda: F.transpose(s()),
        "sum_to": lambda: F.sum_to(v(), ()),
        "broadcast_to": lambda: F.broadcast_to(s(), ()),
        "matmul 1-d": lambda: F.matmul(v(), v()),
        "dot": lambda: F.dot(v(), v()),
        "flatten of sum": lambda: F.sum(F.flatten(m())),
    }


def _prime(arr):
    """What used to make numpy scalars stick: their type seen by the backend lookup."""
    zerograd.as_array(np.float64(1.0))
    get_array_module(np.float64(1.0))
    Variable(np.float64(2.0)) * 2
    Variable(arr([1.0, 2.0])).sum() + np.float64(1.0)
    try:
        zerograd.backends.backend_of(np.float64(1.0))
    except TypeError:
        pass  # numpy scalars are not arrays of any backend


def _check(array_type, name, y):
    assert type(y.data) is array_type, f"{name}: data is {type(y.data)}"
    assert y.shape == ()
    y.backward()
    assert y.grad is None or type(y.grad.data) is array_type, name


def test_every_op_gives_a_0d_array_before_and_after_numpy_scalars_were_seen(arr):
    array_type = type(arr([0.0]))
    ops = _ops(arr)
    for name, op in ops.items():
        _check(array_type, name, op())
    _prime(arr)
    for name, op in reversed(ops.items()):
        _check(array_type, name, op())


def test_gradients_of_0d_inputs_are_arrays(arr):
    array_type = type(arr([0.0]))
    _prime(arr)
    x = Variable(arr(1.5))
    y = F.sum(x * x) + F.exp(x) - F.sum(Variable(arr([1.0])) * x)
    y.backward(create_graph=True)
    assert type(x.grad.data) is array_type
    np.testing.assert_allclose(float(x.grad), 3.0 + np.exp(1.5) - 1.0)
    g = x.grad
    x.cleargrad()
    g.backward()
    assert type(x.grad.data) is array_type


@pytest.mark.parametrize("scalar", [np.float64(2.5), np.float32(2.5), np.int64(3), np.bool_(1)])
def test_numpy_scalars_become_0d_arrays(scalar):
    x = Variable(scalar)
    assert type(x.data) is np.ndarray and x.dtype == scalar.dtype and x.shape == ()
    assert type(zerograd.as_array(scalar)) is np.ndarray


def test_numerical_grad_of_0d_input(arr):
    from zerograd.testing import numerical_grad

    g = numerical_grad(lambda v: v * v * v, arr(2.0))
    np.testing.assert_allclose(float(g), 12.0, rtol=1e-6)
