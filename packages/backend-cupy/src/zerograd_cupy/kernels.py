"""CUDA kernels for convolution and pooling: im2col and col2im, one thread per element.

zerograd-nn's generic im2col (``zerograd_nn.kernels.Kernels``) loops over kernel offsets with
strided slices (KH*KW small copies); these do the whole unfold or fold in one kernel launch
each. ``col2im`` gathers (each image pixel sums the patch entries that cover it), so it needs
no atomic adds and is deterministic in every dtype.

Layouts follow DeZero: images are (N, C, H, W), patches are (N, C, KH, KW, OH, OW).
CuPy is imported on first use only.

Examples:
    >>> im2col_gpu.__name__, col2im_gpu.__name__
    ('im2col_gpu', 'col2im_gpu')
"""

from __future__ import annotations

import importlib
from typing import Any

from zerograd.checks import conv_args
from zerograd.shapes import conv_outsize_2d

from .backend import INSTALL_HINT
from .compiled import elementwise

_GEOMETRY = (
    "int32 h, int32 w, int32 oh, int32 ow, int32 kh, int32 kw, "
    "int32 sy, int32 sx, int32 ph, int32 pw"
)

_IM2COL_BODY = """
    const int ox = i % ow;
    const int oy = i / ow % oh;
    const int kx = i / ((ptrdiff_t)ow * oh) % kw;
    const int ky = i / ((ptrdiff_t)ow * oh * kw) % kh;
    const ptrdiff_t nc = i / ((ptrdiff_t)ow * oh * kw * kh);
    const int y = ky + oy * sy - ph;
    const int x = kx + ox * sx - pw;
    if (0 <= y && y < h && 0 <= x && x < w) {
        col = img[(nc * h + y) * w + x];
    } else {
        col = pad_value;
    }
"""

_COL2IM_BODY = """
    const int x = i % w;
    const int y = i / w % h;
    const ptrdiff_t nc = i / ((ptrdiff_t)w * h);
    T acc = 0;
    for (int ky = 0; ky < kh; ++ky) {
        const int ty = y + ph - ky;
        if (ty < 0) break;
        if (ty % sy != 0) continue;
        const int oy = ty / sy;
        if (oy >= oh) continue;
        for (int kx = 0; kx < kw; ++kx) {
            const int tx = x + pw - kx;
            if (tx < 0) break;
            if (tx % sx != 0) continue;
            const int ox = tx / sx;
            if (ox >= ow) continue;
            acc += col[(((nc * kh + ky) * kw + kx) * oh + oy) * ow + ox];
        }
    }
    img = acc;
"""


_IM2COL = (f"raw T img, {_GEOMETRY}, T pad_value", "T col", _IM2COL_BODY, "zerograd_im2col")
_COL2IM = (f"raw T col, {_GEOMETRY}", "T img", _COL2IM_BODY, "zerograd_col2im")


def _geometry(op: str, shape: tuple, kernel_size: Any, stride: Any, pad: Any) -> tuple:
    """The kernels' integer arguments ``h, w, oh, ow, kh, kw, sy, sx, ph, pw``, checked.

    By core's rules, the ones zerograd-nn's convolutions use.
    """
    if len(shape) != 4:
        raise ValueError(f"{op}: expected an image shape (N, C, H, W), got {tuple(shape)}")
    k, s, p = conv_args(op, kernel_size, stride, pad)
    h, w = int(shape[2]), int(shape[3])
    oh, ow = conv_outsize_2d(op, h, w, k, s, p)
    return (h, w, oh, ow, *k, *s, *p)


def _cupy(op: str) -> Any:
    """The ``cupy`` module, or one error saying to install it."""
    try:
        return importlib.import_module("cupy")
    except ModuleNotFoundError as exc:
        if exc.name != "cupy":  # CuPy is there and lacks something of its own
            raise
        raise ModuleNotFoundError(
            f"zerograd_cupy.{op} runs on CuPy arrays, and CuPy is not installed: {INSTALL_HINT}"
        ) from None


def im2col_gpu(
    img: Any, kernel_size: Any, stride: Any = 1, pad: Any = 0, pad_value: float = 0.0
) -> Any:
    """Unfold a CuPy image (N, C, H, W) into patches (N, C, KH, KW, OH, OW).

    Args:
        img: a CuPy array of shape ``(N, C, H, W)``.
        kernel_size: an int or ``(KH, KW)``, each at least 1.
        stride: an int or a pair, each at least 1.
        pad: an int or a pair, each at least 0.
        pad_value: fills positions outside the image (``-inf`` for max pooling).

    Returns:
        A new array of shape ``(N, C, KH, KW, OH, OW)``.

    Raises:
        ValueError: ``img`` is not 4-d, a size is malformed or out of range, or the kernel
            does not fit the padded image.
        ModuleNotFoundError: CuPy is not installed.
    """
    cp = _cupy("im2col_gpu")
    geo = _geometry("im2col_gpu", img.shape, kernel_size, stride, pad)
    h, w, oh, ow, kh, kw = geo[:6]
    n, c = img.shape[:2]
    col = cp.empty((n, c, kh, kw, oh, ow), dtype=img.dtype)
    if col.size:
        pad_value = img.dtype.type(pad_value)
        elementwise(*_IM2COL)(cp.ascontiguousarray(img), *geo, pad_value, col)
    return col


def col2im_gpu(
    col: Any, img_shape: tuple[int, ...], kernel_size: Any, stride: Any = 1, pad: Any = 0
) -> Any:
    """Fold CuPy patches (N, C, KH, KW, OH, OW) into an image of ``img_shape``.

    Entries of overlapping patches are summed: this is the adjoint of ``im2col_gpu``
    (with ``pad_value=0``).

    Args:
        col: a CuPy array of shape ``(N, C, KH, KW, OH, OW)``.
        img_shape: the image shape ``(N, C, H, W)``.
        kernel_size: an int or ``(KH, KW)``, each at least 1.
        stride: an int or a pair, each at least 1.
        pad: an int or a pair, each at least 0.

    Returns:
        A new array of shape ``img_shape``.

    Raises:
        ValueError: ``col``'s shape does not match ``img_shape`` and the geometry, or a size
            is malformed or out of range.
        ModuleNotFoundError: CuPy is not installed.
    """
    cp = _cupy("col2im_gpu")
    geo = _geometry("col2im_gpu", tuple(img_shape), kernel_size, stride, pad)
    h, w, oh, ow, kh, kw = geo[:6]
    n, c = int(img_shape[0]), int(img_shape[1])
    expected = (n, c, kh, kw, oh, ow)
    if tuple(col.shape) != expected:
        raise ValueError(
            f"col2im_gpu: patches of shape {tuple(col.shape)} do not match image shape "
            f"{tuple(img_shape)} with kernel {(kh, kw)}, stride {geo[6:8]}, pad {geo[8:]} "
            f"(expected {expected})."
        )
    img = cp.empty((n, c, h, w), dtype=col.dtype)
    if img.size:
        elementwise(*_COL2IM)(cp.ascontiguousarray(col), *geo, img)
    return img
