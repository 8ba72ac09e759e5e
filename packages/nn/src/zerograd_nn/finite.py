"""Checks for nan and inf in training, before an update spreads them into the weights.

One nan in a loss or a gradient turns every weight it reaches into nan at the next update,
and the run goes on silently. The ``Trainer`` checks each step's loss by default (one
scalar it converts anyway, read between backward and the update). Finding *which*
gradient went bad costs a pass over every gradient, so that check is opt-in, as PyTorch's
anomaly detection and Chainer's debug mode are: ``Trainer(..., check_grads=True)``, or
:func:`check_finite_grads` in a hand-written loop between ``loss.backward()`` and
``optimizer.update()``. Its cost is measured in the how-to page on training ("nan and
inf").

>>> import numpy as np
>>> from zerograd_nn.models import MLP
>>> model = MLP((3, 2))
>>> loss = (model(np.ones((1, 4), np.float32)) ** 2).sum()
>>> loss.backward()
>>> check_finite_grads(model)  # all finite: returns quietly
>>> model.l0.W.grad.data[0, 1] = np.nan
>>> nonfinite_grads(model)  # (name, values not finite, size); check_finite_grads raises
[('l0.W', 1, 12)]
"""

from __future__ import annotations

import math
from typing import Any

from zerograd import Function, Variable
from zerograd.backends import as_numpy, get_array_module
from zerograd.utils import size_of

__all__ = [
    "NonFiniteError",
    "all_finite",
    "check_finite_grads",
    "finite",
    "nonfinite_count",
    "nonfinite_grads",
]


class NonFiniteError(FloatingPointError):
    """A loss or a gradient holds nan or inf; raised before the update it would poison."""


class _Finite(Function):
    """The identity, refusing values that are not finite (see :func:`finite`)."""

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def forward(self, x: Any) -> Any:
        if size_of(x) == 1:  # a loss: one read of the number, no array work
            value = float(as_numpy(x).reshape(-1)[0])
            if not math.isfinite(value):
                err = NonFiniteError(f"a value of shape {tuple(x.shape)} is {value}")
                err.value = value
                raise err
        elif not all_finite(x):
            err = NonFiniteError(
                f"a value of shape {tuple(x.shape)} holds {nonfinite_count(x)} nan or inf of "
                f"{size_of(x)} values"
            )
            err.value = None
            raise err
        return x

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        return gy


def finite(x: Variable) -> Variable:
    """``x`` itself, as a Function's output, once every value of it is checked finite.

    A Function, so that the check is part of a ``zerograd.static_graph`` replay (a replay
    runs no Python of the step around it); its gradient passes through unchanged.

    Args:
        x: a Variable (a loss, typically).

    Returns:
        A Variable holding ``x``'s array.

    Raises:
        NonFiniteError: a value is nan or inf; its ``value`` attribute holds the value of a
            one-element ``x`` (None otherwise). Nothing else happened.
    """
    return _Finite()(x)


def all_finite(a: Any) -> bool:
    """Whether every value of the array ``a`` (of any backend) is finite.

    Args:
        a: an array, or a Variable (its data).

    Returns:
        False when ``a`` holds a nan or an inf.
    """
    a = a.data if isinstance(a, Variable) else a
    xp = get_array_module(a)
    return bool(as_numpy(xp.all(xp.isfinite(a))))


def nonfinite_count(a: Any) -> int:
    """How many values of the array ``a`` (of any backend) are nan or inf.

    Args:
        a: an array, or a Variable (its data).

    Returns:
        The count (one number read back to the host).
    """
    a = a.data if isinstance(a, Variable) else a
    xp = get_array_module(a)
    return int(as_numpy(xp.count_nonzero(~xp.isfinite(a))))


def nonfinite_grads(model: Any) -> list[tuple[str, int, int]]:
    """The parameters of ``model`` whose gradient holds nan or inf, in model order.

    Args:
        model: a Layer/Model (its ``named_params()``).

    Returns:
        ``[(name, how many values are not finite, size), ...]``; empty when every
        gradient is finite (parameters without a gradient count as finite).
    """
    bad = []
    for name, p in model.named_params().items():
        g = None if p.grad is None else p.grad.data
        if g is None:
            continue
        if not all_finite(g):
            bad.append((name, nonfinite_count(g), size_of(g)))
    return bad


def check_finite_grads(model: Any, where: str = "") -> None:
    """Raise :class:`NonFiniteError` naming the first parameter whose gradient is not finite.

    Call it between ``loss.backward()`` and ``optimizer.update()``; it changes nothing.

    Args:
        model: a Layer/Model.
        where: said before the message (for example ``"Trainer, iteration 58: "``).

    Raises:
        NonFiniteError: some gradient holds nan or inf; the message names the first in
            model order (``model.named_params()``), how many of its values are bad, and how
            many parameters are affected.
    """
    bad = nonfinite_grads(model)
    if not bad:
        return
    name, count, size = bad[0]
    shape = tuple(model.named_params()[name].grad.shape)
    raise NonFiniteError(
        f"{where}the gradient of {name!r} (shape {shape}) holds {count} nan or inf of {size} "
        f"values; it is the first of {len(bad)} such parameters in model order. Nothing was "
        f"updated."
    )
