"""Batching rules of :mod:`zerograd_nn.functional.activation`."""

from __future__ import annotations

from typing import Any

from zerograd.checks import axis as normalize_axis
from zerograd.func import Batch, batching_rule
from zerograd.func.rules.arithmetic import elementwise

from ..functional.activation import LeakyReLU, LogSoftmax, ReLU, Sigmoid, Softmax

batching_rule(Sigmoid, ReLU, LeakyReLU)(elementwise)


@batching_rule(Softmax, LogSoftmax)
def normalized(fn: Any, batch: Batch) -> Any:
    """Each sample normalized along its ``fn.axis``: one axis further on in the batch."""
    op = "softmax" if type(fn) is Softmax else "log_softmax"
    axis = normalize_axis(fn.axis, batch.ndim(0), op)
    return type(fn)(axis + 1)(batch.xs[0])
