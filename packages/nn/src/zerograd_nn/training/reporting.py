"""Extensions that report: LogReport, PrintReport, ProgressBar and PlotReport.

LogReport writes averages to a JSON-lines or CSV file, PrintReport prints them as a table,
ProgressBar shows a tqdm bar and PlotReport draws a PNG with matplotlib.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sys
from collections.abc import Sequence
from typing import Any

from zerograd.checks import positive_int

from ..atomic import write_atomically
from .extension import PRIORITY_READER, Extension, fires, get_trigger


def _is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is an open terminal (False for None, a closed file, a pipe)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _write_file(path: str, data: bytes, op: str) -> None:
    """Replace ``path`` with ``data`` atomically, making its folder (a filename may have one)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_atomically(path, lambda f: f.write(data), op)


class LogReport(Extension):
    """Averages every observation over an interval and appends one entry per interval.

    Each entry holds ``epoch``, ``iteration``, ``elapsed_time`` and the mean of every
    observed key over the interval (``loss``, ``lr``, metrics, ``val/...``); the mean is
    kept as a running mean, so a value that did not change over the interval (a constant
    ``lr``) is logged exactly as it was set. Entries are
    kept in ``log`` and written to ``trainer.out/filename``: JSON lines for a name
    ending in ``.jsonl`` or ``.json``, CSV for ``.csv``; None writes no file.

    JSON has no nan or inf: a mean that is not finite (a loss gone nan with
    ``check_loss=False``) is written as ``null``, JSON's "no value", which every JSON
    reader takes. ``log`` keeps the float itself, and a CSV file writes ``nan``/``inf``
    as Python's ``float()`` reads them.

    Args:
        keys: the keys to keep (default: all).
        trigger: when to close an interval and write an entry (default: each epoch).
        filename: the file's name inside the trainer's ``out`` folder.

    Attributes:
        log: the entries so far, one dict per interval.

    Raises:
        ValueError: for a file name with another suffix.
    """

    trigger = None  # it looks at every point; ``log_trigger`` says when it writes
    priority = PRIORITY_READER

    @property
    def writes_files(self) -> bool:  # type: ignore[override]
        """True unless ``filename`` is None."""
        return self.filename is not None

    def __init__(
        self,
        keys: Sequence[str] | None = None,
        trigger: Any = (1, "epoch"),
        filename: str | None = "log.jsonl",
    ) -> None:
        if filename is not None and not filename.endswith((".jsonl", ".json", ".csv")):
            raise ValueError(
                f"zerograd_nn.training.LogReport: filename must end in .jsonl, .json or .csv "
                f"(the format), got {filename!r}"
            )
        self.keys = None if keys is None else list(keys)
        self.log_trigger = get_trigger(trigger)
        self.filename = filename
        self.log: list[dict[str, float]] = []
        self._means: dict[str, float] = {}
        self._counts: dict[str, int] = {}
        self._columns: list[str] = []
        self._rewrite = True  # the first write starts the file afresh

    def __call__(self, trainer: Any) -> None:
        """Add this point's observations; at the trigger, append and write an entry.

        Args:
            trainer: the running ``Trainer``.
        """
        for k, v in trainer.observation.items():
            if self.keys is None or k in self.keys:
                n = self._counts.get(k, 0) + 1
                self._means[k] = _running_mean(self._means.get(k, 0.0), float(v), n)
                self._counts[k] = n
        if not fires(self.log_trigger, trainer, f"{self.default_name}'s log"):
            return
        entry = {
            "epoch": trainer.epoch,
            "iteration": trainer.iteration,
            "elapsed_time": trainer.elapsed_time,
        }
        entry.update(self._means)
        self.log.append(entry)
        self._means, self._counts = {}, {}
        if self.filename is not None:
            self._write(os.path.join(trainer.out, self.filename), entry)

    def _write(self, path: str, entry: dict[str, float]) -> None:
        if self.filename.endswith(".csv"):
            columns = list(self._columns)
            # each key once, in the order the entries first have it; the columns hold the
            # keys of every entry written, so only a new entry can add one (reading every
            # entry at each write made a log of n entries cost n**2 / 2 entry reads)
            for e in self.log if self._rewrite else (entry,):
                columns += [k for k in e if k not in columns]
            if self._rewrite or columns != self._columns:  # a new column: write it all again
                self._columns = columns
                buf = io.StringIO()
                writer = csv.DictWriter(buf, columns, lineterminator="\n")
                writer.writeheader()
                writer.writerows(self.log)
                _write_file(path, buf.getvalue().encode(), "LogReport")
            else:
                with open(path, "a", newline="") as f:
                    csv.DictWriter(f, columns, lineterminator="\n").writerow(entry)
        elif self._rewrite:
            text = "".join(_json_line(e) for e in self.log)
            _write_file(path, text.encode(), "LogReport")
        else:
            with open(path, "a") as f:
                f.write(_json_line(entry))
        self._rewrite = False

    @property
    def state_tag(self) -> str | None:
        """The file name: two LogReports writing other files are told apart by it."""
        return self.filename

    def state_dict(self) -> dict[str, Any]:
        """Return the entries so far and the running means of the open interval.

        Returns:
            ``{"log": [...], "means": {...}, "counts": {...}}``.
        """
        return {"log": self.log, "means": self._means, "counts": self._counts}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Restore the entries and means; the next write rewrites the file from them.

        Args:
            d: a dict from ``state_dict`` (or, from older snapshots, with ``"sums"``).
        """
        log = [dict(e) for e in d["log"]]  # all read before any is assigned
        counts = dict(d["counts"])
        if "means" in d:
            means = dict(d["means"])
        else:  # a snapshot of an older zerograd-nn kept sums
            means = {k: float(v) / counts[k] for k, v in dict(d["sums"]).items()}
        self.log, self._means, self._counts = log, means, counts
        self._columns = []
        self._rewrite = True  # the file may hold entries written after the snapshot


def _running_mean(mean: float, v: float, n: int) -> float:
    """The mean of ``n`` values, from the mean of the first ``n - 1`` and the last, ``v``.

    Exact while ``v`` is constant (a constant lr is logged as set), inf included: the mean
    of infs of one sign is that inf, not inf - inf = nan.
    """
    if n == 1:
        return v
    if mean == v or (math.isinf(mean) and math.isfinite(v)):
        return mean
    return mean + (v - mean) / n


def _json_line(entry: dict[str, Any]) -> str:
    """One entry as a line of strict JSON: a value that is not finite becomes null."""
    clean = {
        k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in entry.items()
    }
    return json.dumps(clean, allow_nan=False) + "\n"


def _find_log(trainer: Any, name: str) -> LogReport:
    try:
        log = trainer.get_extension(name)
    except KeyError:
        raise KeyError(
            f"zerograd_nn.training: this extension reads the entries of a LogReport named "
            f"{name!r}; add one first: trainer.extend(LogReport())"
        ) from None
    return log


class PrintReport(Extension):
    """Prints each new LogReport entry as a row of a table.

    Args:
        entries: the keys to show (default: those of the first entry).
        log_report: the name of the LogReport to read.
        file: where to print (default: standard output).
    """

    trigger = None
    priority = PRIORITY_READER - 1  # after the LogReport

    def __init__(
        self, entries: Sequence[str] | None = None, log_report: str = "LogReport", file: Any = None
    ) -> None:
        self.entries = (
            None if entries is None else [entries] if isinstance(entries, str) else list(entries)
        )
        self.log_report, self.file = log_report, file
        self._shown = 0
        self._header_printed = False

    def _print(self, line: str) -> None:
        if self.file is None:
            try:
                from tqdm.auto import tqdm

                tqdm.write(line)  # does not break a running progress bar
                return
            except ImportError:
                pass
        print(line, file=self.file or sys.stdout)

    def __call__(self, trainer: Any) -> None:
        """Print the LogReport entries not printed yet (the header first, once).

        Args:
            trainer: the running ``Trainer``.

        Raises:
            KeyError: the trainer has no LogReport named ``log_report``.
        """
        log = _find_log(trainer, self.log_report).log
        if self._shown >= len(log):
            return
        if self.entries is None:
            self.entries = list(log[self._shown])
        widths = [max(len(k), 10) for k in self.entries]
        if not self._header_printed:  # once per process, also after a resume
            self._header_printed = True
            self._print("  ".join(k.ljust(w) for k, w in zip(self.entries, widths)).rstrip())
        for entry in log[self._shown :]:
            cells = []
            for k, w in zip(self.entries, widths):
                v = entry.get(k)
                text = "" if v is None else str(v) if isinstance(v, int) else f"{v:.6g}"
                cells.append(text.ljust(w))
            self._print("  ".join(cells).rstrip())
        self._shown = len(log)

    def state_dict(self) -> dict[str, Any]:
        """Return how many entries were printed.

        Returns:
            ``{"shown": int}``.
        """
        return {"shown": self._shown}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Restore how many entries were printed."""
        self._shown = int(d["shown"])


