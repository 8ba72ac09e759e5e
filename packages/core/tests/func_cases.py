"""Functions of zerograd.functions for the transform tests, with their PyTorch twins.

Each case is ``(f, twin, shapes, domain)``: ``f`` takes Variables, ``twin(torch, *tensors)``
computes the same with torch, ``shapes`` are the inputs' shapes, ``domain`` is ``"any"`` or
``"pos"`` (log, sqrt, a power's base). Inputs come from a grid with a 0.37 step, shuffled:
distinct values (no ties for max and min) that keep away from clip's bounds, so central
differences are exact enough in float64.
"""

from __future__ import annotations

import numpy as np

import zerograd.functions as F
from zerograd import Variable
from zerograd.backends import as_array_of, as_numpy, backend_of

IDX = np.array([0, 0, 2])  # a repeated index: its gradient accumulates

CASES = {
    "exp": (lambda x: F.exp(x), lambda T, x: T.exp(x), [(2, 3)], "any"),
    "log": (lambda x: F.log(x), lambda T, x: T.log(x), [(2, 3)], "pos"),
    "sin": (lambda x: F.sin(x), lambda T, x: T.sin(x), [(4,)], "any"),
    "cos": (lambda x: F.cos(x), lambda T, x: T.cos(x), [(4,)], "any"),
    "tanh": (lambda x: F.tanh(x), lambda T, x: T.tanh(x), [(2, 3)], "any"),
    "sqrt": (lambda x: F.sqrt(x), lambda T, x: T.sqrt(x), [(3,)], "pos"),
    "square": (lambda x: F.square(x), lambda T, x: x * x, [(3,)], "any"),
    "pow_const": (lambda x: x**3, lambda T, x: x**3, [(3,)], "any"),
    "pow_var": (lambda x, y: x**y, lambda T, x, y: x**y, [(3,), (3,)], "pos"),
    "neg_sub": (lambda a, b: -a - b, lambda T, a, b: -a - b, [(2, 2), (2, 2)], "any"),
    "mul": (lambda a, b: a * b, lambda T, a, b: a * b, [(2, 3), (2, 3)], "any"),
    "div": (lambda a, b: a / (b * b + 1.0), lambda T, a, b: a / (b * b + 1.0), [(3,), (3,)], "any"),
    "clip": (lambda x: F.clip(x, -0.5, 0.5), lambda T, x: T.clamp(x, -0.5, 0.5), [(6,)], "any"),
    "add_broadcast": (lambda a, b: a + b, lambda T, a, b: a + b, [(2, 3), (3,)], "any"),
    "mul_broadcast": (lambda a, b: a * b, lambda T, a, b: a * b, [(2, 1), (1, 3)], "any"),
    "broadcast_to": (
        lambda x: F.broadcast_to(x, (2, 3)) * F.broadcast_to(x, (2, 3)),
        lambda T, x: T.broadcast_to(x, (2, 3)) ** 2,
        [(3,)],
        "any",
    ),
    "sum_to": (
        lambda x: F.sum_to(x * x, (1, 3)),
        lambda T, x: (x * x).sum(0, keepdim=True),
        [(2, 3)],
        "any",
    ),
    "sum_axis": (lambda x: F.sum(x * x, axis=1), lambda T, x: (x * x).sum(1), [(2, 3)], "any"),
    "sum_keepdims": (
        lambda x: F.sum(F.sin(x), keepdims=True),
        lambda T, x: T.sin(x).sum().reshape(1, 1),
        [(2, 3)],
        "any",
    ),
    "mean_axis": (
        lambda x: F.mean(x * x, axis=0),
        lambda T, x: (x * x).mean(0),
        [(3, 2)],
        "any",
    ),
    "max_axis": (lambda x: F.max(x, axis=1), lambda T, x: x.amax(1), [(2, 3)], "any"),
    "min_all": (lambda x: F.min(x * x), lambda T, x: (x * x).amin(), [(2, 3)], "any"),
    "matmul": (lambda a, b: a @ b, lambda T, a, b: a @ b, [(2, 3), (3, 2)], "any"),
    "matmul_batched": (lambda a, b: a @ b, lambda T, a, b: a @ b, [(2, 2, 3), (3, 2)], "any"),
    "matmul_vector_matrix": (lambda a, b: a @ b, lambda T, a, b: a @ b, [(3,), (3, 2)], "any"),
    "matmul_matrix_vector": (lambda a, b: a @ b, lambda T, a, b: a @ b, [(2, 3), (3,)], "any"),
    "get_item_slices": (
        lambda x: x[1:, ::2] ** 2,
        lambda T, x: x[1:, ::2] ** 2,
        [(3, 4)],
        "any",
    ),
    "get_item_repeated": (
        lambda x: F.get_item(x, IDX) ** 2,
        lambda T, x: x[T.as_tensor(IDX)] ** 2,
        [(3, 2)],
        "any",
    ),
    "get_item_int": (lambda x: x[1] * x[0], lambda T, x: x[1] * x[0], [(2, 3)], "any"),
    "reshape": (
        lambda x: F.reshape(x, (3, 2)) ** 2,
        lambda T, x: x.reshape(3, 2) ** 2,
        [(2, 3)],
        "any",
    ),
    "transpose": (
        lambda x: F.transpose(x, (2, 0, 1)) * 2.0,
        lambda T, x: x.permute(2, 0, 1) * 2.0,
        [(2, 2, 3)],
        "any",
    ),
    "concatenate": (
        lambda a, b: F.concatenate([a * a, b], axis=1),
        lambda T, a, b: T.cat([a * a, b], 1),
        [(2, 2), (2, 3)],
        "any",
    ),
    "stack": (
        lambda a, b: F.stack([a, a * b], axis=-1),
        lambda T, a, b: T.stack([a, a * b], -1),
        [(3,), (3,)],
        "any",
    ),
    "expand_dims": (
        lambda x: F.expand_dims(x, 1) * x,
        lambda T, x: x.unsqueeze(1) * x,
        [(3,)],
        "any",
    ),
    "flatten": (
        lambda x: F.flatten(x) ** 2,
        lambda T, x: x.reshape(2, -1) ** 2,
        [(2, 2, 2)],
        "any",
    ),
    "affine_tanh": (
        lambda x, w, b: F.tanh(x @ w + b),
        lambda T, x, w, b: T.tanh(x @ w + b),
        [(2, 3), (3, 2), (2,)],
        "any",
    ),
}


