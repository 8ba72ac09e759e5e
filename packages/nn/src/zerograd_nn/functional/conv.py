"""Convolutions: conv2d, deconv2d (transposed), conv2d_simple, im2col and col2im.

The derivative of every op here is a ``vjp`` that applies other ops of this module
(through ``xp.apply``), whose own derivatives exist too, so convolutions can be
differentiated to any order (style transfer needs two).
"""

from __future__ import annotations

from typing import Any

from zerograd import Function, Variable
from zerograd.backends import backend_of, get_array_module
from zerograd.checks import flag
from zerograd.checks import pair as _pair
from zerograd.functions import reshape, transpose
from zerograd.functions.ops import defines
from zerograd.typing import ArrayLike, Pair

from .arrays import add_into, array_arg, needs_grad
from .geometry import (
    col2im_array,
    conv_geometry,
    get_conv_outsize,
    get_deconv_outsize,
    im2col_array,
)
from .linear import linear
from .pytorch_names import CONV2D_KEYWORDS, DECONV2D_KEYWORDS, refuses_pytorch_keywords


def _has_bias(b: Any) -> bool:
    return b is not None and not (isinstance(b, Variable) and b.data is None)


def _check_conv(op: str, x: Any, W: Any, channel_axis: int, b: Any = None) -> None:
    if x.ndim != 4 or W.ndim != 4:
        raise ValueError(
            f"{op}: expected x (N, C, H, W) and a 4-D weight, got shapes {tuple(x.shape)} and "
            f"{tuple(W.shape)}"
        )
    if x.shape[1] != W.shape[channel_axis]:
        raise ValueError(
            f"{op}: x has {x.shape[1]} channels but the weight of shape {tuple(W.shape)} expects "
            f"{W.shape[channel_axis]} (axis {channel_axis}); check in_channels."
        )
    out = W.shape[1 - channel_axis]
    if b is not None and tuple(b.shape) != (out,):
        raise ValueError(f"{op}: bias of shape {tuple(b.shape)} does not fit {out} output channels")


# -- im2col / col2im as differentiable functions ----------------------------------------------
class Im2col(Function):
    """Patches of an image as a differentiable function (derivative: col2im).

    Args:
        kernel_size: the window size, an int or a pair.
        stride: an int or a pair.
        pad: an int or a pair.
        to_matrix: give the 2-D matrix (else the 6-D array).
        pad_value: the value of the padding.
    """

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def __init__(
        self, kernel_size: Any, stride: Any, pad: Any, to_matrix: bool, pad_value: float = 0.0
    ) -> None:
        self.kernel_size, self.stride, self.pad = kernel_size, stride, pad
        self.to_matrix = flag("im2col", "to_matrix", to_matrix)
        self.pad_value = pad_value

    def forward(self, x: Any) -> Any:
        y = im2col_array(x, self.kernel_size, self.stride, self.pad, self.to_matrix, self.pad_value)
        self.ctx = x.shape  # the input's shape, for the vjp
        return y

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``col2im(gy)``: the patches' gradients folded back into the image."""
        k, s, p = self.kernel_size, self.stride, self.pad
        return xp.apply(Col2im(self.ctx, k, s, p, self.to_matrix), gy)


class Col2im(Function):
    """Patches folded into an image as a differentiable function (derivative: im2col).

    Args:
        input_shape: the image shape (N, C, H, W).
        kernel_size: the window size, an int or a pair.
        stride: an int or a pair.
        pad: an int or a pair.
        to_matrix: whether the patches are the 2-D matrix.
    """

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def __init__(
        self, input_shape: tuple, kernel_size: Any, stride: Any, pad: Any, to_matrix: bool
    ) -> None:
        self.input_shape = tuple(input_shape)
        self.kernel_size, self.stride, self.pad = kernel_size, stride, pad
        self.to_matrix = flag("col2im", "to_matrix", to_matrix)

    def forward(self, x: Any) -> Any:
        return col2im_array(
            x, self.input_shape, self.kernel_size, self.stride, self.pad, self.to_matrix
        )

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``im2col(gy)``: the image's gradient read back as patches."""
        return xp.apply(Im2col(self.kernel_size, self.stride, self.pad, self.to_matrix), gy)


@defines(Im2col)
def im2col(
    x: ArrayLike, kernel_size: Pair, stride: Pair = 1, pad: Pair = 0, to_matrix: bool = True
) -> Variable:
    """Unfold image patches: (N, C, H, W) -> (N*OH*OW, C*KH*KW), or (N, C, KH, KW, OH, OW).

    Args:
        x: the input, shape (N, C, H, W).
        kernel_size: the window size, an int or a pair.
        stride: the stride, an int or a pair.
        pad: the zero padding, an int or a pair.
        to_matrix: return the 2-D matrix (else the 6-D array).

    Returns:
        A Variable of the unfolded patches.

    Examples:
        >>> import numpy as np
        >>> im2col(np.ones((1, 2, 4, 4)), 3).shape
        (4, 18)
    """
    return Im2col(kernel_size, stride, pad, to_matrix)(x)


