"""Matrix products: matmul and the fused linear ``x @ W + b``."""

from __future__ import annotations

from ..context import OpContext
from .base import emits


@emits("Gemm", "MatMul", "Add")
def linear(ctx: OpContext) -> None:
    """``Gemm`` for a 2-d ``x`` with a bias; ``MatMul`` (then ``Add``) otherwise."""
    x, w, *b = ctx.inputs_as_output_dtype()
    out = ctx.outputs[0]
    if b and len(ctx.shape(ctx.inputs[0])) == 2:
        ctx.node("Gemm", [x, w, b[0]], out)
    elif b:
        ctx.node("Add", [ctx.node("MatMul", [x, w]), b[0]], out)
    else:
        ctx.node("MatMul", [x, w], out)
