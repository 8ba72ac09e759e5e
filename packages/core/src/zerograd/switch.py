"""The switch the engine's hook points read first: one attribute, 0 unless something is on."""

from __future__ import annotations

import threading


class Switch:
    """A count of contexts entered now, in any thread, read as ``switch.on`` on hot paths.

    The eager engine pays one attribute read for each hook point while the count is 0;
    whoever enters or leaves a context moves the count under :attr:`lock`.
    """

    __slots__ = ("lock", "on")

    def __init__(self) -> None:
        self.on = 0
        self.lock = threading.Lock()
