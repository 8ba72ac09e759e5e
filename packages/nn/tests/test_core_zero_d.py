"""Core rule seen through nn's functional ops: 0-d results are arrays of the backend, in
every order of calls (numpy scalars seen earlier in the process change nothing)."""

import numpy as np

import zerograd
import zerograd_nn.functional as F
from zerograd import Variable, test_mode


def _ops(arr):
    s = lambda: Variable(arr(0.5))  # noqa: E731
    v = lambda: Variable(arr([0.5, -1.0]))  # noqa: E731
    m = lambda: Variable(arr([[0.2, 0.8], [0.6, 0.4]]))  # noqa: E731
    t = arr([1, 0], "int64")
    return {
        "sigmoid": lambda: F.sigmoid(s()),
        "sigmoid_simple": lambda: F.sigmoid_simple(s()),
        "relu": lambda: F.relu(s()),
        "relu of neg": lambda: F.relu(-s()),
        "leaky_relu": lambda: F.leaky_relu(s()),
        "mean_squared_error": lambda: F.mean_squared_error(v(), arr([0.0, 0.0])),
        "mean_squared_error_simple": lambda: F.mean_squared_error_simple(v(), arr([0.0, 0.0])),
        "softmax_cross_entropy": lambda: F.softmax_cross_entropy(m(), t),
        "softmax_cross_entropy_simple": lambda: F.softmax_cross_entropy_simple(m(), t),
        "sigmoid_cross_entropy": lambda: F.sigmoid_cross_entropy(v(), t),
        "binary_cross_entropy": lambda: F.binary_cross_entropy(F.sigmoid(v()), t),
        "accuracy": lambda: F.accuracy(m(), t),
        "sum": lambda: F.sum(v()),
        "max": lambda: F.max(v()),
        "clip": lambda: F.clip(s(), 0.0, 0.25),
        "get_item": lambda: v()[0],
        "dropout (test mode)": lambda: _in_test_mode(lambda: F.dropout(s())),
    }


def _in_test_mode(f):
    with test_mode():
        return f()


def _prime(arr):
    zerograd.as_array(np.float64(1.0))
    Variable(np.float64(2.0)) * 2
    F.relu(Variable(arr([1.0]))).sum() + np.float64(1.0)
    try:
        zerograd.backends.backend_of(np.float64(1.0))
    except TypeError:
        pass  # numpy scalars are not arrays of any backend


def test_nn_ops_give_0d_arrays_in_any_order(arr):
    array_type = type(arr([0.0]))
    ops = _ops(arr)
    for rnd in range(2):
        for name, op in ops.items() if rnd == 0 else reversed(ops.items()):
            y = op()
            assert type(y.data) is array_type, f"{name}: data is {type(y.data)}"
            assert y.shape == (), name
            if y.creator is not None:
                y.backward()
        _prime(arr)
