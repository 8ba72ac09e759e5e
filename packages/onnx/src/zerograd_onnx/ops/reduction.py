"""Reductions: sum, mean, max and min over the constructor's axes (ONNX takes them as an input)."""

from __future__ import annotations

from zerograd.checks import normalize_axis

from ..context import OpContext
from .base import Converter, emits


def reduction(op_type: str) -> Converter:
    """The converter of a reduction over ``fn.axis`` (None: every axis), ``fn.keepdims``.

    Args:
        op_type: ``"ReduceSum"``, ``"ReduceMean"``, ``"ReduceMax"`` or ``"ReduceMin"``.

    Returns:
        The converter.
    """

    @emits(op_type)
    def convert(ctx: OpContext) -> None:
        (x,) = ctx.inputs
        out = ctx.outputs[0]
        axes = normalize_axis(ctx.fn.axis, len(ctx.shape(x)), type(ctx.fn).__name__.lower())
        x = ctx.cast(x, ctx.dtype(out))  # bool counts in the default int, as sum does
        keepdims = int(bool(ctx.fn.keepdims))
        if axes is None:
            ctx.node(op_type, [x], out, keepdims=keepdims)
        elif not axes:  # sum over no axis: the identity
            ctx.node("Identity", [x], out)
        else:
            ctx.node(op_type, [x, ctx.ints(axes)], out, keepdims=keepdims)

    convert.__name__ = f"convert_{op_type.lower()}"
    return convert
