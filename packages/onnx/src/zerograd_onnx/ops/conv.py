"""Convolutions: conv2d, deconv2d (transposed), and im2col / col2im as graph operations."""

from __future__ import annotations

from zerograd.checks import pair
from zerograd_nn.functional import get_conv_outsize, get_deconv_outsize

from ..context import OpContext
from .base import emits


def refuse_hidden_batch_window(ctx: OpContext) -> None:
    """Refuse a window that slides over a batch axis and gives a length the runs saw fixed.

    A convolution's or pooling's window over an image axis that carries the batch (the
    batch transposed into it) gives ``(L + 2 * pad - kernel) // stride + 1`` positions,
    which grows with the axis length ``L`` but may be the same at the two runs' lengths
    (stride 2 over 3 and 4 rows gives 2 and 2); the graph would then write that length
    into later nodes. A window axis whose count changed between the runs is exported.

    Args:
        ctx: the call; its first input is the image, its first output the result.

    Raises:
        ExportError: naming the axis and its lengths.
    """
    x, out = ctx.inputs[0], ctx.outputs[0]
    for axis in sorted(ctx.dynamic(x)):
        if axis < 2 or axis in ctx.dynamic(out) or len(ctx.shape(out)) != len(ctx.shape(x)):
            continue
        batch = ctx.graph.program.batch
        raise ctx.error(
            f"its window slides over axis {axis}, which follows the batch size "
            f"({ctx.shape(x)[axis]} and {ctx.other_shape(x)[axis]} long at batch {batch[0]} and "
            f"{batch[1]}), and gives {ctx.shape(out)[axis]} positions at both: the graph would "
            f"fix that length, where other batch sizes change it, and ONNX Runtime would fail "
            f"or compute another shape. Keep the batch off the image axes (transpose it back "
            f"to axis 0 first), or export with dynamic_batch=False. Nothing was written."
        )


def _pads(pad: tuple[int, int]) -> list[int]:
    """A symmetric ``(ph, pw)`` pad as ONNX's ``[begin_h, begin_w, end_h, end_w]``."""
    return [pad[0], pad[1], pad[0], pad[1]]


@emits("Conv")
def conv2d(ctx: OpContext) -> None:
    """``Conv`` with the constructor's ``stride`` and ``pad`` (the weight is OIHW in both)."""
    refuse_hidden_batch_window(ctx)
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
    moved = sorted(ctx.dynamic(x) - {0})
    if moved:  # its Reshapes copy the batch from axis 0 and write the others' lengths
        batch = ctx.graph.program.batch
        raise ctx.error(
            f"axis {moved[0]} of its input follows the batch size ({ctx.shape(x)[moved[0]]} "
            f"and {ctx.other_shape(x)[moved[0]]} long at batch {batch[0]} and {batch[1]}); "
            f"im2col is exported with the batch on axis 0 only. Transpose the batch back to "
            f"axis 0 first, or export with dynamic_batch=False. Nothing was written."
        )
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
