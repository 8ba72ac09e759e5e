"""The Trainer: the book's training loop, with its extras as extensions (Chainer's design).

The loop is the one the tutorial writes by hand: for each batch ``(x, t)`` of the loader,
``loss = loss_fn(model(x), t)``, ``model.cleargrads()``, ``loss.backward()``,
``optimizer.update()``. Everything else (evaluation, logs, plots, snapshots, schedules,
early stopping, a progress bar) is an extension added with ``Trainer.extend``.
"""

from __future__ import annotations

import builtins
import math
import os
import shlex
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from zerograd import StaticGraphWarning, static_graph, using_config
from zerograd.checks import callable_arg, flag, positive_int
from zerograd.utils import add_note

from .. import functional as F
from ..atomic import checked_path
from ..checkpoint import CheckpointError, latest_checkpoint, prepare_load_checkpoint
from ..finite import NonFiniteError, check_finite_grads, finite
from ..layers import Layer
from .control import Snapshot
from .extension import Extension, fires, get_trigger, metric_functions, observed_number

_WHO = "zerograd_nn.training.Trainer"


def _out_folder(out: Any) -> str:
    """``out`` as the str path of a folder, or one error saying what to give instead.

    An empty name would fail only once an extension first writes; a bytes path would
    fail when joined with the str names extensions give their files.
    """
    if not isinstance(out, (str, os.PathLike)) or isinstance(os.fspath(out), bytes):
        raise TypeError(
            f"{_WHO}: out must be a folder's path as a str or os.PathLike (such as "
            f"'result'), got {type(out).__name__} {out!r:.60}."
        )
    path = checked_path(os.fspath(out), _WHO)
    if not path:
        raise ValueError(
            f"{_WHO}: out='' names no folder; give one such as out='result', or out='.' "
            f"for the working folder."
        )
    return path


def _count(name: str, value: Any) -> int | None:
    return None if value is None else positive_int(_WHO, name, value)


def _has_state(ext: Any) -> bool:
    """Whether a snapshot keeps something of ``ext`` (it has its own ``state_dict``)."""
    if isinstance(ext, Extension):
        return type(ext).state_dict is not Extension.state_dict
    return callable(getattr(ext, "state_dict", None))


class _Filed(NamedTuple):
    """An extension as the trainer holds it."""

    extension: Any
    trigger: Callable[[Any], Any]
    priority: int
    order: int
    base: str | None  # the default name it was filed under; None when given a name


