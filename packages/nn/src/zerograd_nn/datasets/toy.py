"""Generated datasets: the spiral and the sine curve of DeZero's book."""

from __future__ import annotations

import math
from typing import Any

from zerograd.backends import get_backend
from zerograd.checks import flag

from .base import Dataset, host_numpy

__all__ = ["SinCurve", "Spiral", "get_spiral"]


def get_spiral(train: bool = True) -> tuple[Any, Any]:
    """Generate three interleaved spiral arms of 100 points each.

    Deterministic: seeded 1984 for training and 2020 for test data, giving the very arrays
    DeZero's ``get_spiral`` gives (without touching the global random state).

    Args:
        train: the training data (True) or the test data.

    Returns:
        ``(x, t)``: points ``(300, 2)`` float32 and class labels ``(300,)`` int64, arrays of
            the default backend, shuffled.

    Raises:
        TypeError: ``train`` is not True or False (numpy's bools count).

    Examples:
        >>> x, t = get_spiral()
        >>> x.shape, x.dtype, t.shape, sorted(set(t.tolist()))
        ((300, 2), dtype('float32'), (300,), [0, 1, 2])
    """
    flag("get_spiral", "train", train)
    np = host_numpy()
    backend = get_backend()
    # made on the host with numpy's RandomState, then moved to the backend
    rng = np.random.RandomState(1984 if train else 2020)
    num_data, num_class = 100, 3
    n = num_data * num_class
    noise = rng.randn(n)  # drawn in DeZero's order: class by class, point by point
    rate = np.tile(np.arange(num_data) / num_data, num_class)
    cls = np.repeat(np.arange(num_class), num_data)
    theta = cls * 4.0 + 4.0 * rate + noise * 0.2
    x = np.stack([rate * np.sin(theta), rate * np.cos(theta)], axis=1)
    x, t = x.astype(np.float32), cls.astype(np.int64)
    indices = rng.permutation(n)
    return backend.from_numpy(x[indices]), backend.from_numpy(t[indices])


class Spiral(Dataset):
    """The spiral classification data (see ``get_spiral``); 300 points in 3 classes.

    Args:
        train: the training data (True) or the test data.
        transform: applied to each point.
        target_transform: applied to each label.
    """

    def prepare(self) -> None:
        """Generate the points and labels with ``get_spiral``."""
        self.data, self.label = get_spiral(self.train)


class SinCurve(Dataset):
    """1,000 points of ``sin`` on ``[0, 2π]`` as a sequence: ``x[i] -> x[i + 1]``.

    Training data is ``sin(x)`` plus uniform noise in ``[-0.05, 0.05)`` drawn from the
    global random state (seed it with ``numpy.random.seed`` for repeatable runs, as in
    DeZero); test data is the noise-free ``cos(x)``. Items are float64 arrays of shape (1,).

    Args:
        train: the noisy sine (True) or the clean cosine.
        transform: applied to each ``x``.
        target_transform: applied to each ``t``.
    """

    def prepare(self) -> None:
        """Generate the curve (the training noise from the global random state)."""
        np = host_numpy()
        num_data = 1000
        x = np.linspace(0, 2 * math.pi, num_data)
        noise = np.random.uniform(-0.05, 0.05, size=x.shape)
        y = np.sin(x) + noise if self.train else np.cos(x)
        y = get_backend().from_numpy(y.astype(np.float64))
        self.data = y[:-1][:, None]
        self.label = y[1:][:, None]