def values(shape: tuple, domain: str, seed: int) -> np.ndarray:
    """Distinct grid values of ``shape`` (positive for the ``"pos"`` domain)."""
    n = int(np.prod(shape)) or 1
    grid = (np.arange(n) - n // 2) * 0.37 + 0.05
    x = np.random.default_rng(seed).permutation(grid).reshape(shape)
    return np.abs(x) + 0.3 if domain == "pos" else x


def inputs(name: str, backend, batch: int | None = None) -> list:
    """The case's inputs on ``backend`` (with a leading batch axis of ``batch`` if given)."""
    _, _, shapes, domain = CASES[name]
    out = []
    for i, s in enumerate(shapes):
        shape = s if batch is None else (batch, *s)
        out.append(as_array_of(values(shape, domain, seed=i + 3 * (batch or 0)), backend))
    return out


def weights(shape: tuple, backend, seed: int = 11):
    """Fixed random weights that contract an output of ``shape`` to a scalar."""
    w = np.random.default_rng(seed).standard_normal(shape)
    return as_array_of(w, backend)


def num_jacobian(f, xs: list, i: int, eps: float = 1e-6) -> np.ndarray:
    """The central-difference Jacobian of ``f(*xs)`` with respect to ``xs[i]``.

    ``f`` takes Variables; the result has shape ``out.shape + xs[i].shape`` (numpy).
    """
    backend_arrays = list(xs)
    base = as_numpy(xs[i]).astype(np.float64)
    out0 = as_numpy(f(*[Variable(x) for x in backend_arrays]))
    jac = np.zeros(out0.shape + base.shape)
    flat = base.reshape(-1)
    for k in range(flat.size):
        vals = []
        for sign in (1, -1):
            pert = flat.copy()
            pert[k] += sign * eps
            args = list(backend_arrays)
            args[i] = as_array_of(pert.reshape(base.shape), backend_of(xs[i]))
            vals.append(as_numpy(f(*[Variable(a) for a in args])).astype(np.float64))
        jac.reshape(out0.shape + (-1,))[..., k] = (vals[0] - vals[1]) / (2 * eps)
    return jac


def engine_grad(f, xs: list, i: int):
    """d sum(f(*xs)) / d xs[i] by ``Variable.backward``: the engine itself, no transform."""
    vs = [Variable(x) for x in xs]
    F.sum(f(*vs)).backward()
    g = vs[i].grad
    return np.zeros(as_numpy(xs[i]).shape) if g is None else as_numpy(g)
