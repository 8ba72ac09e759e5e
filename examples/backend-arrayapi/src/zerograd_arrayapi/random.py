"""``xp.random``: numpy's random functions, returning array-api-strict arrays.

The Array API standard has no random numbers, so the draws come from numpy's global
generator (``numpy.random.seed`` makes them repeatable, as in DeZero) and are converted.
"""

from __future__ import annotations

from typing import Any

import array_api_strict as _a
import numpy as _np


def seed(s: int | None = None) -> None:
    """Seed numpy's global generator (the one these functions draw from)."""
    _np.random.seed(s)


def randn(*shape: int) -> Any:
    """Standard-normal float64 samples of ``shape``."""
    return _a.asarray(_np.random.randn(*shape))


def rand(*shape: int) -> Any:
    """Uniform float64 samples in ``[0, 1)`` of ``shape``."""
    return _a.asarray(_np.random.rand(*shape))


def uniform(low: float = 0.0, high: float = 1.0, size: Any = None) -> Any:
    """Uniform samples in ``[low, high)``."""
    return _a.asarray(_np.random.uniform(low, high, size))


def normal(loc: float = 0.0, scale: float = 1.0, size: Any = None) -> Any:
    """Normal samples with mean ``loc`` and standard deviation ``scale``."""
    return _a.asarray(_np.random.normal(loc, scale, size))


def randint(low: int, high: int | None = None, size: Any = None) -> Any:
    """Integers in ``[low, high)``."""
    return _a.asarray(_np.random.randint(low, high, size))


def permutation(x: Any) -> Any:
    """A shuffled ``arange(x)`` (an int) or a shuffled copy of array ``x`` along axis 0."""
    if isinstance(x, int):
        return _a.asarray(_np.random.permutation(x))
    order = _a.asarray(_np.random.permutation(x.shape[0]))
    return _a.take(x, order, axis=0)
