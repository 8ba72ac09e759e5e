"""Affine maps and lookups: linear (fused), linear_simple, embed_id."""

from __future__ import annotations

from typing import Any

from zerograd import Function, Variable, as_variable
from zerograd.backends import backend_of, get_array_module
from zerograd.functions import get_item, matmul, reshape, sum_to, transpose

from .utils import needs_grad, recording


class Linear(Function):
    """``x @ W + b`` in one graph node (``b`` optional)."""

    def forward(self, x: Any, W: Any, b: Any = None) -> Any:
        if x.ndim < 2 or W.ndim != 2 or x.shape[-1] != W.shape[0]:
            raise ValueError(
                f"linear: x of shape {x.shape} and W of shape {W.shape} do not fit; expected "
                f"x (N, ..., I) and W (I, O) with the same I."
            )
        y = get_array_module(x).matmul(x, W)
        if b is not None:
            y = y + b
        return y

    def backward(self, gy: Variable) -> tuple[Variable | None, ...]:
        x, W = self.inputs[0], self.inputs[1]
        if not recording():
            return self._backward_arrays(gy.data)
        gx = matmul(gy, transpose(W)) if needs_grad(x) else None
        if x.ndim > 2:  # (N, ..., I): sum the weight gradient over every leading axis
            x, gy2 = reshape(x, (-1, x.shape[-1])), reshape(gy, (-1, gy.shape[-1]))
        else:
            gy2 = gy
        gW = matmul(transpose(x), gy2) if needs_grad(W) else None
        if len(self.inputs) == 2:
            return gx, gW
        return gx, gW, sum_to(gy, self.inputs[2].shape)

    def _backward_arrays(self, g: Any) -> tuple[Variable | None, ...]:
        """First-order backward on plain arrays (no graph is being recorded)."""
        x, W = self.inputs[0], self.inputs[1]
        xp = get_array_module(g)
        gx = Variable(xp.matmul(g, xp.transpose(W.data))) if needs_grad(x) else None
        xd = x.data
        if xd.ndim > 2:
            xd, g2 = xp.reshape(xd, (-1, xd.shape[-1])), xp.reshape(g, (-1, g.shape[-1]))
        else:
            g2 = g
        gW = Variable(xp.matmul(xp.transpose(xd), g2)) if needs_grad(W) else None
        if len(self.inputs) == 2:
            return gx, gW
        b = self.inputs[2]
        return gx, gW, Variable(backend_of(g).sum_to(g, b.shape)) if needs_grad(b) else None


def linear(x: Any, W: Any, b: Any = None) -> Variable:
    """``x @ W + b`` for x (N, I) (or (N, ..., I)), W (I, O), b (O,) or None.

    >>> import numpy as np
    >>> linear(np.ones((2, 3)), np.ones((3, 4))).shape
    (2, 4)
    """
    if b is None or (isinstance(b, Variable) and b.data is None):
        return Linear()(x, W)
    return Linear()(x, W, b)


def linear_simple(x: Any, W: Any, b: Any = None) -> Variable:
    """``matmul(x, W) + b`` from two functions (the book's first version)."""
    t = matmul(x, W)
    if b is None:
        return t
    return t + b


def embed_id(x: Any, W: Any) -> Variable:
    """Rows of ``W`` picked by integer ids ``x`` (any shape): ``W[x]``."""
    ids = x.data if isinstance(x, Variable) else x
    return get_item(as_variable(W), ids)
