"""Extensions that steer training: Snapshot, StepScheduler and EarlyStopping.

Snapshot writes checkpoints to resume from, StepScheduler steps a learning-rate schedule
(ReduceLROnPlateau included), EarlyStopping stops a run that no longer improves.
"""

from __future__ import annotations

import math
import os
import string
from typing import Any

from zerograd.checks import integer, positive_int, real_number

from ..checkpoint import save_checkpoint
from .extension import PRIORITY_EDITOR, PRIORITY_SNAPSHOT, Extension

_FIELDS = ("epoch", "iteration")


def _template(filename: Any) -> str:
    """``filename`` if it is a name template that ``Snapshot`` can fill; else one error."""
    who = "zerograd_nn.training.Snapshot"
    if not isinstance(filename, str):
        raise TypeError(f"{who}: filename must be a str, got {type(filename).__name__}")
    problem = None
    try:
        for _, field, _, _ in string.Formatter().parse(filename):
            root = None if field is None else field.split(".")[0].split("[")[0]
            if root is not None and root not in _FIELDS:
                problem = f"the field {{{field}}}" if field else "a field with no name ({})"
                break
        else:
            name = filename.format(epoch=0, iteration=0)
    except (ValueError, AttributeError, TypeError, IndexError) as exc:
        problem = f"{type(exc).__name__}: {exc}"
    if problem is not None:
        raise ValueError(
            f"{who}: filename {filename!r} cannot be filled in ({problem}); it may hold "
            f"the fields {{epoch}} and {{iteration}}, with format specs for ints such as "
            f"{{iteration:08d}}; braces meant literally are doubled ({{{{ and }}}})."
        )
    if not os.path.basename(name):
        raise ValueError(f"{who}: filename {filename!r} names no file; give one, e.g. 'a.npz'")
    return filename


def _retains(n_retains: Any) -> int | None:
    """``n_retains`` checked: None (keep every file) or an int >= 1."""
    if n_retains is None:
        return None
    try:
        return positive_int("zerograd_nn.training.Snapshot", "n_retains", n_retains)
    except (TypeError, ValueError) as exc:
        raise type(exc)(
            f"{exc}; n keeps the newest n files, None keeps every file (0 would keep none, "
            f"not even the one just written)"
        ) from None