@defines(Col2im)
def col2im(
    x: ArrayLike,
    input_shape: tuple,
    kernel_size: Pair,
    stride: Pair = 1,
    pad: Pair = 0,
    to_matrix: bool = True,
) -> Variable:
    """Fold patches back into an image of ``input_shape``, summing overlaps (im2col's adjoint).

    Args:
        x: patches as :func:`im2col` returns them.
        input_shape: the image shape (N, C, H, W).
        kernel_size: the window size, an int or a pair.
        stride: the stride, an int or a pair.
        pad: the zero padding, an int or a pair.
        to_matrix: whether ``x`` is the 2-D matrix (else the 6-D array).

    Returns:
        A Variable of shape ``input_shape``.
    """
    return Col2im(input_shape, kernel_size, stride, pad, to_matrix)(x)


# -- conv2d / deconv2d ------------------------------------------------------------------------
class Conv2d(Function):
    """2-D convolution; its derivative applies Deconv2d and Conv2DGradW, both differentiable.

    Args:
        stride: an int or a pair.
        pad: an int or a pair.
    """

    vjp_reads_outputs = False

    def __init__(self, stride: Any = 1, pad: Any = 0) -> None:
        self.stride = _pair(stride, what="conv2d: stride")
        self.pad = _pair(pad, what="conv2d: pad")

    def forward(self, x: Any, W: Any, b: Any = None) -> Any:
        _check_conv("conv2d", x, W, 1, b)
        conv_geometry("conv2d", x.shape, W.shape[2:], self.stride, self.pad)
        xp = get_array_module(x)
        col = im2col_array(x, W.shape[2:], self.stride, self.pad, to_matrix=False)
        n, c, kh, kw, oh, ow = col.shape
        oc = W.shape[0]
        # (OC, C*KH*KW) @ (N, C*KH*KW, OH*OW): the result is already (N, OC, OH*OW)
        y = xp.matmul(xp.reshape(W, (oc, c * kh * kw)), xp.reshape(col, (n, c * kh * kw, oh * ow)))
        if b is not None:
            y = add_into(y, xp.reshape(b, (1, oc, 1)))  # y: matmul's fresh result
        return xp.reshape(y, (n, oc, oh, ow))

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> tuple[Any, ...]:
        """Return ``(deconv2d(gy, W), Conv2DGradW(x, gy), sum of gy per channel)``."""
        x, W = xs[0], xs[1]
        inputs = self.inputs
        gx = gW = None
        if needs_grad(inputs[0]):
            gx = xp.apply(Deconv2d(self.stride, self.pad, inputs[0].shape[2:]), gy, W)
        if needs_grad(inputs[1]):
            gW = xp.apply(Conv2DGradW(W.shape[2:], self.stride, self.pad), x, gy)
        if len(xs) == 2:
            return gx, gW
        return gx, gW, xp.sum(gy, axis=(0, 2, 3)) if needs_grad(inputs[2]) else None


