"""The optimizers: SGD, MomentumSGD, AdaGrad, AdaDelta, Adam, AdamW.

Each has two forms of one arithmetic: ``_step`` writes into the parameter, its state
and scratch buffers with ``Backend.compute_into`` (used by :meth:`Optimizer.update` for
arrays that change in place, once nothing can fail), and ``_compute`` returns the change
and the new state as new arrays (for arrays that cannot change in place, and mixed
dtypes); both do the same operations in the same order, so they give the same bits. ``weight_decay``
(default 0) adds ``weight_decay * param`` to the gradient (L2), except in AdamW, where it
is decoupled.
"""

from __future__ import annotations

import math
from typing import Any

from zerograd.backends import backend_of, get_array_module

from .base import Optimizer, hyperparameter


def _l2(data: Any, grad: Any, hp: dict) -> Any:
    wd = hp.get("weight_decay", 0.0)
    return grad + wd * data if wd else grad


def _l2_into(into: Any, out: Any, data: Any, grad: Any, hp: dict) -> Any:
    """``grad + weight_decay * data`` written into ``out`` (``grad`` itself without decay)."""
    wd = hp.get("weight_decay", 0.0)
    if not wd:
        return grad
    into("multiply", data, wd, out=out)
    into("add", grad, out, out=out)
    return out


class SGD(Optimizer):
    """Stochastic gradient descent: ``param -= lr * grad``.

    Args:
        lr: the learning rate.
        weight_decay: L2 coefficient added to each gradient as ``weight_decay * param``.

    Raises:
        TypeError: a hyperparameter that is not a real number.
        ValueError: a hyperparameter out of its range.

    Examples:
        >>> import numpy as np
        >>> from zerograd import Parameter
        >>> p = Parameter(np.array([1.0]))
        >>> p.grad = Parameter(np.array([2.0]))
        >>> opt = SGD(lr=0.1).setup([p])
        >>> opt.update()
        >>> p.data
        array([0.8])
    """

    lr = hyperparameter()
    weight_decay = hyperparameter()

    def __init__(self, lr: float = 0.01, *, weight_decay: float = 0.0) -> None:
        super().__init__()
        self.lr = lr
        self.weight_decay = weight_decay

    def _compute(self, data: Any, grad: Any, state: dict, hp: dict) -> tuple[Any, dict]:
        return _l2(data, grad, hp) * -hp["lr"], {}

    def _scratch_count(self, hp: dict) -> int:
        return 1

    _paired = _compute  # _step does what this _compute does

    def _step(self, data: Any, grad: Any, state: dict, scratch: list, hp: dict) -> None:
        into = backend_of(data).compute_into
        (s,) = scratch
        into("multiply", _l2_into(into, s, data, grad, hp), -hp["lr"], out=s)
        into("add", data, s, out=data)


class MomentumSGD(Optimizer):
    """SGD with momentum: ``v = momentum * v - lr * grad; param += v``.

    Args:
        lr: the learning rate.
        momentum: the decay of the velocity ``v``, in [0, 1].
        weight_decay: L2 coefficient added to each gradient as ``weight_decay * param``.

    Raises:
        TypeError: a hyperparameter that is not a real number.
        ValueError: a hyperparameter out of its range.
    """

    lr = hyperparameter()
    momentum = hyperparameter(high=1.0)
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

    def _scratch_count(self, hp: dict) -> int:
        return 1

    _paired = _compute  # _step does what this _compute does

    def _step(self, data: Any, grad: Any, state: dict, scratch: list, hp: dict) -> None:
        into = backend_of(data).compute_into
        (s,) = scratch
        v = state["v"]
        into("multiply", v, hp["momentum"], out=v)
        into("multiply", _l2_into(into, s, data, grad, hp), hp["lr"], out=s)
        into("subtract", v, s, out=v)
        into("add", data, v, out=data)


