"""Schedulers with a closed form ``lr = f(base_lr, t)``."""

from __future__ import annotations

import math
import numbers
from typing import Any

from .base import LRScheduler, _number, _positive_int


class StepLR(LRScheduler):
    """``base * gamma ** (t // step_size)``: decay by ``gamma`` every ``step_size`` steps."""

    def __init__(self, optimizer: Any, step_size: int, gamma: float = 0.1) -> None:
        self.step_size = _positive_int("StepLR", "step_size", step_size)
        self.gamma = _number("StepLR", "gamma", gamma)
        super().__init__(optimizer)

    def lr_at(self, base: float, t: int) -> float:
        return base * self.gamma ** (t // self.step_size)


class ExponentialLR(LRScheduler):
    """``base * gamma ** t``."""

    def __init__(self, optimizer: Any, gamma: float) -> None:
        self.gamma = _number("ExponentialLR", "gamma", gamma)
        super().__init__(optimizer)

    def lr_at(self, base: float, t: int) -> float:
        return base * self.gamma**t


def _cosine(base: float, eta_min: float, t: float, period: float) -> float:
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * t / period)) / 2


class CosineAnnealingLR(LRScheduler):
    """``eta_min + (base - eta_min) * (1 + cos(pi * t / T_max)) / 2`` (SGDR without restarts)."""

    def __init__(self, optimizer: Any, T_max: int, eta_min: float = 0.0) -> None:  # noqa: N803
        self.T_max = _positive_int("CosineAnnealingLR", "T_max", T_max)
        self.eta_min = _number("CosineAnnealingLR", "eta_min", eta_min)
        super().__init__(optimizer)

    def lr_at(self, base: float, t: int) -> float:
        return _cosine(base, self.eta_min, t, self.T_max)


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every period: ``T_0`` steps, each next ``T_mult`` times longer."""

    def __init__(
        self,
        optimizer: Any,
        T_0: int,  # noqa: N803
        T_mult: int = 1,  # noqa: N803
        eta_min: float = 0.0,
    ) -> None:
        self.T_0 = _positive_int("CosineAnnealingWarmRestarts", "T_0", T_0)
        self.T_mult = _positive_int("CosineAnnealingWarmRestarts", "T_mult", T_mult)
        self.eta_min = _number("CosineAnnealingWarmRestarts", "eta_min", eta_min)
        super().__init__(optimizer)

    def period(self, t: int) -> tuple[int, int]:
        """``(T_cur, T_i)``: the step within the current period, and its length."""
        t_i = self.T_0
        while t >= t_i:
            t -= t_i
            t_i *= self.T_mult
        return t, t_i

    def lr_at(self, base: float, t: int) -> float:
        t_cur, t_i = self.period(t)
        return _cosine(base, self.eta_min, t_cur, t_i)


class LinearWarmup(LRScheduler):
    """``base * (start + (1 - start) * min(t, warmup_steps) / warmup_steps)``.

    PyTorch's ``LinearLR`` with ``end_factor=1``: the lr grows linearly from
    ``start_factor * base`` to ``base`` over ``warmup_steps`` steps, then stays.
    """

    def __init__(self, optimizer: Any, warmup_steps: int, start_factor: float = 1 / 3) -> None:
        self.warmup_steps = _positive_int("LinearWarmup", "warmup_steps", warmup_steps)
        if isinstance(start_factor, numbers.Real) and start_factor == 0:
            raise ValueError("LinearWarmup: start_factor must be in (0, 1], got 0.")
        self.start_factor = _number("LinearWarmup", "start_factor", start_factor, 0.0, 1.0)
        super().__init__(optimizer)

    def lr_at(self, base: float, t: int) -> float:
        s = self.start_factor
        return base * (s + (1 - s) * min(t, self.warmup_steps) / self.warmup_steps)
