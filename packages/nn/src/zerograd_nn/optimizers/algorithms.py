"""The optimizers: SGD, MomentumSGD, AdaGrad, AdaDelta, Adam, AdamW.

Each writes its update once, as ``_rule(u, data, grad, state, scratch, hp)`` against a
namespace ``u`` that either writes into the state and scratch arrays or makes new arrays
(:mod:`.inplace`). ``weight_decay`` (default 0) adds ``weight_decay * param`` to the
gradient (L2), except in AdamW, where it is decoupled.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

from zerograd import Parameter

from .base import Optimizer, hyperparameter


def _l2(u: Any, out: Any, data: Any, grad: Any, hp: dict) -> Any:
    """``grad + weight_decay * data`` (into ``out``); ``grad`` itself without decay."""
    wd = hp.get("weight_decay", 0.0)
    if not wd:
        return grad
    return u.add(grad, u.multiply(data, wd, out=out), out=out)


class SGD(Optimizer):
    """Stochastic gradient descent: ``param -= lr * grad``, with PyTorch's momentum if asked.

    With ``momentum > 0`` it is PyTorch's ``torch.optim.SGD`` (no dampening, no Nesterov)::

        g = grad + weight_decay * param
        v = momentum * v + g        # v starts at zero
        param -= lr * v

    The velocity ``v`` holds gradients, not steps, so a scheduled ``lr`` applies to all of
    it at once; DeZero's :class:`MomentumSGD` keeps ``v = momentum * v - lr * g`` (steps
    taken with the lr of their time) and adds ``v``. Both agree while ``lr`` is constant.

    Args:
        lr: the learning rate.
        momentum: PyTorch's momentum factor, in [0, 1] (0: plain SGD, no state).
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
    momentum = hyperparameter(high=1.0, missing=0.0)  # missing: SGD saved before it had one
    weight_decay = hyperparameter()
    _state_names = ("v",)
    #: torch.optim.SGD's positional order after the parameters
    _pytorch_positional = ("lr", "momentum", "dampening", "weight_decay", "nesterov")

    def __init__(
        self, lr: float = 0.01, *, momentum: float = 0.0, weight_decay: float = 0.0
    ) -> None:
        super().__init__(lr=lr, momentum=momentum, weight_decay=weight_decay)

    def _state_for(self, hp: dict) -> tuple[str, ...]:
        return self._state_names if hp["momentum"] else ()

    def _scratch_count(self, hp: dict) -> int:
        return 1

    def _rule(
        self, u: Any, data: Any, grad: Any, state: dict, scratch: list, hp: dict
    ) -> tuple[Any, dict]:
        (s,) = scratch
        g = _l2(u, s, data, grad, hp)
        if not hp["momentum"]:
            return u.multiply(g, -hp["lr"], out=s), {}
        v = u.multiply(state["v"], hp["momentum"], out=state["v"])
        v = u.add(v, g, out=v)
        return u.multiply(v, -hp["lr"], out=s), {"v": v}


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
        super().__init__(lr=lr, momentum=momentum, weight_decay=weight_decay)

    def _scratch_count(self, hp: dict) -> int:
        return 1

    def _rule(
        self, u: Any, data: Any, grad: Any, state: dict, scratch: list, hp: dict
    ) -> tuple[Any, dict]:
        (s,) = scratch
        v = u.multiply(state["v"], hp["momentum"], out=state["v"])
        s = u.multiply(_l2(u, s, data, grad, hp), hp["lr"], out=s)
        v = u.subtract(v, s, out=v)
        return v, {"v": v}


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
    _nonnegative_state = ("h",)  # a sum of squares
    _pytorch_positional = ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps")
    _pytorch_name = "Adagrad"

    def __init__(self, lr: float = 0.001, eps: float = 1e-8, *, weight_decay: float = 0.0) -> None:
        super().__init__(lr=lr, eps=eps, weight_decay=weight_decay)

    def _scratch_count(self, hp: dict) -> int:
        return 2 if hp.get("weight_decay") else 1

    def _rule(
        self, u: Any, data: Any, grad: Any, state: dict, scratch: list, hp: dict
    ) -> tuple[Any, dict]:
        s = scratch[0]
        grad = _l2(u, scratch[-1], data, grad, hp)
        h = u.add(state["h"], u.multiply(grad, grad, out=s), out=state["h"])
        s = u.sqrt(h, out=s)
        s = u.add(s, hp["eps"], out=s)
        s = u.divide(grad, s, out=s)
        return u.multiply(s, -hp["lr"], out=s), {"h": h}


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
    _nonnegative_state = ("msg", "msdx")  # running means of squares
    _pytorch_positional = ("lr", "rho", "eps", "weight_decay")
    _pytorch_name = "Adadelta"

    def __init__(
        self, rho: float = 0.95, eps: float = 1e-6, *, lr: float = 1.0, weight_decay: float = 0.0
    ) -> None:
        super().__init__(rho=rho, eps=eps, lr=lr, weight_decay=weight_decay)

    def _scratch_count(self, hp: dict) -> int:
        return 3 if hp.get("weight_decay") else 2

    def _rule(
        self, u: Any, data: Any, grad: Any, state: dict, scratch: list, hp: dict
    ) -> tuple[Any, dict]:
        s, dx = scratch[0], scratch[1]
        grad = _l2(u, scratch[-1], data, grad, hp)
        rho, eps = hp["rho"], hp["eps"]
        s = u.multiply(grad, 1 - rho, out=s)  # msg = rho * msg + (1 - rho) * grad**2
        s = u.multiply(s, grad, out=s)
        msg = u.multiply(state["msg"], rho, out=state["msg"])
        msg = u.add(msg, s, out=msg)
        dx = u.add(state["msdx"], eps, out=dx)  # dx = sqrt((msdx + eps) / (msg + eps)) * grad
        s = u.add(msg, eps, out=s)
        dx = u.divide(dx, s, out=dx)
        dx = u.sqrt(dx, out=dx)
        dx = u.multiply(dx, grad, out=dx)
        s = u.multiply(dx, 1 - rho, out=s)  # msdx = rho * msdx + (1 - rho) * dx**2
        s = u.multiply(s, dx, out=s)
        msdx = u.multiply(state["msdx"], rho, out=state["msdx"])
        msdx = u.add(msdx, s, out=msdx)
        return u.multiply(dx, -hp["lr"], out=dx), {"msg": msg, "msdx": msdx}


