"""Optimizers (DeZero's ``dezero.optimizers``) and gradient hooks.

An optimizer is set up on a model (anything with ``params()``) and, on each
``update()``, changes every parameter that has a gradient. Per-parameter state (momenta,
running averages) lives on the parameter's backend and follows the parameter when it
moves (``to_gpu()``/``to_cpu()``). Updates happen in place on ``param.data`` where the
array type allows it (numpy, cupy), and keep its dtype.

>>> import numpy as np
>>> from zerograd import Parameter
>>> class Tiny:
...     def __init__(self):
...         self.w = Parameter(np.array([1.0, 2.0], dtype=np.float32))
...     def params(self):
...         yield self.w
>>> model = Tiny()
>>> opt = SGD(lr=0.5).setup(model)
>>> model.w.grad = Parameter(np.array([1.0, 1.0], dtype=np.float32))
>>> opt.update()
>>> model.w.data
array([0.5, 1.5], dtype=float32)
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from zerograd import Parameter
from zerograd.backends import as_array_of, backend_of, get_array_module

__all__ = [
    "AdaDelta",
    "AdaGrad",
    "Adam",
    "AdamW",
    "ClipGrad",
    "FreezeParam",
    "MomentumSGD",
    "Optimizer",
    "SGD",
    "WeightDecay",
]


class Optimizer:
    """Base class: ``setup(target)``, ``update()``, ``update_one(param)``, ``add_hook(f)``.

    ``target`` is a Layer/Model (anything with ``params()``) or an iterable of Parameters.
    Hooks are called as ``f(params)`` with the list of parameters that have a gradient,
    before any parameter changes. :meth:`update` first checks every gradient (shape, floating
    dtype) and changes nothing when one is wrong.
    """

    def __init__(self) -> None:
        self.target: Any = None
        self.hooks: list[Callable[[list[Parameter]], None]] = []
        self._state: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def setup(self, target: Any) -> Optimizer:
        """Remember the model whose parameters :meth:`update` changes; returns ``self``."""
        if not hasattr(target, "params"):
            try:
                params = list(target)
            except TypeError:
                raise TypeError(
                    f"{type(self).__name__}.setup(target): target must be a Layer/Model (with "
                    f"params()) or an iterable of Parameters, got {type(target).__name__}."
                ) from None
            bad = [type(p).__name__ for p in params if not isinstance(p, Parameter)]
            if bad:
                raise TypeError(
                    f"{type(self).__name__}.setup(target): every item must be a Parameter, got "
                    f"{', '.join(sorted(set(bad)))}."
                )
            target = _ParamList(params)
        self.target = target
        return self

    def _all_params(self) -> list[Parameter]:
        if self.target is None:
            raise RuntimeError(
                f"{type(self).__name__}.update(): no target; call optimizer.setup(model) first."
            )
        return list(self.target.params())

    def _label(self, index: int, param: Parameter) -> str:
        """``parameter 2 ('l1/W')``: the position in ``target.params()`` and the best name."""
        name = param.name
        flatten = getattr(self.target, "_flatten_params", None)
        if callable(flatten):
            keys: dict = {}
            flatten(keys)
            name = next((k for k, v in keys.items() if v is param), name)
        return f"parameter {index} ({name!r})" if name else f"parameter {index} (unnamed)"

    def _validate(self, all_params: list[Parameter]) -> None:
        """Refuse gradients that cannot update their parameter, before anything changes."""
        op = f"{type(self).__name__}.update()"
        for i, p in enumerate(all_params):
            if p.grad is None or p.data is None:
                continue
            g = p.grad.data
            if tuple(g.shape) != tuple(p.data.shape):
                raise ValueError(
                    f"{op}: {self._label(i, p)} of shape {tuple(p.data.shape)} has a gradient of "
                    f"shape {tuple(g.shape)}; nothing was updated. Gradients must have their "
                    f"parameter's shape."
                )
            for what, a in (("a gradient", g), ("data", p.data)):
                if backend_of(a).dtype_kind(a.dtype) != "f":
                    raise TypeError(
                        f"{op}: {self._label(i, p)} of shape {tuple(p.data.shape)} and dtype "
                        f"{p.data.dtype} has {what} of dtype {a.dtype}; nothing was updated. "
                        f"Parameters and their gradients must be floating point (e.g. float32)."
                    )

    def update(self) -> None:
        """Check every gradient, run the hooks, then update each parameter that has one.

        A gradient of the wrong shape or of a non-floating dtype raises before any hook runs
        or any parameter (or optimizer state) changes.
        """
        all_params = self._all_params()
        params = [p for p in all_params if p.grad is not None]
        self._validate(all_params)
        if self.hooks:
            for f in self.hooks:
                f(params)
            self._validate(all_params)  # a hook may have replaced gradients
        self._apply(params)

    def _apply(self, params: list[Parameter]) -> None:
        for param in params:
            if param.grad is not None:  # a hook (FreezeParam) may have dropped it
                self.update_one(param)

    def update_one(self, param: Parameter) -> None:
        """Change one parameter from its gradient (subclasses implement this)."""
        raise NotImplementedError(f"{type(self).__name__}.update_one is not implemented")

    def add_hook(self, f: Callable[[list[Parameter]], None]) -> None:
        """Call ``f(params)`` at the start of every :meth:`update` (WeightDecay, ClipGrad...)."""
        if not callable(f):
            raise TypeError(f"add_hook(f): f must be callable, got {type(f).__name__}.")
        self.hooks.append(f)

    def state(self, param: Parameter, *names: str) -> list[Any]:
        """The state arrays ``names`` of ``param`` (zeros at first), on the param's backend.

        State made on another backend (the param moved since) is converted first.
        """
        data = param.data
        st = self._state.get(param)
        if st is None:
            xp = get_array_module(data)
            st = self._state[param] = {n: xp.zeros_like(data) for n in names}
        else:
            for n, a in st.items():
                if type(a) is not type(data):
                    st[n] = as_array_of(a, backend_of(data))
        return [st[n] for n in names]

    def _store(self, param: Parameter, **arrays: Any) -> None:
        # needed for immutable array types, where ``a += b`` rebinds instead of writing
        self._state[param].update(arrays)


class _ParamList:
    """A plain list of Parameters given to ``setup`` instead of a model."""

    def __init__(self, params: list[Parameter]) -> None:
        self._params = params

    def params(self) -> Iterable[Parameter]:
        return iter(self._params)


# -- hooks ------------------------------------------------------------------------------


class WeightDecay:
    """Hook adding ``rate * param`` to each gradient (L2 regularisation)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate

    def __call__(self, params: list[Parameter]) -> None:
        rate = float(self.rate)
        for param in params:
            # a new array: gradient arrays can be shared between variables
            param.grad.data = param.grad.data + rate * param.data


