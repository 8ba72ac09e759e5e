"""The workloads written with PyTorch eager (CPU), from the same numpy arrays."""

from __future__ import annotations

import numpy as np
import torch
import torch.func
from workloads import LR, func_mlp, hessian_problem

fn = torch.nn.functional


def setup(threads: int) -> None:
    """Pin torch's intra-op pool to ``threads`` (the environment pins OpenMP too)."""
    torch.set_num_threads(threads)


class _Net:
    """Leaf tensors copied from the numpy weights, ``optim.SGD``, and the step around
    ``forward``: ``F.cross_entropy``, zero_grad, backward, step."""

    def __init__(self, weights: list[np.ndarray]) -> None:
        self.w = [torch.tensor(w.copy(), requires_grad=True) for w in weights]
        self.opt = torch.optim.SGD(self.w, lr=LR)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def step(self, x: torch.Tensor, t: torch.Tensor) -> float:
        loss = fn.cross_entropy(self.forward(x), t)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()

    def weights(self) -> list[np.ndarray]:
        return [w.detach().numpy() for w in self.w]


class MLP(_Net):
    """784-1000-1000-10 on leaf tensors, ``F.cross_entropy``, ``optim.SGD``."""

    def __init__(self, weights: list[np.ndarray], act: str) -> None:
        super().__init__(weights)
        self.act = torch.sigmoid if act == "sigmoid" else torch.relu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        W1, b1, W2, b2, W3, b3 = self.w
        h = self.act(x @ W1 + b1)
        h = self.act(h @ W2 + b2)
        return h @ W3 + b3


class CNN(_Net):
    """conv 3x3 1->16 pad 1, relu, max-pool 2, linear 10, ``optim.SGD``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        W, b, Wl, bl = self.w
        h = fn.max_pool2d(fn.relu(fn.conv2d(x, W, b, padding=1)), 2)
        return h.reshape(len(x), -1) @ Wl + bl


def inference(model: str, weights: list[np.ndarray], act: str, x: np.ndarray):  # noqa: ANN201
    """The network's forward under ``torch.no_grad()``, arrays in and out."""
    net = MLP(weights, act) if model == "mlp" else CNN(weights)

    def run(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return net.forward(torch.from_numpy(x)).numpy()

    return run


def inputs(x: np.ndarray, t: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch as tensors (sharing the numpy memory)."""
    return torch.from_numpy(x), torch.from_numpy(t)


# the graph workloads' pieces (workloads.chain, wide, tanh_chain)
tanh, sin = torch.tanh, torch.sin


def leaf(a: np.ndarray) -> torch.Tensor:
    """A leaf tensor of ``a``'s dtype (float64 here) that records gradients."""
    return torch.tensor(a, requires_grad=True)


def const(c: np.ndarray) -> torch.Tensor:
    """A constant operand: a tensor, so that ``y + c`` stays within torch."""
    return torch.tensor(c)


def backward(y: torch.Tensor) -> None:
    """Backward from ``y``, seeded with ones."""
    y.backward(torch.ones_like(y))


def grad(x: torch.Tensor) -> np.ndarray:
    """The gradient of leaf ``x``."""
    return x.grad.numpy()


# the function-transform rows (child.func), with torch.func
def _per_sample_loss(p: dict, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    h = torch.relu(x[None] @ p["W1"] + p["b1"])  # a batch of one sample
    return fn.cross_entropy(h @ p["W2"] + p["b2"], t[None])


def _per_sample(loop: bool) -> tuple:
    params, x, t = func_mlp()
    p = {k: torch.from_numpy(v) for k, v in params.items()}
    tx, tt = torch.from_numpy(x), torch.from_numpy(t)
    if loop:
        g = torch.func.grad(_per_sample_loss)

        def call() -> list:
            return [g(p, tx[i], tt[i]) for i in range(len(tx))]

        return call, lambda out: _sums({k: torch.stack([o[k] for o in out]) for k in p})
    vg = torch.func.vmap(torch.func.grad(_per_sample_loss), in_dims=(None, 0, 0))
    return (lambda: vg(p, tx, tt)), _sums


def _sums(grads: dict) -> list[float]:
    return [float(grads[k].double().square().sum()) for k in sorted(grads)]


def _hessian() -> tuple:
    A, x = hessian_problem()
    tA, tx = torch.from_numpy(A), torch.from_numpy(x)

    def f(v: torch.Tensor) -> torch.Tensor:
        return (torch.tanh(tA @ v) ** 2).sum() + (v**4).sum() / 4

    h = torch.func.hessian(f)
    return (lambda: h(tx)), lambda H: [float(H.sum()), float(torch.trace(H))]


FUNC_CASES = {
    "hessian": _hessian,
    "per_sample_vmap": lambda: _per_sample(loop=False),
    "per_sample_loop": lambda: _per_sample(loop=True),
}
