"""``cupy.cuda.runtime`` for the CPU simulator."""

from __future__ import annotations

NAME = b"zerograd CuPy simulator (CPU, no CUDA)"


class CUDARuntimeError(RuntimeError):
    """Raised as CuPy raises it for CUDA runtime failures."""


def getDeviceCount() -> int:  # noqa: N802 - CuPy's name
    """One simulated device."""
    return 1


def getDeviceProperties(device: int) -> dict:  # noqa: N802 - CuPy's name
    """The few properties a caller may print; the name says it is the simulator."""
    return {"name": NAME, "totalGlobalMem": 0, "major": 0, "minor": 0}