class ClipGrad:
    """Hook scaling all gradients down so that their global L2 norm is at most ``max_norm``."""

    def __init__(self, max_norm: float) -> None:
        self.max_norm = max_norm

    def __call__(self, params: list[Parameter]) -> None:
        total = 0.0
        for param in params:
            g = param.grad.data
            total += float(get_array_module(g).sum(g * g))
        rate = float(self.max_norm) / (math.sqrt(total) + 1e-6)
        if rate < 1:
            for param in params:
                param.grad.data = param.grad.data * rate


class FreezeParam:
    """Hook that drops the gradients of the given layers or Parameters, so they stay fixed."""

    def __init__(self, *layers: Any) -> None:
        self.freeze_params: list[Parameter] = []
        for layer in layers:
            if isinstance(layer, Parameter):
                self.freeze_params.append(layer)
            elif hasattr(layer, "params"):
                self.freeze_params.extend(layer.params())
            else:
                raise TypeError(
                    f"FreezeParam(*layers): expected Layers or Parameters, got "
                    f"{type(layer).__name__}."
                )

    def __call__(self, params: list[Parameter]) -> None:
        for p in self.freeze_params:
            p.grad = None


# -- optimizers -------------------------------------------------------------------------


class SGD(Optimizer):
    """Stochastic gradient descent: ``param -= lr * grad``."""

    def __init__(self, lr: float = 0.01) -> None:
        super().__init__()
        self.lr = lr

    def update_one(self, param: Parameter) -> None:
        param.data -= float(self.lr) * param.grad.data


