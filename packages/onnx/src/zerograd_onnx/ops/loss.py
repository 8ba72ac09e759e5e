"""Losses: mean squared error and softmax cross-entropy (mean over the batch)."""

from __future__ import annotations

import numpy as np

from ..context import OpContext
from .base import emits


@emits("Sub", "Mul", "ReduceMean", "ReduceSum")
def mean_squared_error(ctx: OpContext) -> None:
    """``sum((x0 - x1) ** 2) / len(x0)`` as the mean over the batch axis of the per-row sums.

    Written as ``ReduceMean`` over axis 0 then ``ReduceSum``, so that the batch size is
    read from the input at run time, not frozen.
    """
    x0, x1 = ctx.inputs_as_output_dtype()
    diff = ctx.node("Sub", [x0, x1])
    square = ctx.node("Mul", [diff, diff])
    mean = ctx.node("ReduceMean", [square, ctx.ints([0])], keepdims=0)
    ctx.node("ReduceSum", [mean], ctx.outputs[0], keepdims=0)


@emits("SoftmaxCrossEntropyLoss")
def softmax_cross_entropy(ctx: OpContext) -> None:
    """``SoftmaxCrossEntropyLoss`` with ``reduction="mean"`` on integer labels."""
    x, t = ctx.inputs
    x = ctx.cast(x, ctx.dtype(ctx.outputs[0]))
    ctx.node(
        "SoftmaxCrossEntropyLoss", [x, ctx.cast(t, np.int64)], ctx.outputs[0], reduction="mean"
    )
