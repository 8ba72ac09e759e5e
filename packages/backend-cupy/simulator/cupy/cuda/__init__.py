"""``cupy.cuda`` for the CPU simulator: one pretend device, streams that do nothing."""

from __future__ import annotations

from . import runtime


class Device:
    """The one simulated device (id 0)."""

    def __init__(self, device=None) -> None:
        self.id = 0 if device is None else int(device)
        if self.id != 0:
            raise runtime.CUDARuntimeError("cudaErrorInvalidDevice: invalid device ordinal")

    def use(self) -> None:
        """Make this the current device (there is only one)."""

    def synchronize(self) -> None:
        """Nothing runs asynchronously on the simulator."""

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc) -> None:
        return None


class Stream:
    """A stream; work on the simulator is always complete."""

    null: Stream

    def synchronize(self) -> None:
        """Nothing to wait for."""


Stream.null = Stream()


def get_device_id() -> int:
    """The current device's id (always 0)."""
    return 0
