"""Convolutions: conv2d, deconv2d (transposed), and im2col / col2im as graph operations."""

from __future__ import annotations

from zerograd.checks import pair
from zerograd_nn.functional import get_conv_outsize, get_deconv_outsize

from ..context import OpContext
from .base import emits


def _pads(pad: tuple[int, int]) -> list[int]:
    """A symmetric ``(ph, pw)`` pad as ONNX's ``[begin_h, begin_w, end_h, end_w]``."""
    return [pad[0], pad[1], pad[0], pad[1]]


@emits("Conv")
def conv2d(ctx: OpContext) -> None:
    """``Conv`` with the constructor's ``stride`` and ``pad`` (the weight is OIHW in both)."""
    x, w, *b = ctx.inputs_as_output_dtype()
    kernel = list(ctx.shape(ctx.inputs[1])[2:])
    stride, pad = pair(ctx.fn.stride), pair(ctx.fn.pad)
    ctx.node(
        "Conv", [x, w, *b], ctx.outputs[0], kernel_shape=kernel, strides=list(stride),
        pads=_pads(pad),
    )  # fmt: skip


@emits("ConvTranspose")
def deconv2d(ctx: OpContext) -> None:
    """``ConvTranspose``; an ``outsize`` above the default size is its ``output_padding``."""
    x, w, *b = ctx.inputs_as_output_dtype()
    _, _, kh, kw = ctx.shape(ctx.inputs[1])
    h, wd = ctx.shape(ctx.inputs[0])[2:]
    stride, pad = pair(ctx.fn.stride), pair(ctx.fn.pad)
    default = (get_deconv_outsize(h, kh, stride[0], pad[0]),
               get_deconv_outsize(wd, kw, stride[1], pad[1]))  # fmt: skip
    size = default if ctx.fn.outsize is None else tuple(ctx.fn.outsize)
    extra = [size[0] - default[0], size[1] - default[1]]
    attrs = {"output_padding": extra} if any(extra) else {}
    ctx.node(
        "ConvTranspose", [x, w, *b], ctx.outputs[0], kernel_shape=[kh, kw],
        strides=list(stride), pads=_pads(pad), **attrs,
    )  # fmt: skip


@emits("Pad", "Slice", "Unsqueeze", "Concat", "Reshape", "Transpose")
def im2col(ctx: OpContext) -> None:
    """The patches of ``x``, one strided ``Slice`` per kernel offset, joined on a new axis.

    Exact for any padding value (pooling_simple pads with -inf); the 6-d result
    (N, C, KH, KW, OH, OW) is transposed and reshaped for ``to_matrix``.
    """
    (x,) = ctx.inputs
    n, c, h, w = ctx.shape(x)
    fn = ctx.fn
    (kh, kw), (sh, sw), (ph, pw) = pair(fn.kernel_size), pair(fn.stride), pair(fn.pad)
    oh, ow = get_conv_outsize(h, kh, sh, ph), get_conv_outsize(w, kw, sw, pw)
    if ph or pw:
        value = ctx.scalar(fn.pad_value, ctx.dtype(x))
        x = ctx.node("Pad", [x, ctx.ints([0, 0, ph, pw, 0, 0, ph, pw]), value])
    parts = []
    for i in range(kh):
        for j in range(kw):
            window = ctx.node(
                "Slice",
                [x, ctx.ints([i, j]), ctx.ints([i + sh * (oh - 1) + 1, j + sw * (ow - 1) + 1]),
                 ctx.ints([2, 3]), ctx.ints([sh, sw])],
            )  # fmt: skip
            parts.append(ctx.node("Unsqueeze", [window, ctx.ints([2])]))
    joined = ctx.node("Concat", parts, axis=2) if len(parts) > 1 else parts[0]
    six = [0, c, kh, kw, oh, ow]  # 0: the batch, copied from the input
    if not fn.to_matrix:
        ctx.node("Reshape", [joined, ctx.ints(six)], ctx.outputs[0])
        return
    y = ctx.node("Reshape", [joined, ctx.ints(six)])
    y = ctx.node("Transpose", [y], perm=[0, 4, 5, 1, 2, 3])
    ctx.node("Reshape", [y, ctx.ints([-1, c * kh * kw])], ctx.outputs[0])


@emits("Reshape", "Transpose", "Col2Im")
def col2im(ctx: OpContext) -> None:
    """Patches folded into the image, overlaps summed: ONNX ``Col2Im`` (opset 18)."""
    (x,) = ctx.inputs
    fn = ctx.fn
    _, c, h, w = fn.input_shape
    (kh, kw), (sh, sw), (ph, pw) = pair(fn.kernel_size), pair(fn.stride), pair(fn.pad)
    oh, ow = get_conv_outsize(h, kh, sh, ph), get_conv_outsize(w, kw, sw, pw)
    if fn.to_matrix:  # (N*OH*OW, C*KH*KW) -> (N, C*KH*KW, OH*OW)
        y = ctx.node("Reshape", [x, ctx.ints([-1, oh * ow, c * kh * kw])])
        y = ctx.node("Transpose", [y], perm=[0, 2, 1])
    else:  # (N, C, KH, KW, OH, OW) -> (N, C*KH*KW, OH*OW)
        y = ctx.node("Reshape", [x, ctx.ints([0, c * kh * kw, oh * ow])])
    ctx.node(
        "Col2Im", [y, ctx.ints([h, w]), ctx.ints([kh, kw])], ctx.outputs[0],
        strides=[sh, sw], pads=[ph, pw, ph, pw],
    )  # fmt: skip