class Snapshot(Extension):
    """Saves a checkpoint that ``Trainer.resume`` continues from, bit for bit.

    The file (the safe ``.npz`` format of ``zerograd_nn.checkpoint.save_checkpoint``)
    holds the model, the optimizer, the training loader's position, the random states,
    the epoch and iteration, and the state of every extension (schedules, logs, early
    stopping). It runs after the other extensions of the same point.

    Args:
        filename: a name inside the trainer's ``out`` folder; ``{epoch}`` and
            ``{iteration}`` are filled in (format specs too: the default zero-pads the
            iteration to 8 digits, so that the names sort in the order they were written).
            ``.npz`` is appended when missing.
        trigger: when to save, for example ``(500, 'iteration')`` (default: each epoch).
        n_retains: keep only the newest ``n_retains`` files this extension wrote (an int
            >= 1), or None to keep all. Only files written into the trainer's ``out``
            folder are removed: a run resumed from a snapshot of another folder leaves that
            folder's files as they are. 0 is refused: it would keep none, not even the file
            just written (Chainer's ``n_retains=-1``, keep all, is None here).

    Raises:
        ValueError: a ``filename`` with fields other than ``{epoch}`` and ``{iteration}``
            or a format spec they cannot take; an ``n_retains`` below 1.
        TypeError: a ``filename`` that is not a str; an ``n_retains`` that is not an int.
    """

    priority = PRIORITY_SNAPSHOT
    writes_files = True

    def __init__(
        self,
        filename: str = "snapshot_iter_{iteration:08d}.npz",
        trigger: Any = (1, "epoch"),
        n_retains: int | None = None,
    ) -> None:
        self.filename, self.trigger, self.n_retains = filename, trigger, n_retains
        self.written: list[str] = []

    @property
    def filename(self) -> str:
        """The name template (checked when set)."""
        return self._filename

    @filename.setter
    def filename(self, value: str) -> None:
        self._filename = _template(value)

    @property
    def n_retains(self) -> int | None:
        """How many of its newest files to keep (None: all; checked when set)."""
        return self._n_retains

    @n_retains.setter
    def n_retains(self, value: int | None) -> None:
        self._n_retains = _retains(value)

    @property
    def state_tag(self) -> str:
        """The filename template: two Snapshots writing other files are told apart by it."""
        return self.filename

    def __call__(self, trainer: Any) -> None:
        """Write a checkpoint of ``trainer`` now, then drop files beyond ``n_retains``.

        Args:
            trainer: the running ``Trainer``; the file goes into ``trainer.out``.
        """
        name = self.filename.format(epoch=trainer.epoch, iteration=trainer.iteration)
        path = os.path.join(trainer.out, name)
        if not path.endswith(".npz"):
            path += ".npz"  # the name save_checkpoint writes: the one to remove later
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        loader = trainer.train_loader if hasattr(trainer.train_loader, "state_dict") else None
        written = list(self.written)
        self.written.append(path)  # part of the state saved below
        try:
            save_checkpoint(
                path,
                model=trainer.model,
                optimizer=trainer.optimizer,
                loader=loader,
                scheduler=trainer.extension_states(),  # schedulers, logs, early stopping, ...
                epoch=trainer.epoch,
                iteration=trainer.iteration,
                extra=trainer.state_extra(),
            )
        except BaseException:  # no file was written: n_retains must not count one
            self.written = written
            raise
        if self.n_retains is not None:
            # a name joined to this out: a resume from another folder's snapshot brings that
            # folder's files into the list, which are not this run's to remove
            out = "" if os.path.isabs(self.filename) else os.path.join(trainer.out, "")
            while len(self.written) > self.n_retains:
                old = self.written.pop(0)
                if old.startswith(out) and old != path and os.path.exists(old):
                    os.remove(old)

    def state_dict(self) -> dict[str, Any]:
        """Return the files written so far (for ``n_retains``).

        Returns:
            ``{"written": [path, ...]}``.
        """
        return {"written": list(self.written)}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Restore the list of files written."""
        self.written = list(d["written"])


class StepScheduler(Extension):
    """Steps a scheduler from ``zerograd_nn.schedulers`` at its trigger.

    Args:
        scheduler: the scheduler (StepLR, CosineAnnealingLR, ..., ReduceLROnPlateau).
        trigger: when to step (default: each epoch; ``(1, 'iteration')`` for per-update
            schedules such as warm-up).
        monitor: the observation ReduceLROnPlateau watches (``'val/loss'``); only for it.

    Raises:
        TypeError: ``scheduler`` has no ``step()`` method.
        ValueError: when ``monitor`` is missing for ReduceLROnPlateau, or given for another
            scheduler.
    """

    priority = PRIORITY_EDITOR

    def __init__(self, scheduler: Any, trigger: Any = (1, "epoch"), monitor: str | None = None):
        if not callable(getattr(scheduler, "step", None)):
            raise TypeError(
                f"zerograd_nn.training.StepScheduler: scheduler must have a step() method (a "
                f"zerograd_nn.schedulers scheduler), got {type(scheduler).__name__}."
            )
        needs = type(scheduler).__name__ == "ReduceLROnPlateau"
        if needs and monitor is None:
            raise ValueError(
                "zerograd_nn.training.StepScheduler: ReduceLROnPlateau steps on a metric; "
                "pass monitor='val/loss' (an Evaluator writes it) or another observed key"
            )
        if not needs and monitor is not None:
            raise ValueError(
                f"zerograd_nn.training.StepScheduler: monitor={monitor!r} is only for "
                f"ReduceLROnPlateau; {type(scheduler).__name__} steps on its own"
            )
        self.scheduler, self.trigger, self.monitor = scheduler, trigger, monitor

    @property
    def default_name(self) -> str:
        """``StepScheduler(<scheduler class>)``."""
        return f"StepScheduler({type(self.scheduler).__name__})"

    def __call__(self, trainer: Any) -> None:
        """Step the scheduler (with the monitored value for ReduceLROnPlateau).

        Args:
            trainer: the running ``Trainer``.

        Raises:
            KeyError: ``monitor`` was not observed at this point.
        """
        if self.monitor is None:
            self.scheduler.step()
        else:
            self.scheduler.step(_observed(trainer, self.monitor, "StepScheduler"))

    def state_dict(self) -> dict[str, Any]:
        """Return the scheduler's state.

        Returns:
            ``{"scheduler": scheduler.state_dict()}``.
        """
        return {"scheduler": self.scheduler.state_dict()}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Restore the scheduler's state (checked by the scheduler)."""
        self.scheduler.load_state_dict(d["scheduler"])


