"""A small trainer in the spirit of Chainer's: the book's loop, with extensions.

See ``Trainer`` and the how-to page "Saving, resuming, schedules and the trainer".

Examples:
    >>> from zerograd_nn.training import Evaluator, LogReport, Trainer
"""

from .control import EarlyStopping, Snapshot, StepScheduler
from .evaluation import Evaluator
from .extension import (
    PRIORITY_EDITOR,
    PRIORITY_READER,
    PRIORITY_SNAPSHOT,
    PRIORITY_WRITER,
    Extension,
    IntervalTrigger,
    get_trigger,
)
from .reporting import LogReport, PlotReport, PrintReport, ProgressBar
from .trainer import Trainer

__all__ = [
    "PRIORITY_EDITOR",
    "PRIORITY_READER",
    "PRIORITY_SNAPSHOT",
    "PRIORITY_WRITER",
    "EarlyStopping",
    "Evaluator",
    "Extension",
    "IntervalTrigger",
    "LogReport",
    "PlotReport",
    "PrintReport",
    "ProgressBar",
    "Snapshot",
    "StepScheduler",
    "Trainer",
    "get_trigger",
]
