"""Pooling: max pooling and average pooling (padded zeros counted, as zerograd does)."""

from __future__ import annotations

from zerograd.checks import pair

from ..context import OpContext
from .base import emits
from .conv import refuse_hidden_batch_window


def _window(ctx: OpContext) -> dict:
    fn = ctx.fn
    (kh, kw), (sh, sw), (ph, pw) = pair(fn.kernel_size), pair(fn.stride), pair(fn.pad)
    return {"kernel_shape": [kh, kw], "strides": [sh, sw], "pads": [ph, pw, ph, pw]}


@emits("MaxPool")
def max_pooling(ctx: OpContext) -> None:
    """``MaxPool`` (padding never wins the maximum in either: -inf in zerograd)."""
    refuse_hidden_batch_window(ctx)
    ctx.node("MaxPool", [ctx.inputs[0]], ctx.outputs[0], **_window(ctx))


@emits("AveragePool")
def average_pooling(ctx: OpContext) -> None:
    """``AveragePool`` with ``count_include_pad=1``: padded zeros count in the mean.

    Integer data is cast first: zerograd averages it in floating point.
    """
    refuse_hidden_batch_window(ctx)
    (x,) = ctx.inputs_as_output_dtype()
    ctx.node("AveragePool", [x], ctx.outputs[0], count_include_pad=1, **_window(ctx))