class AdaGrad(Optimizer):
    """AdaGrad: ``h += grad**2; param -= lr * grad / (sqrt(h) + eps)``.

    Args:
        lr: the learning rate.
        eps: added to ``sqrt(h)`` to avoid dividing by zero (> 0).
        weight_decay: L2 coefficient added to each gradient as ``weight_decay * param``.

    Raises:
        TypeError: a hyperparameter that is not a real number.
        ValueError: a hyperparameter out of its range.
    """

    lr = hyperparameter()
    eps = hyperparameter(open=("low",))  # 0 would divide zero by zero
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

    def _scratch_count(self, hp: dict) -> int:
        return 2 if hp.get("weight_decay") else 1

    _paired = _compute  # _step does what this _compute does

    def _step(self, data: Any, grad: Any, state: dict, scratch: list, hp: dict) -> None:
        into = backend_of(data).compute_into
        s = scratch[0]
        grad = _l2_into(into, scratch[-1], data, grad, hp) if len(scratch) > 1 else grad
        h = state["h"]
        into("multiply", grad, grad, out=s)
        into("add", h, s, out=h)
        into("sqrt", h, out=s)
        into("add", s, hp["eps"], out=s)
        into("divide", grad, s, out=s)
        into("multiply", s, -hp["lr"], out=s)
        into("add", data, s, out=data)


class AdaDelta(Optimizer):
    """AdaDelta (Zeiler 2012): step sizes from running averages of squared grads and steps.

    ``lr`` (default 1, as in Zeiler's paper and PyTorch) scales each step.

    Args:
        rho: the decay of the running averages, in [0, 1].
        eps: added inside the square roots (> 0).
        lr: scales each step.
        weight_decay: L2 coefficient added to each gradient as ``weight_decay * param``.

    Raises:
        TypeError: a hyperparameter that is not a real number.
        ValueError: a hyperparameter out of its range.
    """

    lr = hyperparameter()
    rho = hyperparameter(high=1.0)
    eps = hyperparameter(open=("low",))  # 0 would divide zero by zero
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

    _paired = _compute  # _step does what this _compute does

    def _scratch_count(self, hp: dict) -> int:
        return 3 if hp.get("weight_decay") else 2

    def _step(self, data: Any, grad: Any, state: dict, scratch: list, hp: dict) -> None:
        into = backend_of(data).compute_into
        s, dx = scratch[0], scratch[1]
        grad = _l2_into(into, scratch[2], data, grad, hp) if len(scratch) > 2 else grad
        rho, eps = hp["rho"], hp["eps"]
        msg, msdx = state["msg"], state["msdx"]
        into("multiply", grad, 1 - rho, out=s)  # msg = rho * msg + (1 - rho) * grad**2
        into("multiply", s, grad, out=s)
        into("multiply", msg, rho, out=msg)
        into("add", msg, s, out=msg)
        into("add", msdx, eps, out=dx)  # dx = sqrt((msdx + eps) / (msg + eps)) * grad
        into("add", msg, eps, out=s)
        into("divide", dx, s, out=dx)
        into("sqrt", dx, out=dx)
        into("multiply", dx, grad, out=dx)
        into("multiply", dx, 1 - rho, out=s)  # msdx = rho * msdx + (1 - rho) * dx**2
        into("multiply", s, dx, out=s)
        into("multiply", msdx, rho, out=msdx)
        into("add", msdx, s, out=msdx)
        into("multiply", dx, -hp["lr"], out=dx)
        into("add", data, dx, out=data)


def _alpha_or_lr(owner: str, alpha: Any, lr: Any) -> Any:
    """``lr`` when given (PyTorch's spelling of Adam's ``alpha``), else ``alpha``."""
    if lr is None:
        return alpha
    if alpha != _ALPHA and alpha != lr:
        raise ValueError(
            f"{owner}: alpha={alpha!r} and lr={lr!r} name the same step size; give only one."
        )
    return lr


