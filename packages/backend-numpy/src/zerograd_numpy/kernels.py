"""im2col / col2im for numpy: one strided slice per kernel offset, written in place.

Faster than zerograd-nn's generic kernels, written for immutable arrays (no stacking, no
padded copies per offset); numpy arrays are mutable, so the kernels fill one array.
:mod:`zerograd_numpy.nn_kernels` gives them to zerograd-nn.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zerograd.shapes import conv_outsize


def im2col(img: Any, k: tuple, s: tuple, p: tuple, pad_value: float) -> Any:
    """Return the patches (N, C, KH, KW, OH, OW) of ``img`` (N, C, H, W), a new array.

    Args:
        img: The image batch, a numpy array.
        k: The kernel size, an ``(h, w)`` pair.
        s: The stride, a pair.
        p: The padding, a pair.
        pad_value: What the padding holds.

    Returns:
        The patches; ``[n, c, j, i, y, x]`` is the padded image's
        ``[n, c, j + s[0]*y, i + s[1]*x]``.

    Examples:
        >>> import numpy as np
        >>> im2col(np.zeros((1, 1, 4, 4)), (2, 2), (2, 2), (0, 0), 0.0).shape
        (1, 1, 2, 2, 2, 2)
    """
    (kh, kw), (sh, sw), (ph, pw) = k, s, p
    n, c, h, w = img.shape
    oh, ow = conv_outsize(h, kh, sh, ph), conv_outsize(w, kw, sw, pw)
    if ph or pw:
        img = pad(img, ((0, 0), (0, 0), (ph, ph), (pw, pw)), pad_value)
    col = np.empty((n, c, kh, kw, oh, ow), dtype=img.dtype)
    for j in range(kh):
        j_end = j + sh * (oh - 1) + 1
        for i in range(kw):
            col[:, :, j, i, :, :] = img[:, :, j:j_end:sh, i : i + sw * (ow - 1) + 1 : sw]
    return col


def pad(x: Any, pad_width: Any, value: float = 0.0) -> Any:
    """Return ``x`` padded with the constant ``value``: the borders filled, then ``x`` copied.

    ``numpy.pad`` costs several times more on small images, in its argument handling.

    Args:
        x: A numpy array.
        pad_width: One ``(before, after)`` pair of ints per axis.
        value: What the padding holds.

    Returns:
        A new array.

    Examples:
        >>> import numpy as np
        >>> pad(np.ones((1, 2)), ((0, 0), (1, 0)), -1.0)
        array([[-1.,  1.,  1.]])
    """
    out = np.empty([n + a + b for n, (a, b) in zip(x.shape, pad_width)], dtype=x.dtype)
    for axis, (a, b) in enumerate(pad_width):
        lead = (slice(None),) * axis
        if a:
            out[(*lead, slice(0, a))] = value
        if b:
            out[(*lead, slice(out.shape[axis] - b, None))] = value
    out[tuple(slice(a, a + n) for n, (a, _) in zip(x.shape, pad_width))] = x
    return out


def col2im(col: Any, img_shape: tuple, k: tuple, s: tuple, p: tuple) -> Any:
    """Fold patches (N, C, KH, KW, OH, OW) into an image of ``img_shape``; overlaps add up.

    Args:
        col: The patches, a numpy array.
        img_shape: The image shape (N, C, H, W).
        k: The kernel size, an ``(h, w)`` pair.
        s: The stride, a pair.
        p: The padding, a pair.

    Returns:
        A new array of ``img_shape``.
    """
    n, c, h, w = img_shape
    (kh, kw), (sh, sw), (ph, pw) = k, s, p
    oh, ow = col.shape[4], col.shape[5]
    # Disjoint windows (stride >= kernel, as in pooling) are written, not added; when they
    # tile the whole image no zero fill is needed either (about 2x faster than +=), and the
    # image is the result itself: contiguous, which the ops after it read faster.
    disjoint = sh >= kh and sw >= kw
    tiled = disjoint and (kh, kw) == (sh, sw) and not (ph or pw) and (h, w) == (oh * sh, ow * sw)
    if tiled:
        img = np.empty(img_shape, dtype=col.dtype)
    else:  # padded, and large enough that every slice stays in bounds
        img = np.zeros((n, c, h + 2 * ph + sh - 1, w + 2 * pw + sw - 1), dtype=col.dtype)
    for j in range(kh):
        j_end = j + sh * (oh - 1) + 1
        for i in range(kw):
            window = (
                slice(None),
                slice(None),
                slice(j, j_end, sh),
                slice(i, i + sw * (ow - 1) + 1, sw),
            )
            if disjoint:
                img[window] = col[:, :, j, i, :, :]
            else:
                img[window] += col[:, :, j, i, :, :]
    return img if tiled else img[:, :, ph : h + ph, pw : w + pw]
