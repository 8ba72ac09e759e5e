"""Helpers for tests of values and derivatives at kinks, ties, zeros and infinities.

The kink tests of zerograd and zerograd-nn share them: one backward of any order, numpy's
IEEE warnings off where an infinite or nan result is the point, and float16 arrays that
skip (saying why) on a backend without float16.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Variable
from zerograd.backends import as_numpy


def grads(
    f: Callable[..., Any], *arrays: Any, gy: Any = None, order: int = 1
) -> tuple[Any, list[Any]]:
    """``f(*xs)``'s value and each input's gradient, as numpy arrays.

    Args:
        f: the function, on Variables.
        *arrays: its inputs (each becomes a Variable).
        gy: weights of the outputs (``sum(y * gy)`` is differentiated); None: all ones.
        order: 1, or 2 for the gradients of the sum of the first gradients.

    Returns:
        ``(value, [gradient or None per input])``.
    """
    xs = [Variable(a) for a in arrays]
    y = f(*xs)
    out = y if gy is None else F.sum(y * gy)
    out.backward(create_graph=order == 2)
    if order == 2:
        total = None
        for x in xs:
            g = F.sum(x.grad)
            total = g if total is None else total + g
            x.cleargrad()
        total.backward()
    return as_numpy(y), [None if x.grad is None else as_numpy(x.grad) for x in xs]


def quiet(f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``f(*args, **kwargs)`` with numpy's divide, invalid and overflow warnings off."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return f(*args, **kwargs)


def half(arr: Callable[..., Any], values: Any) -> Any:
    """``arr(values, "float16")`` on the backend under test (the ``arr`` fixture).

    The calling test skips, saying why, on a backend without float16 (array-api-strict's
    namespace has none).
    """
    try:
        return arr(values, "float16")
    except TypeError as exc:
        pytest.skip(f"the backend under test has no float16: {exc}")
