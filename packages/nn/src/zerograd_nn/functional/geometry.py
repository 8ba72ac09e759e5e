"""Convolution geometry: kernel, stride and pad checked, output sizes, im2col and col2im.

The unfold (im2col) and fold (col2im) run on the backend's nn kernels
(:func:`zerograd_nn.kernels.kernels_of`), so a backend with faster ones (zerograd-cupy's
CUDA kernels) is used without a change here. The argument checks and output sizes are
core's (:func:`zerograd.checks.conv_args`, :func:`zerograd.shapes.conv_outsize_2d`), shared
with zerograd-cupy's kernels.
"""

from __future__ import annotations

import functools
from typing import Any

from zerograd.backends import get_array_module
from zerograd.checks import conv_args
from zerograd.shapes import conv_outsize, conv_outsize_2d

from ..kernels import kernels_of
from .arrays import refuse_variable


def get_conv_outsize(input_size: int, kernel_size: int, stride: int, pad: int) -> int:
    """DeZero's name for :func:`zerograd.shapes.conv_outsize` (same arguments, in order)."""
    return conv_outsize(input_size, kernel_size, stride, pad)


def get_deconv_outsize(size: int, k: int, s: int, p: int) -> int:
    """Output length of a transposed convolution along one axis: ``s*(size-1) + k - 2p``.

    Args:
        size: the input length.
        k: the kernel length.
        s: the stride.
        p: the padding.

    Returns:
        The output length.
    """
    return s * (size - 1) + k - 2 * p


def conv_geometry(
    op: str, img_shape: tuple, kernel_size: Any, stride: Any, pad: Any
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    """Check a 4-D image shape and return ``(kh, kw), (sh, sw), (ph, pw), (oh, ow)``.

    Results are cached per argument set: convolutions and pooling ask for the same
    geometry on every call, and the checks cost more than the lookup.

    Args:
        op: the calling function's name, for error messages.
        img_shape: the input's shape (N, C, H, W).
        kernel_size: an int or a pair.
        stride: an int or a pair.
        pad: an int or a pair.

    Returns:
        The kernel, stride, pad and output-size pairs.

    Raises:
        ValueError: the shape is not 4-D, or the kernel does not fit the padded image.
    """
    if _plain(kernel_size) and _plain(stride) and _plain(pad):
        return _cached_geometry(op, tuple(img_shape), kernel_size, stride, pad)
    # only exact ints are keys: 2.0 and True equal 2 and 1 but must fail the checks
    return _conv_geometry(op, img_shape, kernel_size, stride, pad)


def _plain(v: Any) -> bool:
    """An exact Python int, or a pair of them."""
    return type(v) is int or (
        type(v) is tuple and len(v) == 2 and type(v[0]) is int and type(v[1]) is int
    )


def _conv_geometry(
    op: str, img_shape: tuple, kernel_size: Any, stride: Any, pad: Any
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    """:func:`conv_geometry` without the cache."""
    if len(img_shape) != 4:
        raise ValueError(f"{op}: expected a 4-D input (N, C, H, W), got shape {tuple(img_shape)}")
    (kh, kw), (sh, sw), (ph, pw) = conv_args(op, kernel_size, stride, pad)
    oh, ow = conv_outsize_2d(op, img_shape[2], img_shape[3], (kh, kw), (sh, sw), (ph, pw))
    return (kh, kw), (sh, sw), (ph, pw), (oh, ow)


def im2col_array(
    img: Any,
    kernel_size: Any,
    stride: Any,
    pad: Any,
    to_matrix: bool = True,
    pad_value: float = 0.0,
) -> Any:
    """Unfold ``img`` (N, C, H, W) into patches (N, C, KH, KW, OH, OW).

    With ``to_matrix`` the result is (N*OH*OW, C*KH*KW). One strided slice per kernel
    offset, no loop over pixels. ``pad_value`` fills the border (``-inf`` for max pooling).

    Args:
        img: a backend array of shape (N, C, H, W).
        kernel_size: an int or a pair.
        stride: an int or a pair.
        pad: an int or a pair.
        to_matrix: return the 2-D matrix (else the 6-D array).
        pad_value: the value of the padding.

    Returns:
        The patches as a backend array.

    Raises:
        TypeError: ``img`` is a Variable (``F.im2col`` records a graph).
    """
    refuse_variable("im2col_array", img, "F.im2col")
    xp = get_array_module(img)
    (kh, kw), (sh, sw), (ph, pw), (oh, ow) = conv_geometry(
        "im2col", img.shape, kernel_size, stride, pad
    )
    n, c = img.shape[:2]
    col = kernels_of(img).im2col(img, (kh, kw), (sh, sw), (ph, pw), pad_value=pad_value)
    if to_matrix:
        col = xp.reshape(xp.permute_dims(col, (0, 4, 5, 1, 2, 3)), (n * oh * ow, -1))
    return col


def col2im_array(
    col: Any, img_shape: tuple, kernel_size: Any, stride: Any, pad: Any, to_matrix: bool = True
) -> Any:
    """Fold patches back into an image of ``img_shape``, adding overlapping entries.

    The adjoint of :func:`im2col_array`: ``col`` is (N, C, KH, KW, OH, OW), or
    (N*OH*OW, C*KH*KW) with ``to_matrix``.

    Args:
        col: the patches.
        img_shape: the image shape (N, C, H, W).
        kernel_size: an int or a pair.
        stride: an int or a pair.
        pad: an int or a pair.
        to_matrix: whether ``col`` is the 2-D matrix.

    Returns:
        A backend array of shape ``img_shape``.

    Raises:
        TypeError: ``col`` is a Variable (``F.col2im`` records a graph).
        ValueError: ``col``'s shape does not fit ``img_shape`` and the geometry.
    """
    refuse_variable("col2im_array", col, "F.col2im")
    xp = get_array_module(col)
    (kh, kw), (sh, sw), (ph, pw), (oh, ow) = conv_geometry(
        "col2im", img_shape, kernel_size, stride, pad
    )
    n, c, h, w = img_shape
    if to_matrix and tuple(col.shape) == (n * oh * ow, c * kh * kw):
        col = xp.permute_dims(xp.reshape(col, (n, oh, ow, c, kh, kw)), (0, 3, 4, 5, 1, 2))
    elif to_matrix:
        raise ValueError(
            f"col2im: patches of shape {tuple(col.shape)} do not match image shape "
            f"{tuple(img_shape)} with kernel {(kh, kw)}, stride {(sh, sw)}, pad {(ph, pw)} "
            f"(expected the matrix {(n * oh * ow, c * kh * kw)})."
        )
    if tuple(col.shape) != (n, c, kh, kw, oh, ow):
        raise ValueError(
            f"col2im: patches of shape {tuple(col.shape)} do not match image shape "
            f"{tuple(img_shape)} with kernel {(kh, kw)}, stride {(sh, sw)}, pad {(ph, pw)} "
            f"(expected {(n, c, kh, kw, oh, ow)})."
        )
    return kernels_of(col).col2im(col, tuple(img_shape), (kh, kw), (sh, sw), (ph, pw))


_cached_geometry = functools.lru_cache(maxsize=1024)(_conv_geometry)
