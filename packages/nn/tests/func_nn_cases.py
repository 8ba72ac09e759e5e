"""zerograd-nn's functions for the transform tests, with their PyTorch twins.

Each case is ``(f, twin, shapes)``: ``f(*Variables)``, ``twin(torch, *tensors)`` (None where
PyTorch has no such function), the float inputs' shapes. Inputs come from a grid with a
0.37 step, shuffled and offset by 0.05: distinct values away from relu's kink and from
pooling ties. Labels and targets are fixed.
"""

from __future__ import annotations

import numpy as np

import zerograd_nn.functional as F
from zerograd import Variable
from zerograd.backends import as_array_of, as_numpy, backend_of

LABELS = np.array([2, 0])
TARGETS = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])


def _labels(x):
    return as_array_of(LABELS, backend_of(x.data))


def _targets(x):
    return as_array_of(TARGETS, backend_of(x.data))


def _ce(T, x):
    return T.nn.functional.cross_entropy(x, T.as_tensor(LABELS))


def _bce_logits(T, x):
    t = T.as_tensor(TARGETS)
    return T.nn.functional.binary_cross_entropy_with_logits(x, t, reduction="sum") / x.shape[0]


CASES = {
    "sigmoid": (lambda x: F.sigmoid(x), lambda T, x: T.sigmoid(x), [(2, 3)]),
    "relu": (lambda x: F.relu(x) * x, lambda T, x: T.relu(x) * x, [(2, 3)]),
    "leaky_relu": (
        lambda x: F.leaky_relu(x, 0.1) * x,
        lambda T, x: T.nn.functional.leaky_relu(x, 0.1) * x,
        [(2, 3)],
    ),
    "softmax": (lambda x: F.softmax(x), lambda T, x: T.softmax(x, 1), [(2, 3)]),
    "log_softmax": (
        lambda x: F.log_softmax(x, axis=-1),
        lambda T, x: T.log_softmax(x, -1),
        [(2, 3)],
    ),
    "linear": (
        lambda x, w, b: F.linear(x, w, b),
        lambda T, x, w, b: x @ w + b,
        [(2, 3), (3, 4), (4,)],
    ),
    "linear_3d": (lambda x, w: F.linear(x, w), lambda T, x, w: x @ w, [(2, 2, 3), (3, 2)]),
    "conv2d": (
        lambda x, w, b: F.conv2d(x, w, b, stride=1, pad=1),
        lambda T, x, w, b: T.nn.functional.conv2d(x, w, b, stride=1, padding=1),
        [(2, 2, 4, 4), (3, 2, 3, 3), (3,)],
    ),
    "conv2d_stride": (
        lambda x, w: F.conv2d(x, w, stride=2),
        lambda T, x, w: T.nn.functional.conv2d(x, w, stride=2),
        [(1, 1, 5, 5), (2, 1, 3, 3)],
    ),
    "deconv2d": (
        lambda x, w: F.deconv2d(x, w, stride=2, pad=1),
        lambda T, x, w: T.nn.functional.conv_transpose2d(x, w, stride=2, padding=1),
        [(1, 2, 3, 3), (2, 1, 3, 3)],
    ),
    "deconv2d_bias": (
        lambda x, w, b: F.deconv2d(x, w, b, stride=2, pad=1),
        lambda T, x, w, b: T.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=1),
        [(1, 2, 3, 3), (2, 3, 3, 3), (3,)],
    ),
    "pooling": (
        lambda x: F.pooling(x, 2, 2),
        lambda T, x: T.nn.functional.max_pool2d(x, 2, 2),
        [(1, 2, 4, 4)],
    ),
    "average_pooling": (
        lambda x: F.average_pooling(x, 2, 2),
        lambda T, x: T.nn.functional.avg_pool2d(x, 2, 2),
        [(1, 2, 4, 4)],
    ),
    "mean_squared_error": (
        lambda a, b: F.mean_squared_error(a, b),
        lambda T, a, b: ((a - b) ** 2).sum() / a.shape[0],
        [(2, 3), (2, 3)],
    ),
    "softmax_cross_entropy": (
        lambda x: F.softmax_cross_entropy(x, _labels(x)),
        _ce,
        [(2, 3)],
    ),
    "sigmoid_cross_entropy": (
        lambda x: F.sigmoid_cross_entropy(x, _targets(x)),
        _bce_logits,
        [(2, 3)],
    ),
}


def values(shape: tuple, seed: int) -> np.ndarray:
    """Distinct grid values of ``shape``."""
    n = int(np.prod(shape)) or 1
    grid = (np.arange(n) - n // 2) * 0.37 + 0.05
    return np.random.default_rng(seed).permutation(grid).reshape(shape) / max(1.0, n / 20)


def inputs(name: str, backend, batch: int | None = None) -> list:
    """The case's inputs on ``backend``, with a leading batch axis of ``batch`` if given."""
    shapes = CASES[name][2]
    return [
        as_array_of(values(s if batch is None else (batch, *s), seed=i + 7 * (batch or 0)), backend)
        for i, s in enumerate(shapes)
    ]


def call(f, *xs):
    """``f`` of the arrays ``xs`` as Variables."""
    return f(*[Variable(x) for x in xs])


def num_jacobian(f, xs: list, i: int, eps: float = 1e-6) -> np.ndarray:
    """The central-difference Jacobian of ``f(*xs)`` (Variables in) with respect to ``xs[i]``."""
    base = as_numpy(xs[i]).astype(np.float64)
    out0 = as_numpy(call(f, *xs))
    jac = np.zeros(out0.shape + base.shape)
    flat = base.reshape(-1)
    for k in range(flat.size):
        vals = []
        for sign in (1, -1):
            pert = flat.copy()
            pert[k] += sign * eps
            args = list(xs)
            args[i] = as_array_of(pert.reshape(base.shape), backend_of(xs[i]))
            vals.append(as_numpy(call(f, *args)).astype(np.float64))
        jac.reshape(out0.shape + (-1,))[..., k] = (vals[0] - vals[1]) / (2 * eps)
    return jac
