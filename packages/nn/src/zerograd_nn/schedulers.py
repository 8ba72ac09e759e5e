"""Learning-rate schedulers, with the formulas PyTorch documents for its ``lr_scheduler``.

A scheduler changes the ``lr`` of every parameter group of an optimizer. Creating one sets
the lr of step 0; each ``step()`` (once per epoch or per iteration, as you choose) moves to
the next. ``base_lrs`` are the groups' lrs when the first scheduler was attached to the
optimizer, so schedulers made one after another all start from the same values.

* ``StepLR``: ``base * gamma ** (t // step_size)``
* ``ExponentialLR``: ``base * gamma ** t``
* ``CosineAnnealingLR``: ``eta_min + (base - eta_min) * (1 + cos(pi * t / T_max)) / 2``
* ``CosineAnnealingWarmRestarts``: the same within each period ``T_i`` (``T_0``, then each
  ``T_mult`` times longer), restarting at ``base``
* ``LinearWarmup``: ``base * (start + (1 - start) * min(t, warmup_steps) / warmup_steps)``
* ``ReduceLROnPlateau``: ``lr * factor`` after ``patience`` steps without improvement
* ``SequentialLR``: one scheduler after another, switching (and restarting) at milestones
* ``ChainedScheduler``: all at once; the lr is ``base`` times the product of their factors

>>> from zerograd import Parameter
>>> from zerograd_nn.optimizers import SGD
>>> opt = SGD(lr=0.1).setup([Parameter(None)])
>>> sched = StepLR(opt, step_size=2, gamma=0.5)
>>> for _ in range(4):
...     sched.step()
>>> sched.get_last_lr(), opt.lr
([0.025], 0.025)
"""

from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

from zerograd import Variable

__all__ = [
    "ChainedScheduler",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "ExponentialLR",
    "LRScheduler",
    "LinearWarmup",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
]


def _groups(owner: str, optimizer: Any) -> list[dict]:
    groups = getattr(optimizer, "param_groups", None)
    if not groups:
        raise ValueError(
            f"{owner}(optimizer, ...): the optimizer has no parameter groups; call "
            f"optimizer.setup(model) before making a scheduler."
        )
    if any("lr" not in g for g in groups):
        raise ValueError(f"{owner}: the optimizer's groups have no 'lr' to schedule.")
    return groups