def _bias_corrected(hp: dict, n: int) -> float:
    """``lr * sqrt(1 - beta2**n) / (1 - beta1**n)``: Adam's step size at step ``n``."""
    fix1 = 1.0 - math.pow(hp["beta1"], n)
    fix2 = 1.0 - math.pow(hp["beta2"], n)
    return hp["lr"] * math.sqrt(fix2) / fix1


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
    ``0 <= beta1, beta2 < 1`` and ``eps > 0``. Each step is DeZero's::

        g = grad + weight_decay * param
        m += (1 - beta1) * (g - m)
        v += (1 - beta2) * (g * g - v)
        param -= lr * sqrt(1 - beta2**n) / (1 - beta1**n) * m / (sqrt(v) + eps)

    ``eps`` is added to ``sqrt(v)`` before the bias correction (PyTorch adds it after:
    ``m_hat / (sqrt(v_hat) + eps)``); the two agree up to ``eps``'s share of the step.

    ``n`` counts the steps of that parameter, as in PyTorch and Chainer: a parameter
    without a gradient in an update (frozen, unused, added later) takes no step, and its
    moments and its count stay as they were. The state dict saves a count that is not
    ``t`` as its entry's ``"t"``. The attribute ``t`` is DeZero's: the number of
    :meth:`update` calls; :meth:`step_size` is ``alpha`` with the bias correction of step
    ``t`` (what DeZero's ``Adam.lr`` returned), the step size of a parameter updated at
    every call.

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
    _nonnegative_state = ("v",)  # a running mean of squares: its root is taken
    _counters = ("t",)
    _entry_counters = ("t",)
    _decoupled_decay = False  # weight_decay: L2 in the gradient (Adam) or decoupled (AdamW)
    _pytorch_positional = ("lr", "betas", "eps", "weight_decay", "amsgrad")

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
        super().__init__(
            alpha=_alpha_or_lr(type(self).__name__, alpha, lr),
            beta1=beta1,
            beta2=beta2,
            eps=eps,
            weight_decay=weight_decay,
        )
        self.t = 0
        self._next = 0  # 1 while update() writes: the commit then counts a call of update()
        # each parameter's steps behind t (t minus its own count), from its first step on:
        # it changes only when the parameter misses an update, never in a steady update
        self._behind: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def _cohort(self, param: Parameter) -> int:
        # a parameter that never took a step is t behind: its next step is its first
        return self._behind.get(param, self.t)

    def _coefficients(self, hp: dict, cohort: int) -> dict:
        return {**hp, "step": _bias_corrected(hp, self.t + 1 - cohort)}

    def step_size(self, hp: dict | None = None) -> float:
        """``lr * sqrt(1 - beta2**t) / (1 - beta1**t)``: the bias-corrected step size.

        Args:
            hp: the hyperparameters to use (a group's); None for the optimizer's defaults.

        Returns:
            The step size of step ``t`` (of a parameter updated at every call).

        Raises:
            ZeroDivisionError: no update yet (``t == 0``), where the correction divides
                by ``1 - beta1**0``.
        """
        if not self.t:
            raise ZeroDivisionError(
                f"{type(self).__name__}.step_size(): no update yet (t == 0), and the bias "
                f"correction of step 0 divides by 1 - beta1**0 == 0. Call it after "
                f"update(); the first update's step size is "
                f"{_bias_corrected(hp if hp is not None else self.defaults, 1)!r}."
            )
        return _bias_corrected(hp if hp is not None else self.defaults, self.t)

    def _apply(self, grouped: list, steady: Any = None) -> None:
        # the counts advance only when the update is written: a refused update() leaves
        # the bias correction of later steps as it was
        self._next = 1
        try:
            super()._apply(grouped, steady)
        finally:
            self._next = 0
        behind = self._behind
        if steady is not None and all(
            sum([len(s[2]) for s in parts]) == len(ps) for parts, (_, ps) in zip(steady, grouped)
        ):
            return  # every parameter took its step
        for _, ps in grouped:
            for p in ps:
                if p.grad is None and p in behind:
                    behind[p] += 1

    def _commit(self, plan: list) -> None:
        super()._commit(plan)
        t, behind = self.t, self._behind
        if not self._next:  # update_one(param): that parameter took a step, t did not
            for p, _, _ in plan:
                behind[p] = behind.get(p, t) - 1
            self._packer.forget()  # its segment was packed for its old count
            return
        for p, _, args in plan:
            if p is not None:
                behind.setdefault(p, t)
            elif args[1]:  # a new segment: its parameters may be taking their first step
                for q in args[3]:
                    behind.setdefault(q, t)
        self.t = t + 1

    def lend_gradients(self, scale: float | None = None) -> tuple[list[Any], list[Parameter]]:
        bufs, covered = super().lend_gradients(scale)
        # packed for the next update, with the counts of now: the update reuses the segments
        t, behind = self.t, self._behind
        for p in covered:
            behind.setdefault(p, t)
        return bufs, covered

    def _entry_counts(self, param: Parameter) -> dict[str, int]:
        # only a count that is not t: the state dict of a run without gaps stays as it was
        behind = self._behind.get(param, self.t)
        return {"t": self.t - behind} if behind else {}

    def _restore_entry_counts(self, counts: dict) -> None:
        t = self.t  # an entry saved without its count (before counts per parameter): t
        self._behind = weakref.WeakKeyDictionary({p: t - c.get("t", t) for p, c in counts.items()})

    def clear_state(self) -> None:
        super().clear_state()
        self._behind = weakref.WeakKeyDictionary()

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_behind"] = list(self._behind.items())
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        behind = state.pop("_behind", None)
        state.setdefault("_next", 0)
        super().__setstate__(state)
        if behind is None:  # pickled before counts per parameter: each at t
            behind = [(p, 0) for p in self._state]
        self._behind = weakref.WeakKeyDictionary(behind)

    def _scratch_count(self, hp: dict) -> int:
        return 2 if hp.get("weight_decay") else 1

    def _rule(
        self, u: Any, data: Any, grad: Any, state: dict, scratch: list, hp: dict
    ) -> tuple[Any, dict]:
        s = scratch[0]
        if not self._decoupled_decay:
            grad = _l2(u, scratch[-1], data, grad, hp)
        m, v = state["m"], state["v"]
        s = u.subtract(grad, m, out=s)  # m += (1 - beta1) * (grad - m)
        s = u.multiply(s, 1 - hp["beta1"], out=s)
        m = u.add(m, s, out=m)
        s = u.multiply(grad, grad, out=s)  # v += (1 - beta2) * (grad**2 - v)
        s = u.subtract(s, v, out=s)
        s = u.multiply(s, 1 - hp["beta2"], out=s)
        v = u.add(v, s, out=v)
        s = u.sqrt(v, out=s)
        s = u.add(s, hp["eps"], out=s)
        s = u.divide(m, s, out=s)
        s = u.multiply(s, -hp["step"], out=s)
        wd = hp.get("weight_decay", 0.0)
        if wd and self._decoupled_decay:  # AdamW: the decay bypasses the moments
            decay = u.multiply(data, hp["lr"] * wd, out=scratch[1])
            s = u.subtract(s, decay, out=s)
        return s, {"m": m, "v": v}


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter 2019).

    Each step shrinks the parameter by ``lr * weight_decay * param`` besides the Adam step;
    the decay does not pass through the moment estimates. The arguments and errors are
    :class:`Adam`'s, ``weight_decay`` (default 0.01) being the decoupled decay rate.
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

    _decoupled_decay = True
    _pytorch_positional = ("lr", "betas", "eps", "weight_decay", "amsgrad")