class ProgressBar(Extension):
    """A tqdm bar over the iterations, with the latest loss; off when stdout is no terminal.

    Args:
        enabled: True or False forces it; None (default) shows it only when standard output
            is a terminal (so logs and CI output stay clean). Where there is no standard
            error to draw on (``sys.stderr`` is None, as under ``pythonw``), it stays off.
        update_interval: iterations between refreshes of the shown loss (an int >= 1).

    Raises:
        ImportError: when ``enabled=True`` and tqdm is not installed.
        TypeError, ValueError: ``update_interval`` is not a positive int.
    """

    trigger = None
    priority = PRIORITY_READER

    def __init__(self, enabled: bool | None = None, update_interval: int = 10) -> None:
        update_interval = positive_int(
            "zerograd_nn.training.ProgressBar", "update_interval", update_interval
        )
        self._tqdm = None
        if enabled or (enabled is None and _is_terminal(sys.stdout)):
            try:
                from tqdm.auto import tqdm

                self._tqdm = tqdm
            except ImportError:
                if enabled:
                    raise ImportError(
                        "zerograd_nn.training.ProgressBar needs tqdm: pip install tqdm"
                    ) from None
        self.enabled = self._tqdm is not None
        self.update_interval = update_interval
        self.bar: Any = None

    def initialize(self, trainer: Any) -> None:
        """Open the bar, counting from the trainer's iteration (after a resume too).

        Args:
            trainer: the ``Trainer`` starting to run.
        """
        if not self.enabled or sys.stderr is None:  # tqdm draws on standard error
            return
        total = trainer.max_iterations
        if total is None and hasattr(trainer.train_loader, "__len__"):
            total = trainer.max_epochs * len(trainer.train_loader)
        self.bar = self._tqdm(total=total, initial=trainer.iteration, unit="it", leave=False)

    def __call__(self, trainer: Any) -> None:
        """Advance the bar at an iteration point; refresh the shown epoch and loss.

        Args:
            trainer: the running ``Trainer``.
        """
        if self.bar is None or trainer.at_epoch_end:
            return
        self.bar.update(1)
        if trainer.iteration % self.update_interval == 0:
            self.bar.set_postfix(epoch=trainer.epoch, loss=f"{trainer.observation['loss']:.4g}")

    def finalize(self, trainer: Any) -> None:
        """Close the bar.

        Args:
            trainer: the ``Trainer`` that ran.
        """
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class PlotReport(Extension):
    """Draws chosen LogReport keys against epoch (or iteration) into a PNG, live.

    Uses matplotlib's Agg canvas directly, so it never changes the process's matplotlib
    backend and works without a display. The file is replaced atomically.

    Args:
        keys: the keys to draw on one set of axes (``['loss', 'val/loss']``).
        x_key: ``'epoch'`` or ``'iteration'``.
        trigger: when to redraw (default: each epoch).
        filename: the PNG's name inside the trainer's ``out`` folder.
        log_report: the name of the LogReport to read.

    Raises:
        ImportError: when matplotlib is not installed.
    """

    priority = PRIORITY_READER - 1  # after the LogReport
    writes_files = True

    def __init__(
        self,
        keys: Sequence[str],
        x_key: str = "epoch",
        trigger: Any = (1, "epoch"),
        filename: str = "plot.png",
        log_report: str = "LogReport",
    ) -> None:
        try:
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure
            from matplotlib.ticker import MaxNLocator
        except ImportError:
            raise ImportError(
                "zerograd_nn.training.PlotReport needs matplotlib: pip install matplotlib"
            ) from None
        self._figure, self._canvas, self._ticks = Figure, FigureCanvasAgg, MaxNLocator
        self.keys = [keys] if isinstance(keys, str) else list(keys)
        self.x_key, self.filename, self.log_report = x_key, filename, log_report
        self.trigger = trigger

    def __call__(self, trainer: Any) -> None:
        """Redraw the PNG from the LogReport's entries.

        Args:
            trainer: the running ``Trainer``; the file goes into ``trainer.out``.

        Raises:
            KeyError: the trainer has no LogReport named ``log_report``.
        """
        log = _find_log(trainer, self.log_report).log
        fig = self._figure(figsize=(6, 4))
        canvas = self._canvas(fig)
        ax = fig.add_subplot(1, 1, 1)
        if log and not any(self.x_key in e for e in log):
            raise KeyError(
                f"zerograd_nn.training.PlotReport: x_key {self.x_key!r} is in none of the "
                f"{self.log_report}'s entries (they hold {sorted(set().union(*log))}); use "
                f"'epoch' or 'iteration'."
            )
        for key in self.keys:
            points = [(e[self.x_key], e[key]) for e in log if key in e and self.x_key in e]
            if points:
                xs, ys = zip(*points)
                ax.plot(xs, ys, marker="." if len(points) < 50 else None, label=key)
        ax.set_xlabel(self.x_key)
        ax.xaxis.set_major_locator(self._ticks(integer=True))
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend()
        buf = io.BytesIO()
        canvas.print_png(buf)
        _write_file(os.path.join(trainer.out, self.filename), buf.getvalue(), "PlotReport")


__all__ = ["LogReport", "PlotReport", "PrintReport", "ProgressBar"]