_ALPHA = 0.001  # Adam's default alpha (DeZero's)


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015). ``alpha`` and ``lr`` are two names of the same step size.

    ``Adam(lr=0.01)`` is ``Adam(alpha=0.01)``. Hyperparameters are checked when set:
    ``0 <= beta1, beta2 < 1`` and ``eps > 0``.

    :meth:`step_size` is ``alpha`` with the bias correction of step ``t`` (what DeZero's
    ``Adam.lr`` returned).

    Args:
        alpha: the step size.
        beta1: the decay of the first-moment estimate, in [0, 1).
        beta2: the decay of the second-moment estimate, in [0, 1).
        eps: added to the root of the second moment (> 0).
        weight_decay: L2 coefficient added to each gradient as ``weight_decay * param``.
        lr: another name for ``alpha`` (overrides it when given).

    Raises:
        TypeError: a hyperparameter that is not a real number.
        ValueError: a hyperparameter out of its range.
    """

    lr = hyperparameter()
    alpha = hyperparameter("lr")
    beta1 = hyperparameter(high=1.0, open=("high",))  # 1 divides by 0 in the bias correction
    beta2 = hyperparameter(high=1.0, open=("high",))  # 1 would make every step 0
    eps = hyperparameter(open=("low",))  # 0 would divide zero by zero
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
        lr: float | None = None,
    ) -> None:
        super().__init__()
        self.t = 0
        self._next = 0
        self.alpha = _alpha_or_lr(type(self).__name__, alpha, lr)
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.weight_decay = weight_decay

    def _coefficients(self, hp: dict) -> dict:
        return {**hp, "step": self.step_size(hp)}

    def step_size(self, hp: dict | None = None) -> float:
        """``lr * sqrt(1 - beta2**t) / (1 - beta1**t)``: the bias-corrected step size.

        Args:
            hp: the hyperparameters to use (a group's); None for the optimizer's defaults.

        Returns:
            The step size of the current step ``t``.
        """
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
        step *= -hp["step"]
        return step, {"m": m, "v": v}

    def _grad(self, data: Any, grad: Any, hp: dict) -> Any:
        return _l2(data, grad, hp)

    def _scratch_count(self, hp: dict) -> int:
        return 2 if hp.get("weight_decay") else 1

    _paired = _compute  # _step does what this _compute does

    def _step(self, data: Any, grad: Any, state: dict, scratch: list, hp: dict) -> None:
        into = backend_of(data).compute_into
        s = scratch[0]
        if len(scratch) > 1 and not isinstance(self, AdamW):
            grad = _l2_into(into, scratch[1], data, grad, hp)
        m, v = state["m"], state["v"]
        into("subtract", grad, m, out=s)  # m += (1 - beta1) * (grad - m)
        into("multiply", s, 1 - hp["beta1"], out=s)
        into("add", m, s, out=m)
        into("multiply", grad, grad, out=s)  # v += (1 - beta2) * (grad**2 - v)
        into("subtract", s, v, out=s)
        into("multiply", s, 1 - hp["beta2"], out=s)
        into("add", v, s, out=v)
        into("sqrt", v, out=s)
        into("add", s, hp["eps"], out=s)
        into("divide", m, s, out=s)
        into("multiply", s, -hp["step"], out=s)
        self._decay_into(into, s, data, scratch, hp)
        into("add", data, s, out=data)

    def _decay_into(self, into: Any, step: Any, data: Any, scratch: list, hp: dict) -> None:
        """Nothing for Adam (its weight decay went into the gradient); AdamW's decay."""


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter 2019).

    Each step shrinks the parameter by ``lr * weight_decay * param`` besides the Adam step;
    the decay does not pass through the moment estimates.

    Args:
        alpha: the step size.
        beta1: the decay of the first-moment estimate, in [0, 1).
        beta2: the decay of the second-moment estimate, in [0, 1).
        eps: added to the root of the second moment (> 0).
        weight_decay: the decoupled decay rate.
        lr: another name for ``alpha`` (overrides it when given).

    Raises:
        TypeError: a hyperparameter that is not a real number.
        ValueError: a hyperparameter out of its range.
    """

    def __init__(
        self,
        alpha: float = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-8,
        weight_decay: float = 0.01,
        *,
        lr: float | None = None,
    ) -> None:
        super().__init__(alpha, beta1, beta2, eps, weight_decay=weight_decay, lr=lr)

    def _grad(self, data: Any, grad: Any, hp: dict) -> Any:
        return grad

    def _compute(self, data: Any, grad: Any, state: dict, hp: dict) -> tuple[Any, dict]:
        step, state = super()._compute(data, grad, state, hp)
        step -= (hp["lr"] * hp["weight_decay"]) * data
        return step, state

    _paired = _compute  # Adam's _step with the decay below

    def _decay_into(self, into: Any, step: Any, data: Any, scratch: list, hp: dict) -> None:
        if len(scratch) > 1:
            s = scratch[1]
            into("multiply", data, hp["lr"] * hp["weight_decay"], out=s)
            into("subtract", step, s, out=step)
