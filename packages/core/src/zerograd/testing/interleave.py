"""Forcing one interleaving of two threads, for tests of what threads share.

A race shows only when another thread acts at one precise point of a call; sleeping and
retrying makes such a test pass by luck. :func:`paused_thread` stops a worker thread at a
point its profile function recognizes, so the test acts exactly there, every time.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any


@contextlib.contextmanager
def paused_thread(
    work: Callable[[], Any], where: Callable[[FrameType, str, Any], bool], timeout: float = 30
) -> Iterator[Callable[[], None]]:
    """Run ``work()`` in a thread that waits at the first profile event ``where`` accepts.

    The ``with`` body runs while the thread waits there; it gets a function that lets the
    thread go and waits for it to finish (called again on leaving the block, a no-op).

    Args:
        work: What the thread runs.
        where: ``where(frame, event, arg)``, as :func:`sys.setprofile` calls a profile
            function (``"call"``, ``"c_return"``, ...): True at the point to stop.
        timeout: Seconds to wait for the thread to reach the point, and to finish.

    Yields:
        ``release()``: let the thread go on, and join it.

    Raises:
        AssertionError: The thread finished (or raised) without reaching the point.
    """
    inside, go = threading.Event(), threading.Event()

    def pause(frame: FrameType, event: str, arg: Any) -> None:
        if not inside.is_set() and where(frame, event, arg):
            inside.set()
            go.wait(timeout)

    def run() -> None:
        sys.setprofile(pause)
        try:
            work()
        finally:
            sys.setprofile(None)

    worker = threading.Thread(target=run)

    def release() -> None:
        go.set()
        worker.join(timeout)

    worker.start()
    try:
        if not inside.wait(timeout):
            raise AssertionError("the thread never reached the point where it should wait")
        yield release
    finally:
        release()
