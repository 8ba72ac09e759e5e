"""The workloads written with zerograd's public API, as a user writes them."""

from __future__ import annotations

import numpy as np
from workloads import LR, func_mlp, hessian_problem

import zerograd.functions as ZF
import zerograd_nn.functional as F
from zerograd import Parameter, Variable, no_grad, test_mode
from zerograd import func as zfunc
from zerograd_nn.optimizers import SGD


def setup(threads: int) -> None:
    """Nothing to do: zerograd's numpy backend threads through BLAS (set by environment)."""


class _Net:
    """Parameters copied from the numpy weights, SGD, and the step around ``forward``:
    loss, cleargrad, backward, update."""

    def __init__(self, weights: list[np.ndarray]) -> None:
        self.params = [Parameter(w.copy()) for w in weights]
        self.opt = SGD(lr=LR).setup(self.params)

    def forward(self, x: np.ndarray) -> Variable:
        raise NotImplementedError

    def step(self, x: np.ndarray, t: np.ndarray) -> float:
        return float(self.train_step(x, t).data)

    def train_step(self, x: np.ndarray, t: np.ndarray) -> Variable:
        """The step itself (what fw_static.py records): the loss Variable."""
        loss = F.softmax_cross_entropy(self.forward(x), t)
        for p in self.params:
            p.cleargrad()
        loss.backward()
        self.opt.update()
        return loss

    def weights(self) -> list[np.ndarray]:
        return [np.asarray(p.data) for p in self.params]


class MLP(_Net):
    """784-1000-1000-10: functional layers, cleargrad, backward, SGD (``act``: sigmoid|relu)."""

    def __init__(self, weights: list[np.ndarray], act: str) -> None:
        super().__init__(weights)
        self.act = F.sigmoid if act == "sigmoid" else F.relu

    def forward(self, x: np.ndarray) -> Variable:
        W1, b1, W2, b2, W3, b3 = self.params
        h = self.act(F.linear(x, W1, b1))
        h = self.act(F.linear(h, W2, b2))
        return F.linear(h, W3, b3)


class CNN(_Net):
    """conv 3x3 1->16 pad 1, relu, max-pool 2, linear 10; cleargrad, backward, SGD."""

    def forward(self, x: np.ndarray) -> Variable:
        W, b, Wl, bl = self.params
        h = F.relu(F.conv2d(x, W, b, stride=1, pad=1))
        h = F.pooling(h, 2, 2)
        return F.linear(F.reshape(h, (len(x), -1)), Wl, bl)


def network(model: str, weights: list[np.ndarray], act: str) -> _Net:
    """The MLP (with ``act``) or the CNN on ``weights``."""
    return MLP(weights, act) if model == "mlp" else CNN(weights)


def inference(model: str, weights: list[np.ndarray], act: str, x: np.ndarray):  # noqa: ANN201
    """The network's forward for inference (no graph, test mode), arrays in and out."""
    net = network(model, weights, act)

    def run(x: np.ndarray) -> np.ndarray:
        with no_grad(), test_mode():
            return np.asarray(net.forward(x).data)

    return run


def inputs(x: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The batch as this framework takes it (numpy arrays as they are)."""
    return x, t


# the graph workloads' pieces (workloads.chain, wide, tanh_chain)
leaf = Variable
tanh, sin = ZF.tanh, ZF.sin


def backward(y: Variable) -> None:
    """Backward from ``y`` (a vector is seeded with ones)."""
    y.backward()


def grad(x: Variable) -> np.ndarray:
    """The gradient of leaf ``x``."""
    return x.grad.data


# the function-transform rows (child.func): each case gives the call to time and a summary
def _per_sample_loss(p: dict, x: Variable, t: Variable) -> Variable:
    h = F.relu(F.linear(x[None], p["W1"], p["b1"]))  # a batch of one sample
    return F.softmax_cross_entropy(F.linear(h, p["W2"], p["b2"]), t[None])


def _per_sample(loop: bool) -> tuple:
    params, x, t = func_mlp()
    if loop:
        g = zfunc.grad(_per_sample_loss)

        def call() -> list:
            return [g(params, x[i], t[i]) for i in range(len(x))]

        return call, lambda out: _sums({k: np.stack([o[k] for o in out]) for k in params})
    vg = zfunc.vmap(zfunc.grad(_per_sample_loss), in_axes=(None, 0, 0))
    return (lambda: vg(params, x, t)), _sums


def _sums(grads: dict) -> list[float]:
    return [float(np.square(grads[k], dtype=np.float64).sum()) for k in sorted(grads)]


def _hessian() -> tuple:
    A, x = hessian_problem()

    def f(v: Variable) -> Variable:
        return ZF.sum(ZF.tanh(ZF.matmul(A, v)) ** 2) + ZF.sum(v**4) / 4

    h = zfunc.hessian(f)
    return (lambda: h(x)), lambda H: [float(np.asarray(H).sum()), float(np.trace(H))]


FUNC_CASES = {
    "hessian": _hessian,
    "per_sample_vmap": lambda: _per_sample(loop=False),
    "per_sample_loop": lambda: _per_sample(loop=True),
}
