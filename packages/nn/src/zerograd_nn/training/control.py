"""Extensions that steer training: Snapshot, StepScheduler and EarlyStopping.

Snapshot writes checkpoints to resume from, StepScheduler steps a learning-rate schedule
(ReduceLROnPlateau included), EarlyStopping stops a run that no longer improves.
"""

from __future__ import annotations

import math
import os
from typing import Any

from ..checkpoint import save_checkpoint
from .extension import PRIORITY_EDITOR, PRIORITY_SNAPSHOT, Extension


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
        trigger: when to save, for example ``(500, 'iteration')`` (default: each epoch).
        n_retains: keep only the newest ``n_retains`` files this extension wrote (None:
            keep all).
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

    def __call__(self, trainer: Any) -> None:
        """Write a checkpoint of ``trainer`` now, then drop files beyond ``n_retains``.

        Args:
            trainer: the running ``Trainer``; the file goes into ``trainer.out``.
        """
        name = self.filename.format(epoch=trainer.epoch, iteration=trainer.iteration)
        path = os.path.join(trainer.out, name)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        loader = trainer.train_loader if hasattr(trainer.train_loader, "state_dict") else None
        self.written.append(path)  # part of the state saved below
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
        if self.n_retains is not None:
            while len(self.written) > self.n_retains:
                old = self.written.pop(0)
                if old != path and os.path.exists(old):
                    os.remove(old)

    def state_dict(self) -> dict[str, Any]:
        """Return the files written so far (for ``n_retains``).

        Returns:
            ``{"written": [path, ...]}``.
        """
        return {"written": list(self.written)}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Restore the list of files written.

        Args:
            d: a dict from ``state_dict``.
        """
        self.written = list(d["written"])


class StepScheduler(Extension):
    """Steps a scheduler from ``zerograd_nn.schedulers`` at its trigger.

    Args:
        scheduler: the scheduler (StepLR, CosineAnnealingLR, ..., ReduceLROnPlateau).
        trigger: when to step (default: each epoch; ``(1, 'iteration')`` for per-update
            schedules such as warm-up).
        monitor: the observation ReduceLROnPlateau watches (``'val/loss'``); only for it.

    Raises:
        ValueError: when ``monitor`` is missing for ReduceLROnPlateau, or given for another
            scheduler.
    """

    priority = PRIORITY_EDITOR

    def __init__(self, scheduler: Any, trigger: Any = (1, "epoch"), monitor: str | None = None):
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
        """Restore the scheduler's state (checked by the scheduler).

        Args:
            d: a dict from ``state_dict``.
        """
        self.scheduler.load_state_dict(d["scheduler"])


def _observed(trainer: Any, key: str, who: str) -> float:
    try:
        return float(trainer.observation[key])
    except KeyError:
        raise KeyError(
            f"zerograd_nn.training.{who}: {key!r} was not observed at this point (epoch "
            f"{trainer.epoch}, iteration {trainer.iteration}); observed: "
            f"{sorted(trainer.observation)}. Give it the trigger of the extension that "
            f"writes {key!r} (an Evaluator's is (1, 'epoch'))."
        ) from None


class EarlyStopping(Extension):
    """Stops training when ``monitor`` has not improved for ``patience`` checks.

    Args:
        monitor: the observed key to watch (default ``'val/loss'``, from an Evaluator).
        mode: ``'min'`` (lower is better) or ``'max'``.
        patience: checks without improvement before stopping.
        min_delta: the least change that counts as an improvement.
        trigger: when to check (default: each epoch).

    Raises:
        ValueError: for another mode or a negative patience.
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
        if patience < 0:
            raise ValueError(
                f"zerograd_nn.training.EarlyStopping: patience must be >= 0, got {patience}"
            )
        self.monitor, self.mode, self.patience = monitor, mode, patience
        self.min_delta, self.trigger = abs(min_delta), trigger
        self.best = math.inf if mode == "min" else -math.inf
        self.bad_checks = 0

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
        """Restore the best value and the checks since.

        Args:
            d: a dict from ``state_dict``.
        """
        self.best, self.bad_checks = float(d["best"]), int(d["bad_checks"])


__all__ = ["EarlyStopping", "Snapshot", "StepScheduler"]
