"""The optimizers: SGD, MomentumSGD, AdaGrad, AdaDelta, Adam, AdamW.

Each computes the change of a parameter's array and its new state from the old ones
without writing into them; :meth:`Optimizer.update` adds the changes in place once
nothing can fail. In-place operators below only ever touch arrays made in the same
function. ``weight_decay``
(default 0) adds ``weight_decay * param`` to the gradient (L2), except in AdamW, where it
is decoupled.
"""

from __future__ import annotations

import math
from typing import Any

from zerograd.backends import get_array_module

from .base import Optimizer, hyperparameter


def _l2(data: Any, grad: Any, hp: dict) -> Any:
    wd = hp.get("weight_decay", 0.0)
    return grad + wd * data if wd else grad


class SGD(Optimizer):
    """Stochastic gradient descent: ``param -= lr * grad``."""

    lr = hyperparameter()
    weight_decay = hyperparameter()

    def __init__(self, lr: float = 0.01, *, weight_decay: float = 0.0) -> None:
        super().__init__()
        self.lr = lr
        self.weight_decay = weight_decay

    def _compute(self, data: Any, grad: Any, state: dict, hp: dict) -> tuple[Any, dict]:
        return _l2(data, grad, hp) * -hp["lr"], {}


class MomentumSGD(Optimizer):
    """SGD with momentum: ``v = momentum * v - lr * grad; param += v``."""

    lr = hyperparameter()
    momentum = hyperparameter()
    weight_decay = hyperparameter()
    _state_names = ("v",)

    def __init__(
        self, lr: float = 0.01, momentum: float = 0.9, *, weight_decay: float = 0.0
    ) -> None:
        super().__init__()
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay

    def _compute(self, data: Any, grad: Any, state: dict, hp: dict) -> tuple[Any, dict]:
        v = state["v"] * hp["momentum"]  # made from the state: on the parameter's backend
        v -= hp["lr"] * _l2(data, grad, hp)
        return v, {"v": v}


class AdaGrad(Optimizer):
    """AdaGrad: ``h += grad**2; param -= lr * grad / (sqrt(h) + eps)``."""

    lr = hyperparameter()
    eps = hyperparameter()
    weight_decay = hyperparameter()
    _state_names = ("h",)

    def __init__(self, lr: float = 0.001, eps: float = 1e-8, *, weight_decay: float = 0.0) -> None:
        super().__init__()
        self.lr = lr
        self.eps = eps
        self.weight_decay = weight_decay

    def _compute(self, data: Any, grad: Any, state: dict, hp: dict) -> tuple[Any, dict]:
        xp = get_array_module(data)
        grad = _l2(data, grad, hp)
        h = state["h"] + grad * grad
        step = xp.sqrt(h)
        step += hp["eps"]
        step = grad / step
        step *= -hp["lr"]
        return step, {"h": h}


class AdaDelta(Optimizer):
    """AdaDelta (Zeiler 2012): step sizes from running averages of squared grads and steps.

    ``lr`` (default 1, as in Zeiler's paper and PyTorch) scales each step.
    """

    lr = hyperparameter()
    rho = hyperparameter()
    eps = hyperparameter()
    weight_decay = hyperparameter()
    _state_names = ("msg", "msdx")

    def __init__(
        self, rho: float = 0.95, eps: float = 1e-6, *, lr: float = 1.0, weight_decay: float = 0.0
    ) -> None:
        super().__init__()
        self.rho = rho
        self.eps = eps
        self.lr = lr
        self.weight_decay = weight_decay

    def _compute(self, data: Any, grad: Any, state: dict, hp: dict) -> tuple[Any, dict]:
        xp = get_array_module(data)
        rho, eps = hp["rho"], hp["eps"]
        grad = _l2(data, grad, hp)
        msg = state["msg"] * rho
        msg += (1 - rho) * grad * grad
        dx = xp.sqrt((state["msdx"] + eps) / (msg + eps)) * grad
        msdx = state["msdx"] * rho
        msdx += (1 - rho) * dx * dx
        dx *= -hp["lr"]
        return dx, {"msg": msg, "msdx": msdx}


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015). ``alpha`` and ``lr`` are two names of the same step size.

    :meth:`step_size` is ``alpha`` with the bias correction of step ``t`` (what DeZero's
    ``Adam.lr`` returned).
    """

    lr = hyperparameter()
    alpha = hyperparameter("lr")
    beta1 = hyperparameter()
    beta2 = hyperparameter()
    eps = hyperparameter()
    weight_decay = hyperparameter()
    _state_names = ("m", "v")
    _counters = ("t",)

    def __init__(
        self,
        alpha: float = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-8,
        *,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__()
        self.t = 0
        self._next = 0
        self.alpha = alpha
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.weight_decay = weight_decay

    def step_size(self, hp: dict | None = None) -> float:
        """``lr * sqrt(1 - beta2**t) / (1 - beta1**t)``: the bias-corrected step size."""
        hp = hp if hp is not None else self.defaults
        t = self.t + self.__dict__.get("_next", 0)
        fix1 = 1.0 - math.pow(hp["beta1"], t)
        fix2 = 1.0 - math.pow(hp["beta2"], t)
        return hp["lr"] * math.sqrt(fix2) / fix1

    def _apply(self, grouped: list) -> None:
        # the step counter advances only when the update is written: a refused update()
        # leaves the bias correction of later steps as it was
        self._next = 1
        try:
            super()._apply(grouped)
        finally:
            self._next = 0

    def _commit(self, plan: list) -> None:
        super()._commit(plan)
        self.t += self._next

    def _compute(self, data: Any, grad: Any, state: dict, hp: dict) -> tuple[Any, dict]:
        xp = get_array_module(data)
        beta1, beta2 = hp["beta1"], hp["beta2"]
        grad = self._grad(data, grad, hp)
        m0, v0 = state["m"], state["v"]
        m = grad - m0
        m *= 1 - beta1
        m += m0
        v = grad * grad
        v -= v0
        v *= 1 - beta2
        v += v0
        step = xp.sqrt(v)
        step += hp["eps"]
        step = m / step
        step *= -self.step_size(hp)
        return step, {"m": m, "v": v}

    def _grad(self, data: Any, grad: Any, hp: dict) -> Any:
        return _l2(data, grad, hp)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter 2019).

    Each step shrinks the parameter by ``lr * weight_decay * param`` besides the Adam step;
    the decay does not pass through the moment estimates.
    """

    def __init__(
        self,
        alpha: float = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-8,
        weight_decay: float = 0.01,
    ) -> None:
        super().__init__(alpha, beta1, beta2, eps, weight_decay=weight_decay)

    def _grad(self, data: Any, grad: Any, hp: dict) -> Any:
        return grad

    def _compute(self, data: Any, grad: Any, state: dict, hp: dict) -> tuple[Any, dict]:
        step, state = super()._compute(data, grad, state, hp)
        step -= (hp["lr"] * hp["weight_decay"]) * data
        return step, state
