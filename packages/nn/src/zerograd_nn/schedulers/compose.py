"""Composite schedulers: one after another (SequentialLR) or all at once (ChainedScheduler)."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any

from .base import LRScheduler, _positive_int, _StateMixin


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
    """Run ``schedulers[i]`` from ``milestones[i-1]`` on; each starts again at its step 0.

    Args:
        optimizer: the optimizer whose groups' ``lr`` this sets (setup already called).
        schedulers: step-based schedulers of ``optimizer``, in the order they run.
        milestones: the increasing steps at which the next scheduler takes over (one fewer
            than ``schedulers``).

    Raises:
        TypeError: an item of ``schedulers`` that is not a step-based scheduler.
        ValueError: no schedulers, schedulers of another optimizer, or milestones that are
            not that many increasing positive ints.
    """

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
        """Its own counters plus ``"schedulers"``: each child's state dict.

        Returns:
            A new dict.
        """
        return {**super().state_dict(), "schedulers": [s.state_dict() for s in self.schedulers]}

    def _prepare_load(self, d: dict[str, Any]) -> Callable[[], None]:
        """Check the composite and every child (all first); returns ``commit()``."""
        return _load_composite(self, d)


class ChainedScheduler(LRScheduler):
    """Step every scheduler together: ``lr = base * product of their factors``.

    Args:
        schedulers: step-based schedulers, all of one optimizer.
        optimizer: that optimizer (optional; taken from the first scheduler).

    Raises:
        TypeError: an item of ``schedulers`` that is not a step-based scheduler.
        ValueError: no schedulers, or schedulers of different optimizers.
    """

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
        """Its own counters plus ``"schedulers"``: each child's state dict.

        Returns:
            A new dict.
        """
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
