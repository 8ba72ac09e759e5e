"""Composite schedulers: one after another (SequentialLR) or all at once (ChainedScheduler)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from typing import Any

from zerograd.checks import positive_int

from .base import LRScheduler


def _children(owner: str, optimizer: Any, schedulers: Sequence[Any]) -> list[LRScheduler]:
    schedulers = list(schedulers)
    if not schedulers:
        raise ValueError(f"{owner}: give at least one scheduler.")
    for s in schedulers:
        if not isinstance(s, LRScheduler) or isinstance(s, _Composite):
            raise TypeError(
                f"{owner}: every scheduler must be a step-based scheduler (StepLR, "
                f"ExponentialLR, ...), got {type(s).__name__}; ReduceLROnPlateau needs a "
                f"metric and is stepped on its own."
            )
        if optimizer is not None and s.optimizer is not optimizer:
            raise ValueError(f"{owner}: every scheduler must belong to the same optimizer.")
    return schedulers


class _Composite(LRScheduler):
    """What SequentialLR and ChainedScheduler share: their children's state."""

    _skip = ("optimizer", "schedulers")
    schedulers: list[LRScheduler]

    def state_dict(self) -> dict[str, Any]:
        """Its own counters plus ``"schedulers"``: each child's state dict.

        Returns:
            A new dict.
        """
        return {**super().state_dict(), "schedulers": [s.state_dict() for s in self.schedulers]}

    def prepare_load_state_dict(self, d: dict[str, Any]) -> Callable[[], None]:
        """Check the composite and every child (all first); returns ``commit()``."""
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
        commits = [s.prepare_load_state_dict(sd) for s, sd in zip(self.schedulers, children)]
        commits.append(super().prepare_load_state_dict(own))

        def commit() -> None:
            for c in commits:
                c()

        return commit

    def adopt_group(self, lr: float) -> None:
        """Schedule one more parameter group in every scheduler, then here.

        See :meth:`LRScheduler.adopt_group`.

        Args:
            lr: the new group's lr.
        """
        for s in self.schedulers:
            s.adopt_group(lr)
        super().adopt_group(lr)


class SequentialLR(_Composite):
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

    def __init__(self, optimizer: Any, schedulers: Sequence[Any], milestones: Sequence[int]):
        self.schedulers = _children("SequentialLR", optimizer, schedulers)
        milestones = [positive_int("SequentialLR", "a milestone", m) for m in milestones]
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
        return self.schedulers[i].set_step(t - self._starts[i])

    def follow(self, group: int, lr: float) -> None:
        """The running scheduler goes on from ``lr`` (the next ones start from their base)."""
        self.schedulers[bisect.bisect_right(self.milestones, self.last_epoch)].follow(group, lr)


class ChainedScheduler(_Composite):
    """Step every scheduler together: ``lr = base * product of their factors``.

    Args:
        schedulers: step-based schedulers, all of one optimizer.
        optimizer: that optimizer (optional; taken from the first scheduler).

    Raises:
        TypeError: an item of ``schedulers`` that is not a step-based scheduler.
        ValueError: no schedulers, or schedulers of different optimizers.
    """

    def __init__(self, schedulers: Sequence[Any], optimizer: Any = None) -> None:
        self.schedulers = _children("ChainedScheduler", optimizer, schedulers)
        optimizer = self.schedulers[0].optimizer
        _children("ChainedScheduler", optimizer, self.schedulers)
        super().__init__(optimizer)

    def _set(self, t: int) -> list[float]:
        lrs = list(self.base_lrs)
        for s in self.schedulers:
            lrs = [lr * f for lr, f in zip(lrs, s.factors(t))]
        for s in self.schedulers:
            s.record_step(t, lrs)
        for g, lr in zip(self.optimizer.param_groups, lrs):
            g["lr"] = lr
        return lrs

    def follow(self, group: int, lr: float) -> None:
        """Move the base lr of ``group`` so that the product of the factors gives ``lr`` now."""
        product = math.prod(s.factors(self.last_epoch)[group] for s in self.schedulers)
        if product and math.isfinite(lr / product):
            self.base_lrs[group] = lr / product
        else:
            self.cannot_follow(group, lr)