class Trainer:
    """Trains ``model`` with ``optimizer`` on ``train_loader`` until a stop condition.

    Args:
        model: the Layer to train.
        optimizer: an optimizer already ``setup(model)``.
        train_loader: yields ``(x, t)`` batches (a ``DataLoader``); one pass over it is
            an epoch.
        loss_fn: ``loss_fn(y, t)`` gives the loss to minimize (default: softmax cross
            entropy).
        max_epochs: stop after this many epochs.
        max_iterations: stop after this many updates (whichever of the two comes first).
        metrics: ``{name: fn(y, t)}`` computed on each training batch, for example
            ``{"accuracy": F.accuracy}``; the Evaluator uses them too.
        out: the folder extensions write into (created when one writes; ``run`` checks
            first that it can write there); ``'.'`` for the working folder. An empty
            name is refused.
        check_loss: stop with ``NonFiniteError`` when a step's loss is nan or inf, before
            that step's update (a check of the one number the trainer reads anyway). It
            comes after ``backward()``, so that on a GPU the read does not hold backward
            up; the gradients are then the refused step's (``finite.nonfinite_grads``).
        check_grads: also check every gradient before each update, naming the first
            parameter whose gradient is not finite (``zerograd_nn.finite``); off by
            default, as it reads every gradient once more each step.
        static: run each update as a ``zerograd.static_graph`` step: recorded on its first
            calls, then replayed with no graph objects and the same results bit for bit
            (a kind of batch it cannot replay stays eager, with a warning saying why).
            The loss check is part of the replay; ``check_grads`` is not (it reads every
            gradient in Python), so the two cannot be combined. An optimizer whose
            ``replay_problem()`` gives a reason (a ``DataParallelOptimizer`` over several
            ranks) runs every step eagerly, with one ``StaticGraphWarning`` saying why.

    Attributes:
        epoch: epochs completed.
        iteration: updates done.
        observation: this point's values (``'loss'``, ``'lr'``, the metrics; ``'val/...'``
            after an Evaluator).
        at_epoch_end: whether this point ends an epoch.
        elapsed_time: seconds spent training, over every run (and across a resume).
        stop_reason: why the last run stopped early (None when it did not).
        resumed_from: the snapshot ``resume`` loaded (None before).
        step: the function each batch runs, ``step(x, t) -> (loss, y)`` (a
            ``zerograd.StaticGraph``, whose ``counts`` say how often it replayed, when
            ``static``).

    Raises:
        ValueError: when neither ``max_epochs`` nor ``max_iterations`` is given, or one
            of them is below 1.
        TypeError: ``loss_fn`` is not callable, a count is not an int, or ``check_loss``,
            ``check_grads`` or ``static`` is not True or False (numpy's bools count).

    Training is in train mode, as in PyTorch's loops: each epoch starts with
    ``model.train()``, undoing an ``eval()`` left by the user or by an extension, and its
    updates (and the extensions of its iteration points) run with ``Config.train`` True
    whatever it was set to outside. The model is left in train mode. An Evaluator changes
    neither: it runs under ``test_mode()``. To keep a part of the model in eval mode while
    training (frozen batch-norm statistics), override the model's ``train(mode=True)`` to
    call ``super().train(mode)`` and then ``eval()`` on that part.

    A Ctrl-C during ``run`` ends a script with exit status 130 and a message naming the
    last snapshot and the command that resumes from it, instead of a traceback (in an
    interactive session it raises ``KeyboardInterrupt`` after the message).

    Examples:
        >>> import numpy as np
        >>> from zerograd_nn import DataLoader, datasets, models, optimizers
        >>> from zerograd_nn.training import LogReport, Trainer
        >>> np.random.seed(0)
        >>> model = models.MLP((10, 3))
        >>> loader = DataLoader(datasets.Spiral(train=True), batch_size=30)
        >>> trainer = Trainer(model, optimizers.SGD(1.0).setup(model), loader, max_epochs=2)
        >>> log = trainer.extend(LogReport(filename=None))
        >>> trainer.run().epoch, len(log.log)
        (2, 2)
    """

    def __init__(
        self,
        model: Any,
        optimizer: Any,
        train_loader: Any,
        loss_fn: Callable[[Any, Any], Any] = F.softmax_cross_entropy,
        *,
        max_epochs: int | None = None,
        max_iterations: int | None = None,
        metrics: Mapping[str, Callable[[Any, Any], Any]] | None = None,
        out: str | os.PathLike = "result",
        check_loss: bool = True,
        check_grads: bool = False,
        static: bool = False,
    ) -> None:
        self.max_epochs = _count("max_epochs", max_epochs)
        self.max_iterations = _count("max_iterations", max_iterations)
        if max_epochs is None and max_iterations is None:
            raise ValueError(
                "zerograd_nn.training.Trainer: give max_epochs=... or max_iterations=... "
                "(or both): it needs to know when to stop"
            )
        callable_arg(_WHO, "loss_fn", loss_fn)
        self.model, self.optimizer, self.train_loader = model, optimizer, train_loader
        self.loss_fn, self.metrics = loss_fn, metric_functions(_WHO, metrics)
        self.out = _out_folder(out)
        self.check_loss = flag(_WHO, "check_loss", check_loss)
        self.check_grads = flag(_WHO, "check_grads", check_grads)
        static = flag(_WHO, "static", static)
        if static and self.check_grads:
            raise ValueError(
                f"{_WHO}: check_grads=True reads every gradient in Python between backward "
                f"and the update, which a static_graph replay does not run; use static=False "
                f"to check gradients, or static=True with check_grads=False (the loss is "
                f"still checked)."
            )
        problem = getattr(optimizer, "replay_problem", None)
        problem = problem() if static and callable(problem) else None
        if problem:
            warnings.warn(
                f"{_WHO}(static=True): {problem}; every step runs eagerly (the same "
                f"results, no replay).",
                StaticGraphWarning,
                stacklevel=2,
            )
        self.static = static
        self._replayed = bool(static and not problem)
        self.epoch = 0
        self.iteration = 0
        self.at_epoch_end = False
        self.observation: dict[str, float] = {}
        self.elapsed_time = 0.0
        self.stop_reason: str | None = None
        self.resumed_from: str | None = None
        self._batch = 0  # the number in its epoch of the batch being trained (see _where)
        self._resumed_at_epoch_end = False
        self._resumed = False  # the loader's position was restored: its pass may be empty
        self._batches: Any = None  # the iterator of an epoch a stop interrupted
        # (at_epoch_end, names): the extensions of a point that one of them (or a metric)
        # interrupted, which the next run() runs first
        self._pending: tuple[bool, list[str]] | None = None
        self._extensions: dict[str, _Filed] = {}

    @property
    def step(self) -> Any:
        """The function each batch runs, ``step(x, t) -> (loss, y)``.

        A ``zerograd.StaticGraph`` when ``static`` (this trainer's own, kept in it, which
        holds the trainer weakly); else the bound method, made on each read. A step kept
        on the trainer that held the trainer was a reference cycle, which kept a dropped
        trainer's model, optimizer and data until the cyclic collector ran.
        """
        return self._replayed_step if self._replayed else self._train_step

    # -- extensions ---------------------------------------------------------------------
    def extend(
        self,
        extension: Any,
        *,
        trigger: Any = None,
        name: str | None = None,
        priority: int | None = None,
    ) -> Any:
        """Add an extension; it runs at every point where its trigger fires.

        Args:
            extension: an ``Extension`` or any callable taking the trainer.
            trigger: ``(period, 'iteration' | 'epoch')`` or a callable; default: the
                extension's own ``trigger`` attribute, else every iteration.
            name: the name to file it under (default: its class or function name; ``_1``,
                ``_2``, ... are appended to repeated names). A snapshot keeps each
                extension's state under this name, so it must be new.
            priority: overrides the extension's ``priority``.

        Returns:
            The extension (so that ``log = trainer.extend(LogReport())`` keeps it at hand).

        Raises:
            TypeError: ``extension`` is not callable.
            ValueError: ``name`` is taken, or a second extension of a kind with a state
                (a LogReport) cannot be told apart from the first in a snapshot: neither
                the order they were added in nor a ``state_tag`` (a LogReport's
                ``filename``) tells which saved state is whose. Give it a ``name``.
        """
        if not callable(extension):
            raise TypeError(
                f"{_WHO}.extend: an extension is an Extension or a function of the trainer, "
                f"got {type(extension).__name__} {extension!r:.40}."
            )
        trig = get_trigger(
            trigger if trigger is not None else getattr(extension, "trigger", (1, "iteration"))
        )
        base = (
            getattr(extension, "default_name", None)
            or getattr(extension, "__name__", None)  # a function
            or type(extension).__name__
        )
        if name is not None:
            if name in self._extensions:
                raise ValueError(
                    f"{_WHO}.extend: an extension named {name!r} is already there; give each "
                    f"its own name (a snapshot keeps each one's state under it)."
                )
            key = name
        else:
            if _has_state(extension):
                self._check_apart(extension, base)
            key, n = base, 0
            while key in self._extensions:
                n += 1
                key = f"{base}_{n}"
        prio = priority if priority is not None else getattr(extension, "priority", 100)
        filed = _Filed(extension, trig, prio, len(self._extensions), None if name else base)
        self._extensions[key] = filed
        return extension

    def _check_apart(self, extension: Any, base: str) -> None:
        """Refuse a second stateful ``base`` whose snapshot state could be taken for another's."""
        tag = getattr(extension, "state_tag", None)
        for key, f in self._extensions.items():
            if f.base != base or not _has_state(f.extension):
                continue
            other = getattr(f.extension, "state_tag", None)
            if tag is None or other is None or tag == other:
                why = "they are equal" if tag == other else "None tells nothing apart"
                raise ValueError(
                    f"{_WHO}.extend: this trainer already has a {base} ({key!r}), and a "
                    f"snapshot keeps each one's state by name: on resume the two could get "
                    f"each other's state (their state tags are {other!r} and {tag!r}: {why}). "
                    f"Give this one a name of its own: trainer.extend(..., name='{base}-2'), "
                    f"and the same names when resuming."
                )

    def _state_keys(self) -> dict[str, str]:
        """``{name: key}``: what a snapshot keeps each stateful extension's state under.

        The name it was filed under, or ``"<default name>[<state tag>]"`` for extensions
        of one default name (so that the order they were added in does not matter).
        """
        groups: dict[str, int] = {}
        for f in self._extensions.values():
            if f.base is not None and _has_state(f.extension):
                groups[f.base] = groups.get(f.base, 0) + 1
        keys = {}
        for key, f in self._extensions.items():
            if _has_state(f.extension):
                shared = f.base is not None and groups[f.base] > 1
                keys[key] = f"{f.base}[{f.extension.state_tag}]" if shared else key
        return keys

    def get_extension(self, name: str) -> Any:
        """Return the extension filed under ``name``.

        Args:
            name: the name ``extend`` filed it under.

        Returns:
            The extension.

        Raises:
            KeyError: no extension has that name (the message lists the names).
        """
        try:
            return self._extensions[name].extension
        except KeyError:
            raise KeyError(
                f"Trainer.get_extension: no extension named {name!r}; the trainer has "
                f"{sorted(self._extensions)}"
            ) from None

    def _ordered(self) -> list[tuple[str, Any, Callable[[Any], bool]]]:  # by priority
        items = sorted(self._extensions.items(), key=lambda kv: (-kv[1].priority, kv[1].order))
        return [(k, f.extension, f.trigger) for k, f in items]

    # -- the loop -----------------------------------------------------------------------
    def stop(self, reason: str = "stopped by an extension") -> None:
        """Ask the loop to end after the current point (EarlyStopping calls this).

        Args:
            reason: kept as ``stop_reason``.
        """
        self.stop_reason = reason

    def _done(self) -> bool:
        if self.stop_reason is not None:
            return True
        if self.max_iterations is not None and self.iteration >= self.max_iterations:
            return True
        return self.max_epochs is not None and self.epoch >= self.max_epochs

    def _update(self, batch: Any, batch_number: int) -> None:
        if not isinstance(batch, (tuple, list)) or len(batch) != 2:
            raise TypeError(
                f"{_WHO}: the loader must yield (x, t) pairs, got "
                f"{type(batch).__name__}; wrap it or use a DataLoader"
            )
        x, t = batch
        self._batch = batch_number
        try:
            loss, y = self.step(x, t)
        except NonFiniteError as exc:
            if not hasattr(exc, "value"):  # a gradient's: its message names it already
                raise
            value = exc.value
            raise NonFiniteError(
                f"{_WHO}: the loss of {self._where()} is {value}; the update was not applied, "
                f"so the weights are those of iteration {self.iteration}. Lower the learning "
                f"rate or look for nan/inf in the data; check_grads=True names the first "
                f"parameter whose gradient is not finite, check_loss=False trains on regardless."
            ) from None
        self.iteration += 1
        obs = {"loss": observed_number(_WHO, "loss", loss)}
        lr = getattr(self.optimizer, "lr", None)
        if isinstance(lr, (int, float)):
            obs["lr"] = float(lr)
        self.observation = obs
        for name, fn in self.metrics.items():
            who = f"{_WHO} (iteration {self.iteration}, whose update is done)"
            try:
                obs[name] = observed_number(who, name, fn(y, t))
            except BaseException as exc:
                self._pending = (False, [n for n, _, _ in self._ordered()])
                add_note(
                    exc,
                    f"the metric {name!r} raised at iteration {self.iteration}, whose "
                    f"update was done; run() again first runs the extensions of this "
                    f"point (without that metric), then goes on with the next batch",
                )
                raise

    def _where(self) -> str:
        """The update being made, for error messages: its iteration, batch and epoch."""
        return f"iteration {self.iteration + 1} (batch {self._batch} of epoch {self.epoch + 1})"

    def _train_step(self, x: Any, t: Any) -> tuple[Any, Any]:
        """One update on the batch ``(x, t)``; returns the loss and the model's output."""
        y = self.model(x)
        loss = self.loss_fn(y, t)
        self._check_loss(loss)  # before anything changes: gradients, weights, the count
        self.model.cleargrads()
        loss.backward()
        if self.check_loss:  # after backward: on a GPU, its read waits with backward queued
            loss = finite(loss)  # a Function: a static replay checks the loss too
        if self.check_grads:
            check_finite_grads(self.model, where=f"{_WHO}, {self._where()}: ")
        self.optimizer.update()
        return loss, y

    _replayed_step = static_graph(_train_step)  # each trainer gets its own (the descriptor)

    def _check_loss(self, loss: Any) -> None:
        """Refuse a loss that is not one number (a per-example loss), before its backward."""
        shape = getattr(loss, "shape", None)
        if not callable(getattr(loss, "backward", None)) or shape is None:
            raise TypeError(
                f"{_WHO}: loss_fn returned a {type(loss).__name__}, not a Variable; it must "
                f"compute the loss from y with zerograd's functions (such as "
                f"F.softmax_cross_entropy(y, t)) so that it can be differentiated. Nothing "
                f"was updated."
            )
        if math.prod(shape) != 1:
            raise ValueError(
                f"{_WHO}: loss_fn returned a loss of shape {tuple(shape)} at {self._where()}, "
                f"not one number (one loss per example?); the trainer minimizes one number. "
                f"Reduce it in loss_fn, e.g. F.mean(...) or F.sum(...). Nothing was updated."
            )

    def _check_optimizer(self, op: str) -> None:
        """Refuse an optimizer that updates parameters other than the model's."""
        outside = getattr(self.optimizer, "params_outside", None)
        foreign = outside(self.model) if callable(outside) else []
        if foreign:
            raise ValueError(
                f"{_WHO}.{op}: the optimizer updates {len(foreign)} parameters that are not "
                f"the model's ({foreign[:5]}): it was set up on another model (another "
                f"instance), which training would change instead of this one. Set it up on "
                f"the model given to the Trainer: optimizer.setup(model). Nothing was "
                f"{'trained' if op == 'run' else 'changed'}."
            )

    def _fire(
        self, at_epoch_end: bool, start: float, ordered: list, names: list[str] | None = None
    ) -> None:
        """Run the extensions whose trigger fires at this point (only ``names``, if given).

        One that raises leaves the rest of the point (itself included) for the next
        ``run()``, which runs them first: a failure does not skip a schedule's step or a
        snapshot.
        """
        self.at_epoch_end = at_epoch_end
        if at_epoch_end and names is None:
            self.observation = {}
        self.elapsed_time = time.perf_counter() - start
        todo = ordered if names is None else [e for e in ordered if e[0] in names]
        for i, (name, ext, trig) in enumerate(todo):
            try:
                if fires(trig, self, name):
                    ext(self)
            except BaseException as exc:
                self._pending = (at_epoch_end, [n for n, _, _ in todo[i:]])
                if isinstance(exc, Exception):
                    point = "the end of epoch" if at_epoch_end else "iteration"
                    add_note(
                        exc,
                        f"raised by the trainer's extension {name!r} at {point} "
                        f"{self.epoch if at_epoch_end else self.iteration}; that update was "
                        f"done, and run() again first runs the extensions of this point that "
                        f"had not run (this one included), then goes on with the next batch",
                    )
                raise

    def _epoch(self, start: float, ordered: list) -> int | None:
        """Updates until the loader's epoch ends (returns the batch count) or a stop (None).

        The loader is driven with ``next`` on one iterator, kept when a stop comes inside
        the epoch, so that a later ``run()`` finishes that epoch: a new ``for`` would start
        a new one (PyTorch's and zerograd's loaders treat a left loop as abandoned). Each
        epoch (and each run's rest of one) starts in train mode, as PyTorch's loops do.
        """
        it = self._batches if self._batches is not None else iter(self.train_loader)
        self._batches = None
        batches = 0
        if isinstance(self.model, Layer):
            self.model.train()  # undoes an eval() left by the user or by an extension
        with using_config("train", True):  # and a Config.train = False left the same way
            while True:
                try:
                    batch = next(it)
                except StopIteration:
                    return batches
                batches += 1
                self._resumed_at_epoch_end = False
                try:
                    self._update(batch, batches)
                    self._fire(False, start, ordered)
                except BaseException:
                    self._batches = it  # a later run() goes on in this epoch
                    raise
                if self._done():
                    self._batches = it
                    return None

    def run(self) -> Trainer:
        """Train until ``max_epochs`` / ``max_iterations`` or ``stop``.

        Calling it again after it ended continues, if the limits were raised.

        Returns:
            ``self``.

        Raises:
            ValueError: when the loader yields no batch in an epoch (an iterator, such as a
                generator, runs out after its first epoch); nothing is counted for it.
            TypeError: when a batch is not an ``(x, t)`` pair.
            NonFiniteError: a loss (or, with ``check_grads``, a gradient) is nan or inf;
                that step's update was not applied.
            ValueError: the optimizer updates parameters that are not the model's (set up
                on another instance; nothing was trained), or ``loss_fn`` returned more
                than one number (that step's update was not applied).
            RuntimeError: the optimizer was not set up.
            OSError: an extension writes files and ``out`` cannot be written (nothing was
                trained).
            SystemExit: status 130 after a Ctrl-C in a script (see the class docstring).
        """
        self._check_optimizer("run")
        if hasattr(self.train_loader, "__len__") and len(self.train_loader) == 0:
            raise ValueError(
                f"{_WHO}: the training loader has no batch (len 0); check its dataset and "
                f"batch size"
            )
        ordered = self._ordered()
        writers = [name for name, ext, _ in ordered if getattr(ext, "writes_files", False)]
        if writers:
            self._check_out(writers)
        self.stop_reason = None
        start = time.perf_counter() - self.elapsed_time
        for _, ext, _ in ordered:
            if hasattr(ext, "initialize"):
                ext.initialize(self)
        interrupted = False
        try:
            if self._pending is not None:  # the rest of a point an error interrupted
                at_epoch_end, names = self._pending
                self._pending = None
                self._fire(at_epoch_end, start, ordered, names)
            while not self._done():
                # the rest of an epoch (a kept iterator, a restored loader) may be empty
                going_on = self._batches is not None or self._resumed
                self._resumed = False
                batches = self._epoch(start, ordered)
                if batches is None:  # stopped inside the epoch
                    break
                if batches == 0 and self._resumed_at_epoch_end:
                    # a snapshot taken at an epoch point: the loader's epoch had ended
                    self._resumed_at_epoch_end = False
                    continue
                if batches == 0 and not going_on:
                    self._no_batch()
                self.epoch += 1
                self._fire(True, start, ordered)
        except KeyboardInterrupt:
            interrupted = True
            self.stop_reason = "interrupted (Ctrl-C)"
            raise
        finally:
            for _, ext, _ in ordered:
                if hasattr(ext, "finalize"):
                    ext.finalize(self)
            if interrupted:
                self._interrupted()  # raises SystemExit(130) in a script
        return self

    def _no_batch(self) -> None:
        """Raise the error for an epoch that yielded no batch (nothing is counted for it)."""
        epoch = self.epoch + 1
        if isinstance(self.train_loader, Iterator):  # iter() of it is itself
            raise ValueError(
                f"{_WHO}: the training loader is an iterator ("
                f"{type(self.train_loader).__name__}), which can be gone through once: it "
                f"ran out in epoch {epoch}, after {self.iteration} updates. Give a loader "
                f"that starts again at each epoch (a DataLoader, a list of (x, t) batches), "
                f"or max_iterations= within what it yields"
            )
        raise ValueError(
            f"{_WHO}: the training loader yielded no batch in epoch {epoch}; check its "
            f"dataset and batch size"
        )

    def _check_out(self, writers: list[str]) -> None:
        """Make sure ``out`` is a folder this process can write into, or raise."""
        try:
            os.makedirs(self.out, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".write-check.", dir=self.out)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise type(exc)(
                exc.errno,
                f"{_WHO}: cannot write into the output folder {self.out!r} "
                f"({exc.strerror or exc}), which {', '.join(writers)} write into; pass out= "
                f"a folder you can write to. Nothing was trained",
            ) from None

    def _last_snapshot(self) -> str | None:
        written = [
            path
            for _, ext, _ in self._ordered()
            if isinstance(ext, Snapshot)
            for path in ext.written
            if os.path.isfile(path)
        ]
        return max(written, key=os.path.getmtime) if written else None

    def _interrupted(self) -> None:
        """Say where the run stopped and how to resume; exit 130 unless interactive."""
        lines = [
            f"{_WHO}: interrupted (Ctrl-C) after iteration {self.iteration} (epoch "
            f"{self.epoch + 1}); the step in progress, if any, was left unfinished."
        ]
        last = self._last_snapshot()
        if last is None:
            lines.append(
                "No snapshot was written, so this run cannot be resumed; add "
                "trainer.extend(Snapshot(...)) to be able to."
            )
        else:
            argv = list(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])
            lines.append(f"The last snapshot is {last}. To go on from it:")
            lines.append(f"    trainer.resume({last!r}); trainer.run()")
            script = sys.argv[0] if sys.argv else ""
            if script and script != "-c":
                kept, skip = [], False
                for arg in argv:
                    if skip:
                        skip = False
                    elif arg == "--resume":
                        skip = True
                    elif not arg.startswith("--resume="):
                        kept.append(arg)
                lines.append("or, for a script that passes --resume to trainer.resume():")
                lines.append("    " + shlex.join([*kept, "--resume", last]))
        print("\n".join(lines), file=sys.stderr or sys.__stderr__, flush=True)
        if hasattr(sys, "ps1") or sys.flags.interactive or hasattr(builtins, "__IPYTHON__"):
            return  # the KeyboardInterrupt goes on: the session keeps the trainer
        raise SystemExit(130) from None

    # -- snapshots ----------------------------------------------------------------------
    def state_extra(self) -> dict[str, Any]:
        """Return what a snapshot keeps of the trainer itself, beyond epoch and iteration.

        Returns:
            ``{"elapsed_time": float, "at_epoch_end": bool}``.
        """
        return {"elapsed_time": self.elapsed_time, "at_epoch_end": self.at_epoch_end}

    def extension_states(self) -> ExtensionStates:
        """Return the extensions' states as one object with a state dict.

        Returns:
            An ``ExtensionStates`` (what Snapshot saves in the checkpoint's scheduler slot).
        """
        return ExtensionStates(self)

    def resume(self, path: str | os.PathLike) -> Trainer:
        """Continue from a snapshot (add the extensions first).

        Restores the model, optimizer, loader position, random states, epoch, iteration and
        the extensions' states. Everything is checked before anything changes: a snapshot
        that does not fit this trainer leaves it, its model, optimizer, loader and
        extensions as they were.

        Args:
            path: a file written by ``Snapshot``, or a folder: its newest snapshot (the
                highest iteration, see ``zerograd_nn.checkpoint.latest_checkpoint``).

        Returns:
            ``self``; call ``run`` to go on. ``resumed_from`` names the file.

        Raises:
            ValueError: the snapshot does not fit this trainer, or the optimizer updates
                parameters that are not the model's (nothing changes).
            FileNotFoundError: no file at ``path``, or a folder without snapshots.
            PermissionError: ``path`` is a folder that cannot be listed.
            CheckpointError: the file is damaged, or holds no trainer state (nothing
                changes).
        """
        self._check_optimizer("resume")
        if isinstance(path, (str, os.PathLike)) and os.path.isdir(path):
            path = latest_checkpoint(path)
        loader = self.train_loader if hasattr(self.train_loader, "load_state_dict") else None
        try:
            commit, info = prepare_load_checkpoint(
                path,
                model=self.model,
                optimizer=self.optimizer,
                scheduler=self.extension_states(),
                loader=loader,
            )
        except CheckpointError as exc:
            if exc.missing != "scheduler":  # the slot a Snapshot fills with extension states
                raise
            raise CheckpointError(
                f"{_WHO}.resume: {os.fspath(path)!r} is a checkpoint but no Trainer snapshot "
                f"(it holds no extension states: save_checkpoint() wrote it, not Snapshot); "
                f"load it with load_checkpoint(path, model=..., optimizer=...). Nothing was "
                f"changed."
            ) from None
        elapsed_time, at_epoch_end = _trainer_extra(os.fspath(path), info.get("extra"))
        commit()  # the trainer's own part was checked too: nothing below can fail
        self.epoch, self.iteration = int(info["epoch"]), int(info["iteration"])
        self._batches = None  # the loader goes on from its restored position
        self._pending = None
        self._resumed = True
        self.elapsed_time = elapsed_time
        self._resumed_at_epoch_end = at_epoch_end
        self.resumed_from = os.fspath(path)
        return self


