"""The scheduler base class and its state dict (checked before it loads)."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable
from typing import Any


def _groups(owner: str, optimizer: Any) -> list[dict]:
    groups = getattr(optimizer, "param_groups", None)
    if not isinstance(groups, list):
        hint = (
            " (a model: pass the optimizer set up on it, e.g. Adam().setup(model))"
            if hasattr(optimizer, "params")
            else ""
        )
        raise TypeError(
            f"{owner}(optimizer, ...): optimizer must be an optimizer of zerograd_nn.optimizers "
            f"(with param_groups), got {type(optimizer).__name__}{hint}."
        )
    if not groups:
        raise ValueError(
            f"{owner}(optimizer, ...): the optimizer has no parameter groups; call "
            f"optimizer.setup(model) before making a scheduler."
        )
    if any("lr" not in g for g in groups):
        raise ValueError(f"{owner}: the optimizer's groups have no 'lr' to schedule.")
    return groups


_PER_GROUP = ("base_lrs", "_last_lr", "min_lrs")  # state lists with one value per group


#: PyTorch's scheduler keywords that zerograd's schedulers do not take, and what to write
_TORCH_ONLY = {
    "last_epoch": (
        "zerograd's schedulers start at step 0. To resume, make it as before and load its "
        "state: scheduler.load_state_dict(saved) (or load_checkpoint(..., scheduler=...))"
    ),
    "verbose": "PyTorch deprecated it; print scheduler.get_last_lr() after step() instead",
}


class _StateMixin:
    """``state_dict()``/``load_state_dict()`` over the scheduler's own attributes."""

    _skip = ("optimizer",)

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # PyTorch's keywords get one TypeError saying what to write (before __init__ runs,
        # so the optimizer's lrs are left as they were)
        for k in kwargs:
            if k in _TORCH_ONLY:
                jump = (
                    "; to go to step t: scheduler.set_step(t)"
                    if k == "last_epoch" and issubclass(cls, LRScheduler)
                    else ""
                )
                raise TypeError(
                    f"{cls.__name__}({k}=...): PyTorch's option has no counterpart here "
                    f"({_TORCH_ONLY[k]}{jump})."
                )
        return super().__new__(cls)

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer (plain numbers and lists)."""
        return {k: _plain(v) for k, v in vars(self).items() if k not in self._skip}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s values; refuses other keys, changing nothing.

        The optimizer's lrs are not touched: they come back with the optimizer's state.
        """
        self.prepare_load_state_dict(d)()

    def prepare_load_state_dict(self, d: dict[str, Any]) -> Callable[[], None]:
        """Check ``d`` as :meth:`load_state_dict` does, changing nothing.

        For loads of several parts at once (``load_checkpoint``).

        Args:
            d: a dict from :meth:`state_dict`.

        Returns:
            ``commit()``, which assigns ``d`` and cannot fail.

        Raises:
            ValueError: ``d`` is not the state of this kind of scheduler.
        """
        mine = _StateMixin.state_dict(self)
        name = type(self).__name__
        if not isinstance(d, dict) or set(d) != set(mine):
            got = sorted(d) if isinstance(d, dict) else type(d).__name__
            raise ValueError(
                f"{name}.load_state_dict: expected the keys {sorted(mine)}, got {got}; "
                f"load the state of the same kind of scheduler. Nothing was changed."
            )
        for k, v in d.items():
            if not _fits(v, mine[k]):
                raise ValueError(
                    f"{name}.load_state_dict: {k} should be like {mine[k]!r}, got {v!r}. "
                    f"Nothing was changed."
                )
        optimizer = self.__dict__.get("optimizer")
        count = len(getattr(optimizer, "param_groups", ()))
        for k in _PER_GROUP:
            if k in mine and isinstance(d[k], (list, tuple)) and len(d[k]) != count:
                raise ValueError(
                    f"{name}.load_state_dict: the state is for {len(d[k])} parameter groups "
                    f"({k}) but the optimizer has {count}; load it into an optimizer set up "
                    f"with the same groups. Nothing was changed."
                )
        values = {k: _plain(v) for k, v in d.items()}
        return lambda: self.__dict__.update(values)


