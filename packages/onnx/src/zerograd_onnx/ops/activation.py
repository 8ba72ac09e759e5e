"""Activations: sigmoid, relu, leaky relu, softmax and log-softmax, each one ONNX operator."""

from __future__ import annotations

import operator

from ..context import OpContext
from .base import Converter, emits


@emits("LeakyRelu")
def leaky_relu(ctx: OpContext) -> None:
    """``LeakyRelu`` with ``alpha`` the constructor's ``slope``."""
    (x,) = ctx.inputs_as_output_dtype()
    ctx.node("LeakyRelu", [x], ctx.outputs[0], alpha=float(ctx.fn.slope))


def _softmax(op_type: str) -> Converter:
    @emits(op_type)
    def convert(ctx: OpContext) -> None:
        (x,) = ctx.inputs_as_output_dtype()
        axis = operator.index(ctx.fn.axis) % len(ctx.shape(ctx.inputs[0]))
        ctx.node(op_type, [x], ctx.outputs[0], axis=axis)

    convert.__doc__ = f"``{op_type}`` along the constructor's ``axis`` (one axis, opset 13+)."
    return convert


softmax = _softmax("Softmax")
log_softmax = _softmax("LogSoftmax")