def _trainer_extra(path: str, extra: Any) -> tuple[float, bool]:
    """``(elapsed_time, at_epoch_end)`` from a snapshot's ``extra``; CheckpointError if damaged.

    ``extra`` is what ``Trainer.state_extra`` saved (None in snapshots that kept nothing).
    """
    extra = {} if extra is None else extra
    elapsed = extra.get("elapsed_time", 0.0) if isinstance(extra, dict) else None
    at_end = extra.get("at_epoch_end", False) if isinstance(extra, dict) else None
    if (
        isinstance(elapsed, bool)
        or not isinstance(elapsed, (int, float))
        or not math.isfinite(elapsed)
        or elapsed < 0
        or not isinstance(at_end, bool)
    ):
        raise CheckpointError(
            f"{_WHO}.resume: {path!r} holds a damaged trainer state (extra={extra!r:.200}; "
            f"a Snapshot saves {{'elapsed_time': seconds >= 0, 'at_epoch_end': True or "
            f"False}}). Nothing was changed; resume from another snapshot."
        )
    return float(elapsed), at_end


class ExtensionStates:
    """A trainer's extensions seen as one stateful object.

    It is saved in a checkpoint's scheduler slot (schedulers are extensions here, so the
    slot holds them all), each extension's state under its name (``"LogReport"``), or
    under ``"<default name>[<state tag>]"`` when several of one default name have a state
    (``"LogReport[log.jsonl]"``, ``"LogReport[steps.csv]"``), so that the order they are
    added in does not matter. Loading is all or nothing: every state is tried, and undone
    if any is refused.

    Args:
        trainer: the ``Trainer`` whose extensions it stands for.
    """

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer

    def state_dict(self) -> dict[str, Any]:
        """Return every extension's state.

        Returns:
            ``{key: its state}`` for every extension with a non-empty state.
        """
        states = {}
        for name, key in self.trainer._state_keys().items():
            state = self.trainer.get_extension(name).state_dict()
            if state:
                states[key] = state
        return states

    def prepare_load_state_dict(self, d: dict[str, Any]) -> Callable[[], None]:
        """Check ``d`` by loading it and undoing that; returns the commit that loads it.

        ``load_checkpoint`` calls this before it changes anything (and the commits after).
        """
        known = {key: name for name, key in self.trainer._state_keys().items()}
        states = {}
        for key, state in d.items():
            if key in known:
                states[key] = state
            else:
                warnings.warn(
                    f"Trainer.resume: the snapshot holds the state of an extension {key!r} "
                    f"that this trainer does not have; it is skipped",
                    stacklevel=4,
                )
        exts = {key: self.trainer.get_extension(known[key]) for key in states}
        before = {name: ext.state_dict() for name, ext in exts.items()}
        tried = []
        try:
            for name, ext in exts.items():
                tried.append(name)  # before its load: one that fails half-way is undone too
                ext.load_state_dict(states[name])
        except BaseException as exc:
            failed = name
            for done in tried:
                exts[done].load_state_dict(before[done])
            if not isinstance(exc, Exception):  # Ctrl-C: undone, and it goes on
                raise
            raise ValueError(
                f"Trainer.resume: the snapshot's state of the extension {failed!r} does not "
                f"fit this trainer's {type(exts[failed]).__name__} ({type(exc).__name__}: "
                f"{exc}); add the same extensions as the run that saved it. Nothing was "
                f"changed."
            ) from exc
        for done in tried:
            exts[done].load_state_dict(before[done])

        def commit() -> None:
            for name, ext in exts.items():
                ext.load_state_dict(states[name])

        return commit

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Load every extension's state from ``d``, all or nothing.

        Args:
            d: a dict from ``state_dict``; names this trainer lacks are skipped with a
                warning.

        Raises:
            ValueError: some extension refused its state (nothing changes).
        """
        self.prepare_load_state_dict(d)()


__all__ = ["ExtensionStates", "Trainer"]
