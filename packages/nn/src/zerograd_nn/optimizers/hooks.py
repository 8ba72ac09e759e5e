"""DeZero's optimizer hooks: ``WeightDecay``, ``ClipGrad``, ``FreezeParam``.

A hook is called as ``f(params)`` with the parameters that have a gradient, before any
parameter changes. :meth:`Optimizer.update` hands hooks private copies of the gradients,
so a hook (these or yours, in place or not) cannot reach another parameter's gradient,
and a hook that raises leaves every gradient as it was.
"""

from __future__ import annotations

import math
from typing import Any

from zerograd import Parameter, Variable
from zerograd.backends import backend_of, get_array_module, sum_dtype_of

from .hyper import check_hyper
from .watch import report_assignments


@report_assignments
class WeightDecay:
    """Hook adding ``rate * param`` to each gradient (L2 regularisation).

    Args:
        rate: the decay coefficient: a finite number >= 0 (a 0-d array counts).

    Raises:
        TypeError: ``rate`` is not a real number.
        ValueError: ``rate`` is negative or not finite (checked again at each call, for
            a rate assigned later).

    To spare biases and normalization scales, use the optimizers' ``weight_decay`` with
    :func:`~zerograd_nn.optimizers.weight_decay_groups` instead.
    """

    def __init__(self, rate: float) -> None:
        check_hyper("WeightDecay", "rate", rate)
        self.rate = rate

    def __call__(self, params: list[Parameter]) -> None:
        """Add ``rate * param.data`` to each parameter's gradient.

        A parameter whose gradient a hook before this one dropped (FreezeParam) is left
        alone, as torch.optim's ``weight_decay`` skips parameters without a gradient.

        Args:
            params: the parameters that have a gradient.
        """
        rate = check_hyper("WeightDecay", "rate", self.rate)
        for param in params:
            if param.grad is not None:
                param.grad = Variable(param.grad.data + rate * param.data)


@report_assignments
class ClipGrad:
    """Hook scaling all gradients down so that their global L2 norm is at most ``max_norm``.

    float16 gradients are squared and added in float32, as PyTorch's norms are: in float16
    a gradient past 256 squares to ``inf``, which scaled every gradient to 0. They are
    scaled in float32 too and rounded once: the factor ``max_norm / norm`` rounded to
    float16 first (as PyTorch's ``clip_grad_norm_`` does) is subnormal or 0 for a small
    ``max_norm``, and the clipped norm then overshoots ``max_norm`` or is 0.

    Args:
        max_norm: the largest global L2 norm allowed: a finite number >= 0 (a 0-d
            array counts).

    Raises:
        TypeError: ``max_norm`` is not a real number.
        ValueError: ``max_norm`` is negative or not finite (checked again at each call).
    """

    def __init__(self, max_norm: float) -> None:
        check_hyper("ClipGrad", "max_norm", max_norm)
        self.max_norm = max_norm

    def __call__(self, params: list[Parameter]) -> None:
        """Scale every gradient by one factor if their global norm exceeds ``max_norm``.

        Args:
            params: the parameters that have a gradient.
        """
        limit = check_hyper("ClipGrad", "max_norm", self.max_norm)
        # a hook before this one may have dropped some (FreezeParam), as PyTorch's
        # clip_grad_norm_ skips parameters without a gradient
        params = [p for p in params if p.grad is not None]
        total = 0.0
        for param in params:
            g = param.grad.data
            wide = sum_dtype_of(g)
            if wide is not None:  # float16: squared and added in float32 (300**2 is inf)
                g = backend_of(g).astype(g, wide)
            total += float(get_array_module(g).sum(g * g))
        rate = limit / (math.sqrt(total) + 1e-6)
        if rate < 1:
            for param in params:
                g = param.grad.data
                wide = sum_dtype_of(g)
                if wide is None:
                    param.grad = Variable(g * rate)
                else:  # float16 would round the factor first: 1e-2 / 6e4 is subnormal there
                    b = backend_of(g)
                    param.grad = Variable(b.astype(b.astype(g, wide) * rate, g.dtype))


@report_assignments
class FreezeParam:
    """Hook that drops the gradients of the given layers or Parameters, so they stay fixed.

    Only the gradients of the parameters the optimizer is updating are dropped: a frozen
    parameter of another optimizer keeps its gradient for that one.

    Args:
        *layers: Layers (all their parameters) or Parameters to freeze.

    Raises:
        TypeError: an argument that is neither a Layer nor a Parameter.
    """

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
        """Drop the gradients of the frozen parameters among ``params``.

        A frozen parameter that the update was not given keeps its gradient (DeZero's
        dropped it): another optimizer may update it (a GAN's discriminator), and the
        update can give back only the gradients it holds copies of if a later hook raises.

        Args:
            params: the parameters that have a gradient.
        """
        frozen = {id(p) for p in self.freeze_params}
        for p in params:
            if id(p) in frozen:
                p.grad = None