def _fits(v: Any, like: Any) -> bool:
    """Whether the saved value ``v`` can stand where this scheduler holds ``like``.

    An int stays an int (a float step count would derail the schedule), a float takes any
    real number but nan, a list (of lrs, per group) takes a list of such numbers, and other
    values their type.
    """
    if isinstance(like, bool) or like is None:
        return type(v) is type(like)
    if isinstance(like, numbers.Integral):
        return isinstance(v, numbers.Integral) and not isinstance(v, bool)
    if isinstance(like, numbers.Real):
        return isinstance(v, numbers.Real) and not isinstance(v, bool) and not math.isnan(v)
    if isinstance(like, list):
        if not isinstance(v, (list, tuple)):
            return False
        return all(_fits(x, 0.0) for x in v)
    return type(v) is type(like)


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

    Subclasses implement :meth:`lr_at`, affine in the base lr (``a(t) + m(t) * base``, as
    every schedule of PyTorch's is). Creating one sets each group's lr to its step-0 value.

    An lr changed since the last step (set by hand, or by another scheduler such as
    ``ReduceLROnPlateau``) carries on, as with PyTorch's chainable schedulers: ``step()``
    first moves that group's base lr so that the schedule passes through the value found
    at the current step (see :meth:`follow`).

    Args:
        optimizer: the optimizer whose groups' ``lr`` this sets (setup already called).

    Raises:
        TypeError: ``optimizer`` is not a zerograd_nn optimizer.
    """

    def __init__(self, optimizer: Any) -> None:
        groups = _groups(type(self).__name__, optimizer)
        initial = getattr(optimizer, "initial_lrs", None)
        if initial is None or len(initial) != len(groups):
            # groups appended since the first scheduler start from their own lrs; with
            # groups removed, which are which is unknown: every group starts afresh
            initial = list(initial or ()) if len(initial or ()) < len(groups) else []
            initial += [float(g["lr"]) for g in groups[len(initial) :]]
            optimizer.initial_lrs = initial  # the base lrs of every later scheduler
        self.optimizer = optimizer
        self.base_lrs = list(initial)
        self.last_epoch = 0
        self._last_lr = self._set(0)

    def lr_at(self, base: float, t: int) -> float:
        """The lr of step ``t`` for a group whose base lr is ``base``.

        Args:
            base: the group's initial lr.
            t: the step count.

        Returns:
            The lr of step ``t``.

        Raises:
            NotImplementedError: in the base class.
        """
        raise NotImplementedError

    def factors(self, t: int) -> list[float]:
        """``lr_at(base, t) / base`` per group (1 where base is 0).

        Args:
            t: the step count.

        Returns:
            One factor per parameter group.
        """
        return [self.lr_at(b, t) / b if b else 1.0 for b in self.base_lrs]

    def _set(self, t: int) -> list[float]:
        lrs = [self.lr_at(b, t) for b in self.base_lrs]
        for g, lr in zip(self.optimizer.param_groups, lrs):
            g["lr"] = lr
        return lrs

    def step(self, epoch: None = None) -> None:
        """Move to the next step and set its lr on every group.

        A group whose lr is no longer the one this scheduler set goes on from its new value
        (:meth:`follow`).

        Args:
            epoch: not taken: PyTorch's deprecated ``step(epoch)``, answered with the
                spelling to use.

        Raises:
            TypeError: an ``epoch`` was given.
            ValueError: the optimizer has fewer parameter groups than when this was made
                (groups appended since are scheduled: :meth:`adopt_group`).
        """
        if epoch is not None:
            raise TypeError(
                f"{type(self).__name__}.step() takes no epoch (PyTorch's deprecated "
                f"step(epoch)): it counts its own steps. To go to step t, call "
                f"scheduler.set_step(t); nothing was changed."
            )
        groups = self.optimizer.param_groups
        if len(groups) != len(self._last_lr):
            self._regroup(groups)
        for i, g in enumerate(groups):
            if g["lr"] != self._last_lr[i]:
                self.follow(i, float(g["lr"]))
        self.set_step(self.last_epoch + 1)

    def _regroup(self, groups: list[dict]) -> None:
        """Take the groups added to the optimizer since the last step; refuse removed ones."""
        n = len(self._last_lr)
        if len(groups) < n:
            raise ValueError(
                f"{type(self).__name__}.step(): the optimizer has {len(groups)} parameter "
                f"groups, this scheduler was made for {n}: it follows groups added to the "
                f"optimizer, not removed ones. Make a new scheduler for the optimizer as it "
                f"is now; nothing was changed."
            )
        for g in groups[n:]:
            self.adopt_group(float(g["lr"]))

    def adopt_group(self, lr: float) -> None:
        """Schedule one more parameter group, added to the optimizer after this was made.

        The group's schedule carries on from ``lr``, as a group's does from an lr set by
        hand (:meth:`follow`): PyTorch's chainable form for a group given to
        ``add_param_group``. :meth:`step` calls it for each group appended to the
        optimizer's ``param_groups``.

        Args:
            lr: the new group's lr.
        """
        self.base_lrs.append(lr)
        self._last_lr.append(lr)
        self.follow(len(self.base_lrs) - 1, lr)

    def follow(self, group: int, lr: float) -> None:
        """Go on from ``lr``, set on ``group`` from outside since the last step.

        Moves the group's base lr so that the lr of the current step is ``lr``; the next
        steps then give what PyTorch's chainable form computes from the group's lr (past
        ``T_max``, a CosineAnnealingLR climbs back towards the moved base, PyTorch's
        towards the base it started from). Where
        the current step's lr does not depend on the base (a factor of 0), the change
        cannot be followed: one warning says so, and the next step replaces it.

        Args:
            group: the index of the parameter group.
            lr: the lr found in it.
        """
        t = self.last_epoch
        a = self.lr_at(0.0, t)
        m = self.lr_at(1.0, t) - a
        base = (lr - a) / m if m else math.inf
        if not math.isfinite(base):
            self.cannot_follow(group, lr)
            return
        self.base_lrs[group] = base

    def cannot_follow(self, group: int, lr: float) -> None:
        """Warn that the lr set on ``group`` is replaced at the next step.

        Args:
            group: the index of the parameter group.
            lr: the lr found in it.
        """
        warnings.warn(
            f"{type(self).__name__}: the lr of group {group} was set to {lr!r} since the last "
            f"step, at step {self.last_epoch}, where this schedule's lr does not depend on "
            f"its base lr, so the schedule cannot go on from it: the next step replaces it. "
            f"Set the lr at another step, or change scheduler.base_lrs.",
            UserWarning,
            stacklevel=3,
        )
        self._last_lr[group] = lr  # warned once: the next step sets the schedule's lr

    def set_step(self, t: int) -> list[float]:
        """Go to step ``t``: set its lr on every group and remember it as the last lr.

        Args:
            t: the step count (SequentialLR counts its children's steps from their start).

        Returns:
            The lr set on each parameter group.
        """
        self.last_epoch = t
        self._last_lr = self._set(t)
        return list(self._last_lr)

    def record_step(self, t: int, lrs: list[float]) -> None:
        """Note that a composite (ChainedScheduler) set step ``t``'s ``lrs`` for this one.

        Args:
            t: the step count.
            lrs: the lr each parameter group got.
        """
        self.last_epoch = t
        self._last_lr = list(lrs)

    def get_last_lr(self) -> list[float]:
        """The lr of each group set by the last step.

        Returns:
            One lr per parameter group.
        """
        return list(self._last_lr)
