"""The workloads written with DeZero 0.0.13 (the book's framework, ``pip install dezero``).

DeZero 0.0.13 names ``np.int`` at import time, an alias numpy removed in 1.24; this module
restores the alias (to ``int``, what it meant) in its own process before importing DeZero.
DeZero also imports matplotlib at import time, so matplotlib must be installed.
"""

from __future__ import annotations

import numpy as np

if not hasattr(np, "int"):  # numpy >= 1.24 dropped the alias DeZero 0.0.13 still names
    np.int = int  # type: ignore[attr-defined]

import dezero  # noqa: E402
import dezero.functions as F  # noqa: E402
import dezero.layers as L  # noqa: E402
from dezero import Variable  # noqa: E402
from workloads import LR  # noqa: E402


def setup(threads: int) -> None:
    """Nothing to do: DeZero threads through numpy's BLAS (set by environment)."""


def _linear(W: np.ndarray, b: np.ndarray) -> L.Linear:
    layer = L.Linear(W.shape[1], in_size=W.shape[0])
    layer.W.data, layer.b.data = W.copy(), b.copy()
    return layer


class _Net(dezero.Model):
    """SGD on the model and the step around ``forward``: loss, cleargrads, backward,
    update. A subclass sets its layers, and ``self.ordered``: them in the weights' order
    (DeZero keeps a model's parameters in a set)."""

    ordered: tuple[L.Layer, ...]

    def __init__(self) -> None:
        super().__init__()
        self.opt = dezero.optimizers.SGD(LR).setup(self)

    def step(self, x: np.ndarray, t: np.ndarray) -> float:
        loss = F.softmax_cross_entropy(self(x), t)
        self.cleargrads()
        loss.backward()
        self.opt.update()
        return float(loss.data)

    def weights(self) -> list[np.ndarray]:
        return [p.data for layer in self.ordered for p in (layer.W, layer.b)]


class MLP(_Net):
    """784-1000-1000-10 from ``dezero.layers.Linear``; cleargrads, backward, SGD."""

    def __init__(self, weights: list[np.ndarray], act: str) -> None:
        super().__init__()
        self.l1 = _linear(*weights[0:2])
        self.l2 = _linear(*weights[2:4])
        self.l3 = _linear(*weights[4:6])
        self.ordered = (self.l1, self.l2, self.l3)
        self.act = F.sigmoid if act == "sigmoid" else F.relu

    def forward(self, x: np.ndarray) -> Variable:
        h = self.act(self.l1(x))
        h = self.act(self.l2(h))
        return self.l3(h)


class CNN(_Net):
    """``dezero.layers.Conv2d`` 3x3 1->16 pad 1, relu, ``F.pooling`` 2, ``Linear`` 10."""

    def __init__(self, weights: list[np.ndarray]) -> None:
        super().__init__()
        W, b, Wl, bl = weights
        self.conv = L.Conv2d(16, kernel_size=3, stride=1, pad=1, in_channels=1)
        self.conv.W.data, self.conv.b.data = W.copy(), b.copy()
        self.fc = _linear(Wl, bl)
        self.ordered = (self.conv, self.fc)

    def forward(self, x: np.ndarray) -> Variable:
        h = F.pooling(F.relu(self.conv(x)), 2, 2)
        return self.fc(F.reshape(h, (len(x), -1)))


def inputs(x: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The batch as this framework takes it (numpy arrays as they are)."""
    return x, t


# the graph workloads' pieces (workloads.chain, wide, tanh_chain)
leaf = Variable
tanh, sin = F.tanh, F.sin


def backward(y: Variable) -> None:
    """Backward from ``y`` (DeZero seeds any shape with ones)."""
    y.backward()


def grad(x: Variable) -> np.ndarray:
    """The gradient of leaf ``x``."""
    return x.grad.data
