"""Counting the Python lines a call runs: how its work grows with its input.

A test that a cost is linear compares the lines run at two sizes, which, unlike time, does
not move with the machine's load.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import CodeType
from typing import Any


def lines_run(fn: Callable[..., Any], *args: Any, counted: Callable[[CodeType], bool]) -> tuple:
    """``fn(*args)``'s result and the number of lines run in the code objects ``counted`` takes.

    Args:
        fn: What to call.
        *args: Its arguments.
        counted: ``counted(code)``: whether the lines of a frame running ``code`` count
            (``lambda code: code is f.__code__`` for one function's own frames; a test of
            ``code.co_filename`` for a package's files).

    Returns:
        ``(result, lines)``.
    """
    count = 0

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        return local if counted(frame.f_code) else None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = fn(*args)
    finally:
        sys.settrace(previous)
    return result, count
