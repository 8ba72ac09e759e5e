"""Timing helpers shared by the benchmark modules."""

from __future__ import annotations

import time
from collections.abc import Callable


def side_by_side(
    fns: dict[str, Callable[[], object]],
    repeat: int = 9,
    stat: Callable[[list[float]], float] = min,
) -> dict[str, float]:
    """Seconds per call of each function, runs interleaved so machine noise hits all alike.

    ``stat`` summarizes the runs: ``min`` (the least disturbed run) for microbenchmarks,
    ``statistics.median`` for steps whose time legitimately varies (allocation, caches).
    """
    for fn in fns.values():  # warm-up
        fn()
        fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: stat(v) for k, v in times.items()}


def try_torch():
    """torch when importable, else None (the torch column is then left empty)."""
    try:
        import torch

        torch.set_num_threads(1)
        return torch
    except Exception:
        return None
