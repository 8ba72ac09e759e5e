"""Timing helpers shared by the benchmark modules."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], repeat: int = 7, number: int = 1) -> float:
    """Median seconds of ``fn`` over ``repeat`` runs of ``number`` calls each (after a warm-up)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def side_by_side(fns: dict[str, Callable[[], object]], repeat: int = 9) -> dict[str, float]:
    """Fastest seconds of each function, runs interleaved so that machine noise hits all alike.

    The minimum is the least disturbed run; interleaving keeps the ratios honest on a
    shared machine.
    """
    for fn in fns.values():
        fn()
    best = {k: float("inf") for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def try_torch():
    """torch when importable, else None (the torch column is then left empty)."""
    try:
        import torch

        torch.set_num_threads(1)
        return torch
    except Exception:
        return None
