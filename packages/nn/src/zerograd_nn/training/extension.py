"""What the Trainer's extensions share: the ``Extension`` base class and the triggers.

A trigger says when an extension runs. The trainer stops at two kinds of points: after each
update (an *iteration point*, where ``trainer.observation`` holds that update's loss and
metrics) and after each pass over the training loader (an *epoch point*, where
``trainer.at_epoch_end`` is True and extensions such as ``Evaluator`` add their values).
At every point each
extension whose trigger fires runs, in order of priority (writers, then editors, then
readers), then in the order they were added.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Mapping
from typing import Any

from zerograd.checks import positive_int

PRIORITY_WRITER = 300
"""Extensions that add observations (Evaluator): they run first."""
PRIORITY_EDITOR = 200
"""Extensions that act on observations (schedulers, early stopping)."""
PRIORITY_READER = 100
"""Extensions that only read (LogReport, PrintReport, PlotReport, ProgressBar)."""
PRIORITY_SNAPSHOT = -100
"""Snapshot runs last, so that it saves what the other extensions did at that point."""

_UNITS = ("iteration", "epoch")


def metric_functions(who: str, metrics: Any) -> dict[str, Callable[[Any, Any], Any]]:
    """``metrics`` (``{name: fn(y, t)}``, or None) as a dict, every entry checked.

    Raises:
        TypeError: ``metrics`` is not a mapping of string names to callables.
    """
    if metrics is None:
        return {}
    if not isinstance(metrics, Mapping):
        raise TypeError(
            f"{who}: metrics must be a dict of names to functions fn(y, t), such as "
            f"{{'accuracy': F.accuracy}}, got {type(metrics).__name__}."
        )
    for name, fn in metrics.items():
        if not isinstance(name, str) or not callable(fn):
            raise TypeError(
                f"{who}: metrics must map string names to functions fn(y, t); got "
                f"{name!r}: {fn!r:.60}."
            )
    return dict(metrics)


def observed_number(who: str, name: str, value: Any) -> float:
    """``value`` (a loss or a metric: a Variable, array or number) as one float.

    Raises:
        TypeError: ``value`` is not one number (a string, None, several values).
    """
    a = value.data if hasattr(value, "data") and hasattr(value, "creator") else value
    size = getattr(a, "size", 1)
    if isinstance(a, (str, bytes)) or a is None or size != 1:
        what = (
            f"values of shape {tuple(a.shape)}"
            if hasattr(a, "shape")
            else f"{type(a).__name__} ({a!r:.40})"
        )
        raise TypeError(
            f"{who}: {name!r} gave {what}, not one number; a loss or a metric "
            f"returns one number per batch (reduce it, e.g. F.mean(...))."
        )
    if getattr(a, "ndim", 0):  # one value of shape (1,): float() of it is deprecated
        a = a.reshape(())
    try:
        return float(a)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{who}: {name!r} gave {type(a).__name__} ({a!r:.40}), not one number ({exc})."
        ) from None


class IntervalTrigger:
    """Fires every ``period`` iterations (at iteration points) or epochs (at epoch points).

    Args:
        period: how many units between firings (a positive integer).
        unit: ``'iteration'`` or ``'epoch'``.

    Raises:
        ValueError: for a period below 1 or another unit.

    Examples:
        >>> IntervalTrigger(100, "iteration")
        IntervalTrigger(100, 'iteration')
    """

    def __init__(self, period: int, unit: str) -> None:
        if unit not in _UNITS:
            raise ValueError(
                f"zerograd_nn.training: a trigger's unit must be 'iteration' or 'epoch', "
                f"got {unit!r}; write a trigger as (10, 'iteration') or (1, 'epoch')"
            )
        self.period = positive_int("zerograd_nn.training: a trigger", "period", period)
        self.unit = unit

    def __call__(self, trainer: Any) -> bool:
        """Tell whether the trigger fires at the trainer's current point.

        Args:
            trainer: the running ``Trainer``.

        Returns:
            True at every ``period``-th epoch point (unit ``'epoch'``) or iteration point
                (unit ``'iteration'``).
        """
        if self.unit == "epoch":
            return trainer.at_epoch_end and trainer.epoch % self.period == 0
        return not trainer.at_epoch_end and trainer.iteration % self.period == 0

    def __repr__(self) -> str:
        return f"IntervalTrigger({self.period}, {self.unit!r})"


def always(trainer: Any) -> bool:
    """Fire at every point: the trigger of LogReport and ProgressBar.

    Args:
        trainer: the running ``Trainer`` (not looked at).

    Returns:
        Always True.
    """
    return True


def get_trigger(trigger: Any) -> Callable[[Any], bool]:
    """Make a trigger from ``(period, unit)``, a callable ``trigger(trainer) -> bool``, or None.

    Args:
        trigger: ``(10, 'iteration')``, ``(1, 'epoch')``, a callable, or None (every point).

    Returns:
        A callable taking the trainer.

    Raises:
        ValueError: for a malformed tuple.
        TypeError: for anything else.
    """
    if trigger is None:
        return always
    if isinstance(trigger, tuple) and len(trigger) == 2:
        return IntervalTrigger(*trigger)
    if callable(trigger):
        return trigger
    raise TypeError(
        f"zerograd_nn.training: a trigger is (period, 'iteration' | 'epoch') or a callable "
        f"taking the trainer, got {trigger!r}"
    )


def fires(trigger: Callable[[Any], Any], trainer: Any, name: str) -> bool:
    """Ask ``trigger`` whether it fires at the trainer's point; it must answer a bool.

    Args:
        trigger: the trigger (a callable taking the trainer).
        trainer: the running ``Trainer``.
        name: the extension it belongs to, for the error.

    Returns:
        What the trigger answered.

    Raises:
        TypeError: it answered something else than True or False (an array, None, an
            int): an ``if`` on it would be numpy's "truth value ... is ambiguous" or a
            silent guess.
    """
    fired = trigger(trainer)
    if type(fired) is bool:
        return fired
    dtype = getattr(fired, "dtype", None)
    if getattr(fired, "shape", None) == () and getattr(dtype, "kind", None) == "b":
        return bool(fired)  # a numpy bool
    raise TypeError(
        f"zerograd_nn.training: the trigger {_named(trigger)} of the extension {name!r} "
        f"returned {reprlib.repr(fired)} ({type(fired).__name__}) at epoch {trainer.epoch}, "
        f"iteration {trainer.iteration}; a trigger must return True or False. Make it "
        f"return a bool (bool(...) of one value, not of an array)."
    )


def _named(trigger: Any) -> str:
    """A function by its qualified name, anything else by a short repr."""
    name = getattr(trigger, "__qualname__", None)
    return (
        name if isinstance(name, str) and not isinstance(trigger, type) else reprlib.repr(trigger)
    )


class Extension:
    """Base class of the Trainer's extensions.

    A subclass implements ``__call__(trainer)``; it may override ``trigger`` (when it
    runs, unless ``Trainer.extend`` is given one), ``priority``, ``initialize``
    and ``finalize`` (called when ``run()`` starts and ends), and ``state_dict`` /
    ``load_state_dict`` (what a snapshot keeps: JSON-able values and arrays).

    Attributes:
        trigger: when it runs by default: ``(period, unit)``, a callable, or None.
        priority: the order among extensions at the same point (higher runs first).
        writes_files: whether it writes into the trainer's ``out`` folder (``run`` then
            checks first that it can).
    """

    trigger: Any = (1, "iteration")
    priority: int = PRIORITY_READER
    writes_files: bool = False

    @property
    def default_name(self) -> str:
        """The name the trainer files it under unless given one: the class name."""
        return type(self).__name__

    @property
    def state_tag(self) -> str | None:
        """What tells this extension's state from another's of its kind (None: nothing).

        A snapshot keeps each extension's state under its name. Two extensions with a
        state added under one default name (two LogReports) are kept as
        ``"<default name>[<tag>]"``, which does not depend on the order they were added;
        when their tags are None or equal, ``Trainer.extend`` asks for a ``name=``.
        """
        return None

    def __call__(self, trainer: Any) -> None:
        """Do the extension's work at a point where its trigger fired.

        Args:
            trainer: the running ``Trainer``.

        Raises:
            NotImplementedError: a subclass did not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__}.__call__ is not implemented")

    def initialize(self, trainer: Any) -> None:
        """Prepare for a run; called once when ``Trainer.run`` starts (after a resume, too).

        Args:
            trainer: the ``Trainer`` starting to run.
        """

    def finalize(self, trainer: Any) -> None:
        """Clean up; called once when ``Trainer.run`` ends, also when it ends with an error.

        Args:
            trainer: the ``Trainer`` that ran.
        """

    def state_dict(self) -> dict[str, Any]:
        """Return what a snapshot saves of this extension.

        Returns:
            JSON-able values and arrays by name (empty by default).
        """
        return {}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Restore the values ``state_dict`` returned (nothing by default).

        Args:
            d: a dict from ``state_dict``.
        """


__all__ = [
    "PRIORITY_EDITOR",
    "PRIORITY_READER",
    "PRIORITY_SNAPSHOT",
    "PRIORITY_WRITER",
    "Extension",
    "IntervalTrigger",
    "always",
    "fires",
    "get_trigger",
]