def _positive_int(owner: str, name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
        raise ValueError(f"{owner}: {name} must be a positive int, got {v!r}.")
    return int(v)


def _number(owner: str, name: str, v: Any, low: float = 0.0, high: float = math.inf) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not low <= v <= high:
        raise ValueError(f"{owner}: {name} must be a number in [{low}, {high}], got {v!r}.")
    return float(v)


class _StateMixin:
    """``state_dict()``/``load_state_dict()`` over the scheduler's own attributes."""

    _skip = ("optimizer",)

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer (plain numbers and lists)."""
        return {k: _plain(v) for k, v in vars(self).items() if k not in self._skip}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s values; refuses other keys, changing nothing.

        The optimizer's lrs are not touched: they come back with the optimizer's state.
        """
        self._prepare_load(d)()

    def _prepare_load(self, d: dict[str, Any]) -> Callable[[], None]:
        """Check ``d``, changing nothing; returns the ``commit()`` that assigns it."""
        mine = _StateMixin.state_dict(self)
        name = type(self).__name__
        if not isinstance(d, dict) or set(d) != set(mine):
            got = sorted(d) if isinstance(d, dict) else type(d).__name__
            raise ValueError(
                f"{name}.load_state_dict: expected the keys {sorted(mine)}, got {got}; "
                f"load the state of the same kind of scheduler. Nothing was changed."
            )
        for k, v in d.items():
            if type(_plain(v)) is not type(mine[k]) and not (
                isinstance(v, numbers.Real) and isinstance(mine[k], numbers.Real)
            ):
                raise ValueError(
                    f"{name}.load_state_dict: {k} should be like {mine[k]!r}, got {v!r}. "
                    f"Nothing was changed."
                )
        values = {k: _plain(v) for k, v in d.items()}
        return lambda: self.__dict__.update(values)


def _plain(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        return float(v)
    return v


class LRScheduler(_StateMixin):
    """Base of the closed-form schedulers: ``lr = f(base_lr, t)`` per group.

    Subclasses implement :meth:`lr_at`.
    """

    def __init__(self, optimizer: Any) -> None:
        groups = _groups(type(self).__name__, optimizer)
        initial = optimizer.__dict__.get("_initial_lrs")
        if initial is None or len(initial) != len(groups):
            initial = [float(g["lr"]) for g in groups]
            optimizer.__dict__["_initial_lrs"] = initial
        self.optimizer = optimizer
        self.base_lrs = list(initial)
        self.last_epoch = 0
        self._last_lr = self._set(0)

    def lr_at(self, base: float, t: int) -> float:
        """The lr of step ``t`` for a group whose base lr is ``base``."""
        raise NotImplementedError

    def factors(self, t: int) -> list[float]:
        """``lr_at(base, t) / base`` per group (1 where base is 0)."""
        return [self.lr_at(b, t) / b if b else 1.0 for b in self.base_lrs]

    def _set(self, t: int) -> list[float]:
        lrs = [self.lr_at(b, t) for b in self.base_lrs]
        for g, lr in zip(self.optimizer.param_groups, lrs):
            g["lr"] = lr
        return lrs

    def step(self) -> None:
        """Move to the next step and set its lr on every group."""
        self.last_epoch += 1
        self._last_lr = self._set(self.last_epoch)

    def get_last_lr(self) -> list[float]:
        """The lr of each group set by the last step."""
        return list(self._last_lr)


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


def _children(owner: str, optimizer: Any, schedulers: Sequence[Any]) -> list[LRScheduler]:
    schedulers = list(schedulers)
    if not schedulers:
        raise ValueError(f"{owner}: give at least one scheduler.")
    for s in schedulers:
        if not isinstance(s, LRScheduler) or isinstance(s, (SequentialLR, ChainedScheduler)):
            raise TypeError(
                f"{owner}: every scheduler must be a step-based scheduler (StepLR, "
                f"ExponentialLR, ...), got {type(s).__name__}; ReduceLROnPlateau needs a "
                f"metric and is stepped on its own."
            )
        if optimizer is not None and s.optimizer is not optimizer:
            raise ValueError(f"{owner}: every scheduler must belong to the same optimizer.")
    return schedulers


class SequentialLR(LRScheduler):
    """Run ``schedulers[i]`` from ``milestones[i-1]`` on; each starts again at its step 0."""

    _skip = ("optimizer", "schedulers")

    def __init__(self, optimizer: Any, schedulers: Sequence[Any], milestones: Sequence[int]):
        self.schedulers = _children("SequentialLR", optimizer, schedulers)
        milestones = [_positive_int("SequentialLR", "a milestone", m) for m in milestones]
        if len(milestones) != len(self.schedulers) - 1 or milestones != sorted(set(milestones)):
            raise ValueError(
                f"SequentialLR: milestones must be {len(self.schedulers) - 1} increasing steps "
                f"(one fewer than the schedulers), got {milestones}."
            )
        self.milestones = milestones
        self._starts = [0, *milestones]
        super().__init__(optimizer)

    def _set(self, t: int) -> list[float]:
        i = bisect.bisect_right(self.milestones, t)
        child = self.schedulers[i]
        child.last_epoch = t - self._starts[i]
        child._last_lr = child._set(child.last_epoch)
        return child._last_lr

    def state_dict(self) -> dict[str, Any]:
        """Its own counters plus ``"schedulers"``: each child's state dict."""
        return {**super().state_dict(), "schedulers": [s.state_dict() for s in self.schedulers]}

    def _prepare_load(self, d: dict[str, Any]) -> Callable[[], None]:
        """Check the composite and every child (all first); returns ``commit()``."""
        return _load_composite(self, d)


class ChainedScheduler(LRScheduler):
    """Step every scheduler together: ``lr = base * product of their factors``."""

    _skip = ("optimizer", "schedulers")

    def __init__(self, schedulers: Sequence[Any], optimizer: Any = None) -> None:
        self.schedulers = _children("ChainedScheduler", optimizer, schedulers)
        optimizer = self.schedulers[0].optimizer
        _children("ChainedScheduler", optimizer, self.schedulers)
        super().__init__(optimizer)

    def _set(self, t: int) -> list[float]:
        for s in self.schedulers:
            s.last_epoch = t
        lrs = list(self.base_lrs)
        for s in self.schedulers:
            lrs = [lr * f for lr, f in zip(lrs, s.factors(t))]
        for s in self.schedulers:
            s._last_lr = list(lrs)
        for g, lr in zip(self.optimizer.param_groups, lrs):
            g["lr"] = lr
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """Its own counters plus ``"schedulers"``: each child's state dict."""
        return {**super().state_dict(), "schedulers": [s.state_dict() for s in self.schedulers]}

    def _prepare_load(self, d: dict[str, Any]) -> Callable[[], None]:
        """Check the composite and every child (all first); returns ``commit()``."""
        return _load_composite(self, d)


def _load_composite(self: Any, d: dict[str, Any]) -> Callable[[], None]:
    name = type(self).__name__
    if not isinstance(d, dict) or not isinstance(d.get("schedulers"), list):
        raise ValueError(f"{name}.load_state_dict: expected a dict with a 'schedulers' list.")
    children = d["schedulers"]
    if len(children) != len(self.schedulers):
        raise ValueError(
            f"{name}.load_state_dict: the state holds {len(children)} schedulers, this one "
            f"{len(self.schedulers)}. Nothing was changed."
        )
    own = {k: v for k, v in d.items() if k != "schedulers"}
    commits = [s._prepare_load(sd) for s, sd in zip(self.schedulers, children)]
    commits.append(_StateMixin._prepare_load(self, own))

    def commit() -> None:
        for c in commits:
            c()

    return commit


class ReduceLROnPlateau(_StateMixin):
    """Multiply each group's lr by ``factor`` when the metric stopped improving.

    After more than ``patience`` calls of ``step(metric)`` without an improvement (in
    ``mode`` "min" or "max", by more than ``threshold``, relative or absolute), the lrs are
    reduced (never below ``min_lr``; changes smaller than ``eps`` are skipped), then
    ``cooldown`` calls pass before counting again.
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
        if isinstance(factor, bool) or not isinstance(factor, numbers.Real) or not 0 < factor < 1:
            raise ValueError(f"{owner}: factor must be in (0, 1), got {factor!r}.")
        mins = list(min_lr) if isinstance(min_lr, (list, tuple)) else [min_lr] * len(groups)
        if len(mins) != len(groups):
            raise ValueError(f"{owner}: {len(mins)} min_lr values for {len(groups)} groups.")
        self.optimizer = optimizer
        self.mode, self.threshold_mode = mode, threshold_mode
        self.factor = float(factor)
        self.patience = int(_number(owner, "patience", patience))
        self.threshold = _number(owner, "threshold", threshold)
        self.cooldown = int(_number(owner, "cooldown", cooldown))
        self.min_lrs = [_number(owner, "min_lr", m) for m in mins]
        self.eps = _number(owner, "eps", eps)
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
        """Record this step's ``metric`` (e.g. the validation loss) and reduce if due."""
        if isinstance(metric, Variable):
            metric = metric.data
        try:
            current = float(metric)
        except (TypeError, ValueError):
            raise TypeError(
                f"ReduceLROnPlateau.step(metric): metric must be a number (or a one-element "
                f"array), got {type(metric).__name__}."
            ) from None
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
        """The lr of each group after the last step."""
        return list(self._last_lr)
