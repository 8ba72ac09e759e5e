"""Schedulers with a closed form ``lr = f(base_lr, t)``."""

from __future__ import annotations

import math
from typing import Any

from zerograd.checks import is_real, positive_int, real_number

from .base import LRScheduler


def _factor(owner: str, name: str, v: Any) -> float:
    """``v`` as a finite float >= 0: an infinite factor or eta_min makes the lr inf or nan."""
    x = real_number(owner, name, v, 0.0)
    if x == math.inf:
        raise ValueError(f"{owner}: {name} must be a finite number >= 0, got {v!r}")
    return x


class StepLR(LRScheduler):
    """``base * gamma ** (t // step_size)``: decay by ``gamma`` every ``step_size`` steps.

    Args:
        optimizer: the optimizer whose groups' ``lr`` this sets (setup already called).
        step_size: the steps between two decays.
        gamma: the decay factor.

    Raises:
        TypeError: ``optimizer`` is not a zerograd_nn optimizer.
        ValueError: a ``step_size`` that is not a positive int, or a ``gamma`` that is not a
            finite number >= 0.

    Examples:
        >>> from zerograd_nn.models import MLP
        >>> from zerograd_nn.optimizers import SGD
        >>> sched = StepLR(SGD(lr=1.0).setup(MLP((2,))), step_size=2, gamma=0.5)
        >>> sched.lr_at(1.0, 5)
        0.25
    """

    def __init__(self, optimizer: Any, step_size: int, gamma: float = 0.1) -> None:
        self.step_size = positive_int("StepLR", "step_size", step_size)
        self.gamma = _factor("StepLR", "gamma", gamma)
        super().__init__(optimizer)

    def lr_at(self, base: float, t: int) -> float:
        return base * self.gamma ** (t // self.step_size)


class ExponentialLR(LRScheduler):
    """``base * gamma ** t``.

    Args:
        optimizer: the optimizer whose groups' ``lr`` this sets (setup already called).
        gamma: the decay factor per step.

    Raises:
        TypeError: ``optimizer`` is not a zerograd_nn optimizer.
        ValueError: a ``gamma`` that is not a finite number >= 0.
    """

    def __init__(self, optimizer: Any, gamma: float) -> None:
        self.gamma = _factor("ExponentialLR", "gamma", gamma)
        super().__init__(optimizer)

    def lr_at(self, base: float, t: int) -> float:
        return base * self.gamma**t


def _cosine(base: float, eta_min: float, t: float, period: float) -> float:
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * t / period)) / 2


class CosineAnnealingLR(LRScheduler):
    """``eta_min + (base - eta_min) * (1 + cos(pi * t / T_max)) / 2`` (SGDR without restarts).

    Args:
        optimizer: the optimizer whose groups' ``lr`` this sets (setup already called).
        T_max: the steps of one half cosine period.
        eta_min: the lr reached at ``T_max``.

    Raises:
        TypeError: ``optimizer`` is not a zerograd_nn optimizer.
        ValueError: a ``T_max`` that is not a positive int, or an ``eta_min`` that is not a
            finite number >= 0.
    """

    def __init__(self, optimizer: Any, T_max: int, eta_min: float = 0.0) -> None:  # noqa: N803
        self.T_max = positive_int("CosineAnnealingLR", "T_max", T_max)
        self.eta_min = _factor("CosineAnnealingLR", "eta_min", eta_min)
        super().__init__(optimizer)

    def lr_at(self, base: float, t: int) -> float:
        return _cosine(base, self.eta_min, t, self.T_max)


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every period: ``T_0`` steps, each next ``T_mult`` times longer.

    As PyTorch's, it computes each lr from the base lr alone: an lr set by hand lasts until
    the next ``step()``, which replaces it (the other schedules go on from it).

    Args:
        optimizer: the optimizer whose groups' ``lr`` this sets (setup already called).
        T_0: the steps of the first period.
        T_mult: how many times longer each next period is.
        eta_min: the lowest lr, at the end of each period.

    Raises:
        TypeError: ``optimizer`` is not a zerograd_nn optimizer.
        ValueError: ``T_0`` or ``T_mult`` not a positive int, or an ``eta_min`` that is not
            a number.
    """

    def __init__(
        self,
        optimizer: Any,
        T_0: int,  # noqa: N803
        T_mult: int = 1,  # noqa: N803
        eta_min: float = 0.0,
    ) -> None:
        self.T_0 = positive_int("CosineAnnealingWarmRestarts", "T_0", T_0)
        self.T_mult = positive_int("CosineAnnealingWarmRestarts", "T_mult", T_mult)
        self.eta_min = _factor("CosineAnnealingWarmRestarts", "eta_min", eta_min)
        super().__init__(optimizer)

    def period(self, t: int) -> tuple[int, int]:
        """The step within the current period, and that period's length.

        Args:
            t: the step count.

        Returns:
            ``(T_cur, T_i)``.
        """
        t_i = self.T_0
        while t >= t_i:
            t -= t_i
            t_i *= self.T_mult
        return t, t_i

    def lr_at(self, base: float, t: int) -> float:
        t_cur, t_i = self.period(t)
        return _cosine(base, self.eta_min, t_cur, t_i)

    def follow(self, group: int, lr: float) -> None:
        """Nothing: as in PyTorch, each lr comes from the base lr alone.

        An lr set by hand lasts until the next step.
        """


class LinearWarmup(LRScheduler):
    """``base * (start + (1 - start) * min(t, warmup_steps) / warmup_steps)``.

    PyTorch's ``LinearLR`` with ``end_factor=1``: the lr grows linearly from
    ``start_factor * base`` to ``base`` over ``warmup_steps`` steps, then stays.

    Args:
        optimizer: the optimizer whose groups' ``lr`` this sets (setup already called).
        warmup_steps: the steps until the lr reaches ``base``.
        start_factor: the fraction of ``base`` at step 0, in (0, 1].

    Raises:
        TypeError: ``optimizer`` is not a zerograd_nn optimizer.
        ValueError: a ``warmup_steps`` that is not a positive int, or ``start_factor``
            outside (0, 1].
    """

    def __init__(self, optimizer: Any, warmup_steps: int, start_factor: float = 1 / 3) -> None:
        self.warmup_steps = positive_int("LinearWarmup", "warmup_steps", warmup_steps)
        if is_real(start_factor) and not 0 < float(start_factor) <= 1:  # nan too
            raise ValueError(
                f"LinearWarmup: start_factor must be a number in (0, 1], got {start_factor!r}"
            )
        self.start_factor = real_number("LinearWarmup", "start_factor", start_factor)
        super().__init__(optimizer)

    def lr_at(self, base: float, t: int) -> float:
        s = self.start_factor
        return base * (s + (1 - s) * min(t, self.warmup_steps) / self.warmup_steps)