class MomentumSGD(Optimizer):
    """SGD with momentum: ``v = momentum * v - lr * grad; param += v``."""

    def __init__(self, lr: float = 0.01, momentum: float = 0.9) -> None:
        super().__init__()
        self.lr = lr
        self.momentum = momentum

    def update_one(self, param: Parameter) -> None:
        (v,) = self.state(param, "v")
        v *= float(self.momentum)
        v -= float(self.lr) * param.grad.data
        self._store(param, v=v)
        param.data += v


class AdaGrad(Optimizer):
    """AdaGrad: ``h += grad**2; param -= lr * grad / (sqrt(h) + eps)``."""

    def __init__(self, lr: float = 0.001, eps: float = 1e-8) -> None:
        super().__init__()
        self.lr = lr
        self.eps = eps

    def update_one(self, param: Parameter) -> None:
        xp = get_array_module(param.data)
        (h,) = self.state(param, "h")
        grad = param.grad.data
        h += grad * grad
        self._store(param, h=h)
        param.data -= float(self.lr) * grad / (xp.sqrt(h) + float(self.eps))


class AdaDelta(Optimizer):
    """AdaDelta (Zeiler 2012): step sizes from running averages of squared grads and steps."""

    def __init__(self, rho: float = 0.95, eps: float = 1e-6) -> None:
        super().__init__()
        self.rho = rho
        self.eps = eps

    def update_one(self, param: Parameter) -> None:
        xp = get_array_module(param.data)
        msg, msdx = self.state(param, "msg", "msdx")
        rho, eps = float(self.rho), float(self.eps)
        grad = param.grad.data
        msg *= rho
        msg += (1 - rho) * grad * grad
        dx = xp.sqrt((msdx + eps) / (msg + eps)) * grad
        msdx *= rho
        msdx += (1 - rho) * dx * dx
        self._store(param, msg=msg, msdx=msdx)
        param.data -= dx


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015). ``lr`` is ``alpha`` with the bias correction of step ``t``."""

    def __init__(
        self, alpha: float = 0.001, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8
    ) -> None:
        super().__init__()
        self.t = 0
        self.alpha = alpha
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps

    def _apply(self, params: list[Parameter]) -> None:
        # the step counter advances only once the gradients passed the checks: a refused
        # update() leaves the bias correction of later steps as it was
        self.t += 1
        super()._apply(params)

    @property
    def lr(self) -> float:
        """``alpha * sqrt(1 - beta2**t) / (1 - beta1**t)``: the bias-corrected step size."""
        fix1 = 1.0 - math.pow(self.beta1, self.t)
        fix2 = 1.0 - math.pow(self.beta2, self.t)
        return float(self.alpha) * math.sqrt(fix2) / fix1

    def update_one(self, param: Parameter) -> None:
        xp = get_array_module(param.data)
        m, v = self.state(param, "m", "v")
        beta1, beta2 = float(self.beta1), float(self.beta2)
        grad = param.grad.data
        m += (1 - beta1) * (grad - m)
        v += (1 - beta2) * (grad * grad - v)
        self._store(param, m=m, v=v)
        param.data -= self.lr * m / (xp.sqrt(v) + float(self.eps))


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter 2019).

    Each step first shrinks the parameter, ``param -= alpha * weight_decay * param``, then
    takes the Adam step; the decay does not pass through the moment estimates.
    """

    def __init__(
        self,
        alpha: float = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-8,
        weight_decay: float = 0.01,
    ) -> None:
        super().__init__(alpha, beta1, beta2, eps)
        self.weight_decay = weight_decay

    def update_one(self, param: Parameter) -> None:
        param.data -= (float(self.alpha) * float(self.weight_decay)) * param.data
        super().update_one(param)
