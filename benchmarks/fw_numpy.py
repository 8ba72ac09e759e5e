"""The floor: the same workloads by hand in numpy, no graph, no framework.

Forward keeps what backward needs; backward applies the derivative rules; SGD updates the
weights in place. Float32 throughout for the MLP and CNN.
"""

from __future__ import annotations

import numpy as np
from workloads import F32, LR


def setup(threads: int) -> None:
    """Nothing to do: numpy threads through BLAS (set by environment)."""


def chain(x0: np.ndarray, c: np.ndarray, ops: tuple[str, ...], n: int) -> float:
    """Forward and backward through ``n`` elementwise ops cycling through ``ops``; returns
    the gradient of the input (one element), which every framework must agree on."""
    tape = []
    y = x0
    for i in range(n):
        op = ops[i % len(ops)]
        if op == "add":
            tape.append((op, None))
            y = y + c
        elif op == "mul":
            tape.append((op, None))
            y = y * c
        elif op == "tanh":
            y = np.tanh(y)
            tape.append((op, y))
        else:
            tape.append((op, y))
            y = np.sin(y)
    g = np.ones_like(y)
    for op, saved in reversed(tape):
        if op == "mul":
            g = g * c
        elif op == "tanh":
            g = g * (1 - saved * saved)
        elif op == "sin":
            g = g * np.cos(saved)
    return float(g[0])


def _softmax_ce(y: np.ndarray, t: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean softmax cross-entropy of logits ``y`` and its gradient with respect to ``y``."""
    n = len(y)
    z = y - y.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    loss = -(z[np.arange(n), t] - np.log(s[:, 0])).mean()
    gy = e / s
    gy[np.arange(n), t] -= 1
    gy *= F32(1 / n)
    return float(loss), gy


class MLP:
    """784-1000-1000-10 forward, backward and SGD update by hand."""

    def __init__(self, weights: list[np.ndarray], act: str) -> None:
        self.w = [w.copy() for w in weights]
        self.sigmoid = act == "sigmoid"

    def _act(self, a: np.ndarray) -> np.ndarray:
        if self.sigmoid:
            return np.tanh(a * F32(0.5)) * F32(0.5) + F32(0.5)
        return np.maximum(a, F32(0))

    def _dact(self, h: np.ndarray, g: np.ndarray) -> np.ndarray:
        if self.sigmoid:
            return g * h * (F32(1) - h)
        return g * (h > 0)

    def step(self, x: np.ndarray, t: np.ndarray) -> float:
        W1, b1, W2, b2, W3, b3 = self.w
        h1 = self._act(x @ W1 + b1)
        h2 = self._act(h1 @ W2 + b2)
        loss, gy = _softmax_ce(h2 @ W3 + b3, t)
        gW3, gb3 = h2.T @ gy, gy.sum(axis=0)
        g2 = self._dact(h2, gy @ W3.T)
        gW2, gb2 = h1.T @ g2, g2.sum(axis=0)
        g1 = self._dact(h1, g2 @ W2.T)
        gW1, gb1 = x.T @ g1, g1.sum(axis=0)
        for w, g in zip(self.w, (gW1, gb1, gW2, gb2, gW3, gb3)):
            w -= F32(LR) * g
        return loss

    def weights(self) -> list[np.ndarray]:
        return self.w


class CNN:
    """By hand: im2col (9 shifted views) and one batched matmul for the conv; the 2x2
    pooling as the maximum of 4 strided views, its gradient routed to each window's first
    maximum; then the linear layer, the loss, backward through all of it and SGD."""

    def __init__(self, weights: list[np.ndarray]) -> None:
        self.w = [w.copy() for w in weights]

    def step(self, x: np.ndarray, t: np.ndarray) -> float:
        W, b, Wl, bl = self.w
        n, _, H, Wd = x.shape
        xpad = np.pad(x[:, 0], ((0, 0), (1, 1), (1, 1)))
        shifts = [(i, j) for i in range(3) for j in range(3)]
        col = np.stack([xpad[:, i : i + H, j : j + Wd] for i, j in shifts], axis=1)
        col = col.reshape(n, 9, H * Wd)
        a = np.matmul(W.reshape(16, 9), col) + b[:, None]  # (n, 16, H*W)
        h = np.maximum(a, F32(0)).reshape(n, 16, H, Wd)
        offsets = [(0, 0), (0, 1), (1, 0), (1, 1)]
        views = [h[:, :, i::2, j::2] for i, j in offsets]
        p = np.maximum(np.maximum(views[0], views[1]), np.maximum(views[2], views[3]))
        flat = p.reshape(n, -1)
        loss, gy = _softmax_ce(flat @ Wl + bl, t)
        gWl, gbl = flat.T @ gy, gy.sum(axis=0)
        gp = (gy @ Wl.T).reshape(p.shape)
        gh = np.zeros_like(h)
        taken = np.zeros(p.shape, dtype=bool)
        for (i, j), v in zip(offsets, views):
            hit = (v == p) & ~taken
            taken |= hit
            gh[:, :, i::2, j::2] = gp * hit
        ga = (gh * (h > 0)).reshape(n, 16, H * Wd)
        gW = np.tensordot(ga, col, axes=([0, 2], [0, 2])).reshape(W.shape)
        gb = ga.sum(axis=(0, 2))
        for w, g in zip(self.w, (gW, gb, gWl, gbl)):
            w -= F32(LR) * g
        return loss

    def weights(self) -> list[np.ndarray]:
        return self.w


def inputs(x: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The batch as it is."""
    return x, t
