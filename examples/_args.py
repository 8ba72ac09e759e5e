"""Command-line argument types shared by the examples: a bad value is argparse's one-line
error (``spiral.py: error: argument --epochs: ...``), not a traceback from deep inside."""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def positive_int(text: str) -> int:
    """An int >= 1 (epochs, layer widths, derivative orders)."""
    n = _whole(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {n}")
    return n


def seed(text: str) -> int:
    """A seed numpy takes: an int in [0, 2**32)."""
    n = _whole(text)
    if not 0 <= n < 2**32:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**32), got {n}")
    return n


def positive_float(text: str) -> float:
    """A finite number > 0 (a learning rate)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < x < math.inf:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return x


def out_folder(text: str) -> Path:
    """A folder to write into, made if missing (with its parents), and tried with a
    scratch file: a read-only folder is refused here, before the training, not by the
    first write after it."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = exc.strerror or exc
        raise argparse.ArgumentTypeError(f"cannot make the folder {text!r}: {why}") from None
    try:
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        why = exc.strerror or exc
        raise argparse.ArgumentTypeError(
            f"cannot write into the folder {str(path.resolve())!r} ({why}); "
            "give --out a folder you can write to"
        ) from None
    return path
