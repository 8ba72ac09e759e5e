"""Batching rules of :mod:`zerograd_nn.functional.conv`.

Images of every sample join one batch of images where the weights are shared; per-sample
weights (what ``vmap(grad(...))`` differentiates) meet their own samples' patches in a
batched matrix product over :class:`~zerograd_nn.functional.Im2col`'s patches.
"""

from __future__ import annotations

from typing import Any

import zerograd.functions as F
from zerograd.func import Batch, batching_rule
from zerograd.func.rules.registry import reshape

from ..functional.conv import Col2im, Conv2d, Conv2DGradW, Deconv2d, Im2col
from ..functional.geometry import get_conv_outsize, get_deconv_outsize


def _check(op: str, batch: Batch, channel_axis: int) -> None:
    xs, ws = batch.shape(0), batch.shape(1)
    if len(xs) != 4 or len(ws) != 4:
        raise ValueError(
            f"{op}: expected x (N, C, H, W) and a 4-D weight, got shapes {xs} and {ws}"
        )
    if xs[1] != ws[channel_axis]:
        raise ValueError(
            f"{op}: x has {xs[1]} channels but the weight of shape {ws} expects "
            f"{ws[channel_axis]} (axis {channel_axis}); check in_channels."
        )


def _shared(batch: Batch) -> bool:
    """Whether only the images are batched (the weights and bias are the same for all)."""
    return not any(batch.batched[1:])


def _plus_bias(y: Any, batch: Batch) -> Any:
    """``y`` (n, N, OC, OH, OW) plus the bias when there is one, each sample's or a shared one."""
    if len(batch.xs) < 3:
        return y
    n, oc, b = batch.n, y.shape[2], batch.xs[2]
    return y + (F.reshape(b, (n, 1, oc, 1, 1)) if batch.batched[2] else F.reshape(b, (oc, 1, 1)))


@batching_rule(Conv2d)
def conv2d(fn: Any, batch: Batch) -> Any:
    """Each sample's images convolved with its weights."""
    _check("conv2d", batch, 1)
    if _shared(batch):
        return batch.split(fn(batch.merged(0), *batch.xs[1:]))
    n = batch.n
    big_n, c = batch.shape(0)[:2]
    oc, _, kh, kw = batch.shape(1)
    x = reshape(batch.expanded(0), (n * big_n, *batch.shape(0)[1:]))
    col = Im2col((kh, kw), fn.stride, fn.pad, False)(x)  # (n*N, C, KH, KW, OH, OW)
    oh, ow = col.shape[-2:]
    col = F.reshape(col, (n, big_n, c * kh * kw, oh * ow))
    w = F.reshape(batch.expanded(1), (n, 1, oc, c * kh * kw))
    return _plus_bias(F.reshape(F.matmul(w, col), (n, big_n, oc, oh, ow)), batch)


@batching_rule(Deconv2d)
def deconv2d(fn: Any, batch: Batch) -> Any:
    """Each sample's images through the transposed convolution with its weights.

    Per-sample weights: each sample's ``W^T x`` (a batched matrix product) folded into
    images by :class:`~zerograd_nn.functional.Col2im`, as deconv2d itself computes.
    """
    _check("deconv2d", batch, 0)
    if _shared(batch):
        return batch.split(fn(batch.merged(0), *batch.xs[1:]))
    n = batch.n
    big_n, c, h, w = batch.shape(0)
    _, oc, kh, kw = batch.shape(1)
    (sh, sw), (ph, pw) = fn.stride, fn.pad
    if fn.outsize is None:
        out_h, out_w = get_deconv_outsize(h, kh, sh, ph), get_deconv_outsize(w, kw, sw, pw)
    else:
        out_h, out_w = fn.outsize
    if (get_conv_outsize(out_h, kh, sh, ph), get_conv_outsize(out_w, kw, sw, pw)) != (h, w):
        return NotImplemented  # per sample, deconv2d names the sizes that do not fit
    x = reshape(batch.expanded(0), (n, big_n, c, h * w))
    wt = F.transpose(reshape(batch.expanded(1), (n, 1, c, oc * kh * kw)), (0, 1, 3, 2))
    gcol = reshape(F.matmul(wt, x), (n * big_n, oc, kh, kw, h, w))
    y = Col2im((n * big_n, oc, out_h, out_w), (kh, kw), fn.stride, fn.pad, False)(gcol)
    return _plus_bias(F.reshape(y, (n, big_n, oc, out_h, out_w)), batch)


@batching_rule(Conv2DGradW)
def conv2d_grad_w(fn: Any, batch: Batch) -> Any:
    """Each sample's weight gradient: its images' patches against its output gradients."""
    n = batch.n
    x = batch.expanded(0)
    gy = batch.expanded(1)
    big_n, c = x.shape[1:3]
    oc = gy.shape[2]
    kh, kw = fn.kernel_size
    col = Im2col((kh, kw), fn.stride, fn.pad, False)(F.reshape(x, (n * big_n, *x.shape[2:])))
    p = col.shape[-2] * col.shape[-1]
    col = F.reshape(col, (n, big_n, c * kh * kw, p))
    g = F.reshape(gy, (n, big_n, oc, p))
    gw = F.sum(F.matmul(g, F.transpose(col, (0, 1, 3, 2))), axis=1)
    return F.reshape(gw, (n, oc, c, kh, kw))


@batching_rule(Im2col)
def im2col(fn: Any, batch: Batch) -> Any:
    """Each sample's images unfolded: the batch's images unfolded as one batch."""
    if batch.ndim(0) != 4:
        return NotImplemented
    return batch.split(fn(batch.merged(0)))


@batching_rule(Col2im)
def col2im(fn: Any, batch: Batch) -> Any:
    """Each sample's patches folded back: as one batch of ``n`` times the images."""
    shape = tuple(fn.input_shape)
    folded = Col2im(
        (batch.n * shape[0], *shape[1:]), fn.kernel_size, fn.stride, fn.pad, fn.to_matrix
    )
    return batch.split(folded(batch.merged(0)))
