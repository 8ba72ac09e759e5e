"""Arithmetic and elementwise math: one ONNX operator each, inputs cast as numpy promoted."""

from __future__ import annotations

import numpy as np
from onnx import helper

from zerograd.backends import as_numpy

from ..context import OpContext
from .base import Converter, emits


def elementwise(op_type: str) -> Converter:
    """The converter of a function computed by the ONNX operator ``op_type`` alone.

    Inputs whose dtype differs from the output's (``int_array / 2``, integer data into
    ``exp``) are cast first, as zerograd's forward computes in the output's dtype.

    Args:
        op_type: the ONNX operator (``"Add"``, ``"Exp"``, ...).

    Returns:
        The converter.
    """

    @emits(op_type)
    def convert(ctx: OpContext) -> None:
        ctx.node(op_type, ctx.inputs_as_output_dtype(), ctx.outputs[0])

    convert.__name__ = f"convert_{op_type.lower()}"
    return convert


@emits("Pow")
def power(ctx: OpContext) -> None:
    """``x ** c`` for the constant exponent ``c`` that :class:`Pow` was made with."""
    (x,) = ctx.inputs_as_output_dtype()
    c = ctx.scalar(ctx.fn.c, ctx.dtype(ctx.outputs[0]))
    ctx.node("Pow", [x, c], ctx.outputs[0])


@emits("Mul")
def square(ctx: OpContext) -> None:
    """``x * x`` (zerograd's forward multiplies, as numpy's ``x ** 2`` does)."""
    (x,) = ctx.inputs_as_output_dtype()
    ctx.node("Mul", [x, x], ctx.outputs[0])


@emits("Cast")
def as_float(ctx: OpContext) -> None:
    """Data converted to the output's dtype.

    Integers or bools to a float (``AsFloat``), or a float to another width (``Cast``:
    float16 batch norm computes in float32).
    """
    to = ctx.dtype(ctx.outputs[0])
    ctx.node("Cast", [ctx.inputs[0]], ctx.outputs[0], to=_tensor_type(to))


@emits("Clip", "Max", "Min")
def clip(ctx: OpContext) -> None:
    """``min(max(x, x_min), x_max)``: ``Clip`` for number bounds, ``Max``/``Min`` for arrays."""
    (x,) = ctx.inputs_as_output_dtype()
    dtype = ctx.dtype(ctx.outputs[0])
    lo, hi = ctx.fn.x_min, ctx.fn.x_max
    if all(b is None or np.ndim(_host(b)) == 0 for b in (lo, hi)):
        bounds = ["" if b is None else ctx.scalar(_host(b), dtype) for b in (lo, hi)]
        while bounds and bounds[-1] == "":
            bounds.pop()
        ctx.node("Clip", [x, *bounds], ctx.outputs[0])
        return
    y = x
    if lo is not None:
        low = ctx.constant(np.asarray(_host(lo), dtype=dtype), "x_min")
        y = ctx.node("Max", [y, low], ctx.outputs[0] if hi is None else None)
    if hi is not None:
        high = ctx.constant(np.asarray(_host(hi), dtype=dtype), "x_max")
        ctx.node("Min", [y, high], ctx.outputs[0])


def _host(v: object) -> object:
    return v if isinstance(v, (int, float)) else as_numpy(v)


def _tensor_type(dtype: np.dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
