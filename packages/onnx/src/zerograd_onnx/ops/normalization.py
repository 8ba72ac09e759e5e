"""Batch normalization in test mode: ``(x - mean) * (1 / sqrt(var + eps))`` per channel.

zerograd's ``batch_norm`` applies the scale ``gamma`` and shift ``beta`` as ordinary
functions around this one (their Mul and Add are converted on their own), so the running
statistics, the layer's ``avg_mean`` and ``avg_var`` Parameters, are the initializers
named by their dotted paths (``bn1.avg_mean``).
"""

from __future__ import annotations

from ..context import OpContext
from .base import emits


@emits("Add", "Sqrt", "Reciprocal", "Reshape", "Sub", "Mul")
def standardize(ctx: OpContext) -> None:
    """Standardize with the running statistics: the constructor's ``mean``, ``var``, ``eps``.

    ``shape`` (also the constructor's) lays the per-channel statistics against ``x``.
    """
    (x,) = ctx.inputs_as_output_dtype()  # float16 data, float32 statistics: float32
    fn = ctx.fn
    dtype = ctx.dtype(ctx.outputs[0])
    mean, var = ctx.tensor(fn.mean), ctx.tensor(fn.var)
    shape = ctx.ints(fn.shape)
    std = ctx.node("Sqrt", [ctx.node("Add", [ctx.cast(var, dtype), ctx.scalar(fn.eps, dtype)])])
    scale = ctx.node("Reshape", [ctx.node("Reciprocal", [std]), shape])
    centered = ctx.node("Sub", [x, ctx.node("Reshape", [ctx.cast(mean, dtype), shape])])
    ctx.node("Mul", [centered, scale], ctx.outputs[0])
