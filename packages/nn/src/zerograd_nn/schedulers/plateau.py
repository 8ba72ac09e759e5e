"""ReduceLROnPlateau: lower the lr when a metric stops improving."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from zerograd import Variable
from zerograd.checks import integer, real_number

from .base import _groups, _StateMixin


class ReduceLROnPlateau(_StateMixin):
    """Multiply each group's lr by ``factor`` when the metric stopped improving.

    After more than ``patience`` calls of ``step(metric)`` without an improvement (in
    ``mode`` "min" or "max", by more than ``threshold``, relative or absolute), the lrs are
    reduced (never below ``min_lr``; changes smaller than ``eps`` are skipped), then
    ``cooldown`` calls pass before counting again.

    Args:
        optimizer: the optimizer whose groups' ``lr`` this sets (setup already called).
        mode: "min" when a lower metric is better, "max" when a higher one is.
        factor: the multiplier applied to the lrs, in (0, 1).
        patience: calls without improvement tolerated before reducing.
        threshold: the least change that counts as an improvement.
        threshold_mode: "rel" (relative to the best value) or "abs".
        cooldown: calls to wait after a reduction before counting again.
        min_lr: the lowest lr, one for all groups or one per group.
        eps: reductions smaller than this are skipped.

    Raises:
        TypeError: ``optimizer`` is not a zerograd_nn optimizer.
        ValueError: a mode, threshold_mode or number out of range.
    """

    def __init__(
        self,
        optimizer: Any,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | Sequence[float] = 0.0,
        eps: float = 1e-8,
    ) -> None:
        owner = "ReduceLROnPlateau"
        groups = _groups(owner, optimizer)
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise ValueError(
                f"{owner}: mode must be 'min' or 'max' and threshold_mode 'rel' or 'abs', got "
                f"{mode!r} and {threshold_mode!r}."
            )
        if not 0 < real_number(owner, "factor", factor) < 1:
            raise ValueError(f"{owner}: factor must be in (0, 1), got {factor!r}.")
        mins = list(min_lr) if isinstance(min_lr, (list, tuple)) else [min_lr] * len(groups)
        if len(mins) != len(groups):
            raise ValueError(f"{owner}: {len(mins)} min_lr values for {len(groups)} groups.")
        self.optimizer = optimizer
        self.mode, self.threshold_mode = mode, threshold_mode
        self.factor = float(factor)
        self.patience = integer(owner, "patience", patience, low=0)
        self.threshold = real_number(owner, "threshold", threshold, 0.0)
        self.cooldown = integer(owner, "cooldown", cooldown, low=0)
        self.min_lrs = [real_number(owner, "min_lr", m, 0.0) for m in mins]
        self.eps = real_number(owner, "eps", eps, 0.0)
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        self.last_epoch = 0
        self._last_lr = [float(g["lr"]) for g in groups]

    def _better(self, a: float) -> bool:
        rel = self.threshold_mode == "rel"
        if self.mode == "min":
            return a < (self.best * (1 - self.threshold) if rel else self.best - self.threshold)
        return a > (self.best * (1 + self.threshold) if rel else self.best + self.threshold)

    def step(self, metric: Any) -> None:
        """Record this step's ``metric`` (e.g. the validation loss) and reduce if due.

        Args:
            metric: the monitored value (a number or a 0-d array/Variable).

        Raises:
            TypeError: ``metric`` is not a number.
            ValueError: the optimizer's number of groups changed since this was made and
                ``min_lrs`` holds different values (one ``min_lr`` for all extends to the
                new groups).
        """
        if isinstance(metric, Variable):
            metric = metric.data
        try:
            current = float(metric)
        except (TypeError, ValueError):
            raise TypeError(
                f"ReduceLROnPlateau.step(metric): metric must be a number (or a one-element "
                f"array), got {type(metric).__name__}."
            ) from None
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):  # groups appended (or removed) since
            if len(set(self.min_lrs)) > 1:
                raise ValueError(
                    f"ReduceLROnPlateau.step(metric): the optimizer has {len(groups)} "
                    f"parameter groups, min_lr gives {len(self.min_lrs)} values, one per "
                    f"group when this was made. Set one per group now (scheduler.min_lrs = "
                    f"[...]); nothing was changed."
                )
            self.min_lrs = self.min_lrs[:1] * len(groups)  # one min_lr for all: PyTorch's
        self.last_epoch += 1
        if self._better(current):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for g, low in zip(self.optimizer.param_groups, self.min_lrs):
                new = max(g["lr"] * self.factor, low)
                if g["lr"] - new > self.eps:
                    g["lr"] = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [float(g["lr"]) for g in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The lr of each group after the last step.

        Returns:
            One lr per parameter group.
        """
        return list(self._last_lr)