class Deconv2d(Function):
    """Transposed 2-D convolution; its derivative applies Conv2d and Conv2DGradW.

    Args:
        stride: an int or a pair.
        pad: an int or a pair.
        outsize: the output (H, W), or None for the default size.
    """

    vjp_reads_outputs = False

    def __init__(self, stride: Any = 1, pad: Any = 0, outsize: Any = None) -> None:
        self.stride = _pair(stride, what="deconv2d: stride")
        self.pad = _pair(pad, what="deconv2d: pad")
        if isinstance(outsize, (list, tuple)):
            outsize = tuple(outsize)
        self.outsize = None if outsize is None else _pair(outsize, what="deconv2d: outsize")
        if self.outsize is not None and min(self.outsize) < 1:
            # (0 - 2 + 2) // 2 + 1 == 1: the fit check in forward alone lets some through
            raise ValueError(
                f"deconv2d: outsize {self.outsize} must be at least 1 on each axis (an output "
                f"of pixels); give a larger one, or None for the default."
            )

    def forward(self, x: Any, W: Any, b: Any = None) -> Any:
        _check_conv("deconv2d", x, W, 0, b)
        (sh, sw), (ph, pw) = self.stride, self.pad
        if min(sh, sw) < 1 or min(ph, pw) < 0:
            raise ValueError(f"deconv2d: stride {self.stride} must be >= 1 and pad {self.pad} >= 0")
        xp = get_array_module(x)
        c, oc, kh, kw = W.shape
        n, _, h, w = x.shape
        if self.outsize is None:
            out_h, out_w = get_deconv_outsize(h, kh, sh, ph), get_deconv_outsize(w, kw, sw, pw)
            if min(out_h, out_w) < 1:  # the padding crops more than the whole output
                fits = _outsizes_that_fit((h, w), (kh, kw), self.stride, self.pad)
                raise ValueError(
                    f"deconv2d: an input of height/width {(h, w)} with kernel {(kh, kw)}, stride "
                    f"{self.stride} and pad {self.pad} gives an output of {(out_h, out_w)}: no "
                    f"pixels (stride * (H - 1) + KH - 2 * pad); "
                    + (
                        "use less padding."
                        if fits.startswith("no ")
                        else f"use less padding, or {fits}"
                    )
                )
        else:
            out_h, out_w = self.outsize
        if (get_conv_outsize(out_h, kh, sh, ph), get_conv_outsize(out_w, kw, sw, pw)) != (h, w):
            raise ValueError(
                f"deconv2d: outsize {(out_h, out_w)} does not fit an input of height/width "
                f"{(h, w)} with kernel {(kh, kw)}, stride {self.stride} and pad {self.pad}; "
                f"{_outsizes_that_fit((h, w), (kh, kw), self.stride, self.pad)}"
            )
        # (OC*KH*KW, C) @ (N, C, H*W) -> (N, OC*KH*KW, H*W), i.e. (N, OC, KH, KW, H, W)
        wt = xp.reshape(W, (c, oc * kh * kw)).T
        gcol = xp.reshape(xp.matmul(wt, xp.reshape(x, (n, c, h * w))), (n, oc, kh, kw, h, w))
        y = col2im_array(gcol, (n, oc, out_h, out_w), (kh, kw), self.stride, self.pad, False)
        if b is not None:
            y = add_into(y, xp.reshape(b, (1, oc, 1, 1)))  # y: col2im's fresh result
        return y

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> tuple[Any, ...]:
        """Return ``(conv2d(gy, W), Conv2DGradW(gy, x), sum of gy per channel)``."""
        x, W = xs[0], xs[1]
        inputs = self.inputs
        gx = gW = None
        if needs_grad(inputs[0]):
            gx = xp.apply(Conv2d(self.stride, self.pad), gy, W)
        if needs_grad(inputs[1]):
            gW = xp.apply(Conv2DGradW(W.shape[2:], self.stride, self.pad), gy, x)
        if len(xs) == 2:
            return gx, gW
        return gx, gW, xp.sum(gy, axis=(0, 2, 3)) if needs_grad(inputs[2]) else None


def _outsizes_that_fit(size: tuple, kernel: tuple, stride: tuple, pad: tuple) -> str:
    """What to pass as deconv2d's ``outsize`` instead: the sizes that fit, for an error.

    On each axis the default and up to ``stride - 1`` more fit, those of at least one pixel.
    """
    spans, empty, smallest = [], [], True
    for axis, n, k, s, p in zip(("height", "width"), size, kernel, stride, pad):
        default = get_deconv_outsize(n, k, s, p)
        low, high = max(1, default), default + s - 1
        if low > high:
            empty.append(axis)
        smallest = smallest and default >= 1
        spans.append(f"{low} to {high} {'high' if axis == 'height' else 'wide'}")
    if empty:
        return f"no {' and no '.join(empty)} fits: the pad crops every pixel; use less padding."
    note = " (None gives the smallest)" if smallest else ""
    return f"an outsize fits {spans[0]} and {spans[1]}{note}."