def _observed(trainer: Any, key: str, who: str) -> float:
    """``trainer.observation[key]``, or a KeyError that says where ``key`` is observed."""
    try:
        return float(trainer.observation[key])
    except KeyError:
        pass
    seen = sorted(trainer.observation)
    per_update = ["loss", *trainer.metrics] + (["lr"] if "lr" in seen else [])
    if trainer.at_epoch_end:
        point = f"the end of epoch {trainer.epoch}"
        if key in ("loss", "lr", *trainer.metrics):
            advice = (
                f"{key!r} is a value of each update, observed at iteration points only; "
                f"at the end of an epoch the observation holds only what extensions add "
                f"there (an Evaluator adds 'val/{key}'). Watch 'val/{key}' (add "
                f"trainer.extend(Evaluator(val_loader))), or check at iteration points "
                f"(trigger=(n, 'iteration'))."
            )
        else:
            advice = (
                "No extension added it there; 'val/...' values come from an Evaluator "
                "(add trainer.extend(Evaluator(val_loader)); it runs at the end of each "
                "epoch unless given another trigger)."
            )
    else:
        point = f"iteration {trainer.iteration}"
        advice = (
            f"At iteration points the trainer observes each update's {per_update}; other "
            f"values are added by extensions at their own trigger (an Evaluator's 'val/...' "
            f"at the end of each epoch): give this extension that trigger, such as "
            f"(1, 'epoch')."
        )
    raise KeyError(
        f"zerograd_nn.training.{who}: {key!r} was not observed at {point}; observed: "
        f"{seen}. {advice}"
    ) from None


class EarlyStopping(Extension):
    """Stops training when ``monitor`` has not improved for ``patience`` checks.

    Args:
        monitor: the observed key to watch (default ``'val/loss'``, from an Evaluator).
        mode: ``'min'`` (lower is better) or ``'max'``.
        patience: checks without improvement before stopping.
        min_delta: the least change that counts as an improvement (its size: the sign is
            dropped, as Keras does).
        trigger: when to check (default: each epoch).

    Raises:
        ValueError: for another mode, a negative patience, or a nan or infinite min_delta.
        TypeError: a patience that is not an int, or a min_delta that is not a number.
    """

    priority = PRIORITY_EDITOR

    def __init__(
        self,
        monitor: str = "val/loss",
        mode: str = "min",
        patience: int = 5,
        min_delta: float = 0.0,
        trigger: Any = (1, "epoch"),
    ) -> None:
        if mode not in ("min", "max"):
            raise ValueError(
                f"zerograd_nn.training.EarlyStopping: mode must be 'min' or 'max', got {mode!r}"
            )
        owner = "zerograd_nn.training.EarlyStopping"
        patience = integer(owner, "patience", patience, low=0)
        min_delta = real_number(owner, "min_delta", min_delta)
        if math.isinf(min_delta):  # no change would ever count: it stops after patience
            raise ValueError(f"{owner}: min_delta must be a finite number, got {min_delta!r}")
        self.monitor, self.mode, self.patience = monitor, mode, patience
        self.min_delta, self.trigger = abs(min_delta), trigger
        self.best = math.inf if mode == "min" else -math.inf
        self.bad_checks = 0

    @property
    def state_tag(self) -> str:
        """The monitored key: two EarlyStoppings watching other keys are told apart by it."""
        return self.monitor

    def __call__(self, trainer: Any) -> None:
        """Check ``monitor``; stop the trainer after more than ``patience`` bad checks.

        Args:
            trainer: the running ``Trainer``.

        Raises:
            KeyError: ``monitor`` was not observed at this point.
        """
        value = _observed(trainer, self.monitor, "EarlyStopping")
        better = (
            value < self.best - self.min_delta
            if self.mode == "min"
            else value > self.best + self.min_delta
        )
        if better:
            self.best, self.bad_checks = value, 0
            return
        self.bad_checks += 1
        if self.bad_checks > self.patience:
            trainer.stop(
                f"EarlyStopping: {self.monitor} did not improve on {self.best:.6g} for "
                f"{self.bad_checks} checks"
            )

    def state_dict(self) -> dict[str, Any]:
        """Return the best value so far and the checks since.

        Returns:
            ``{"best": float, "bad_checks": int}``.
        """
        return {"best": self.best, "bad_checks": self.bad_checks}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Restore the best value and the checks since."""
        self.best, self.bad_checks = float(d["best"]), int(d["bad_checks"])


__all__ = ["EarlyStopping", "Snapshot", "StepScheduler"]