class Conv2DGradW(Function):
    """The weight gradient of conv2d: ``gW[o, c, i, j] = sum gy[n, o] * patches(x)[n, c, i, j]``.

    Bilinear in ``(x, gy)``; its derivative applies Deconv2d and Conv2d again.

    Args:
        kernel_size: the window size, an int or a pair.
        stride: an int or a pair.
        pad: an int or a pair.
    """

    vjp_reads_outputs = False

    def __init__(self, kernel_size: Any, stride: Any, pad: Any) -> None:
        self.kernel_size, self.stride, self.pad = _pair(tuple(kernel_size)), stride, pad

    def forward(self, x: Any, gy: Any) -> Any:
        xp = get_array_module(x)
        col = im2col_array(x, self.kernel_size, self.stride, self.pad, to_matrix=False)
        n, c, kh, kw, oh, ow = col.shape
        oc = gy.shape[1]
        # sum over the batch of (OC, OH*OW) @ (OH*OW, C*KH*KW)
        g3 = xp.reshape(gy, (n, oc, oh * ow))
        c3 = xp.reshape(col, (n, c * kh * kw, oh * ow))
        gw = backend_of(x).sum(xp.matmul(g3, xp.permute_dims(c3, (0, 2, 1))), (0,))
        return xp.reshape(gw, (oc, c, kh, kw))

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> tuple[Any, Any]:
        """Return ``(deconv2d(gy_in, g), conv2d(x, g))``, g the weight gradient's gradient."""
        x, gy_in = xs
        inputs = self.inputs
        gx = ggy = None
        if needs_grad(inputs[0]):
            gx = xp.apply(Deconv2d(self.stride, self.pad, inputs[0].shape[2:]), gy_in, gy)
        if needs_grad(inputs[1]):
            ggy = xp.apply(Conv2d(self.stride, self.pad), x, gy)
        return gx, ggy


@defines(Conv2d, Conv2DGradW)
@refuses_pytorch_keywords(CONV2D_KEYWORDS)
def conv2d(
    x: ArrayLike, W: ArrayLike, b: ArrayLike | None = None, stride: Pair = 1, pad: Pair = 0
) -> Variable:
    """2-D convolution (cross-correlation) of x (N, C, H, W) with W (OC, C, KH, KW).

    Args:
        x: the input, shape (N, C, H, W).
        W: the kernels, shape (OC, C, KH, KW).
        b: the bias, shape (OC,), or None.
        stride: an int or an ``(h, w)`` pair.
        pad: an int or an ``(h, w)`` pair.

    Returns:
        A Variable of shape (N, OC, OH, OW).

    Examples:
        >>> import numpy as np
        >>> conv2d(np.ones((1, 1, 5, 5)), np.ones((2, 1, 3, 3)), pad=1).shape
        (1, 2, 5, 5)
    """
    if _has_bias(b):
        return Conv2d(stride, pad)(x, W, b)
    return Conv2d(stride, pad)(x, W)


@defines(Deconv2d)
@refuses_pytorch_keywords(DECONV2D_KEYWORDS)
def deconv2d(
    x: ArrayLike,
    W: ArrayLike,
    b: ArrayLike | None = None,
    stride: Pair = 1,
    pad: Pair = 0,
    outsize: Pair | None = None,
) -> Variable:
    """Transposed convolution of x (N, C, H, W) with W (C, OC, KH, KW): conv2d's adjoint.

    Args:
        x: the input, shape (N, C, H, W).
        W: the kernels, shape (C, OC, KH, KW).
        b: the bias, shape (OC,), or None.
        stride: an int or an ``(h, w)`` pair.
        pad: an int or an ``(h, w)`` pair.
        outsize: the output (H, W) when several fit; the default is
            ``stride * (H - 1) + KH - 2 * pad``. Each fits from the default up to
            ``stride - 1`` more (PyTorch's ``output_padding``), and is at least 1.

    Returns:
        A Variable of shape (N, OC, OH, OW).

    Raises:
        ValueError: an ``outsize`` that does not fit, or an output of no pixels.
    """
    if _has_bias(b):
        return Deconv2d(stride, pad, outsize)(x, W, b)
    return Deconv2d(stride, pad, outsize)(x, W)


@defines()
def conv2d_simple(
    x: ArrayLike, W: ArrayLike, b: ArrayLike | None = None, stride: Pair = 1, pad: Pair = 0
) -> Variable:
    """conv2d built from im2col, reshape, transpose and linear (the book's first version).

    The arguments and the result are :func:`conv2d`'s.
    """
    x, W = (
        v
        if isinstance(v, Variable) and v.data is not None
        else Variable(array_arg("conv2d_simple", name, v))
        for v, name in ((x, "x"), (W, "W"))
    )
    _check_conv("conv2d_simple", x.data, W.data, 1)
    n = x.shape[0]
    oc = W.shape[0]
    _, _, _, (oh, ow) = conv_geometry("conv2d_simple", x.shape, W.shape[2:], stride, pad)
    col = im2col(x, W.shape[2:], stride, pad, to_matrix=True)
    t = linear(col, transpose(reshape(W, (oc, -1))), b if _has_bias(b) else None)
    return transpose(reshape(t, (n, oh, ow, oc)), (0, 3, 1, 2))


# literal, so that type checkers see the names (a test checks it against the ops defined here)
__all__ = [
    "im2col",
    "col2im",
    "conv2d",
    "deconv2d",
    "conv2d_simple",
    "Col2im",
    "Conv2DGradW",
    "Conv2d",
    "Deconv2d",
    "Im2col",
]
