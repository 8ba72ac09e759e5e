"""Plain-loop references for the im2col/col2im kernels, shared by the CPU and GPU tests.

They follow the definitions pixel by pixel and compute the geometry themselves, so they do
not lean on anything in ``zerograd_cupy.kernels``.
"""

from __future__ import annotations

import numpy as np

GEOMETRIES = [  # (img shape, kernel, stride, pad)
    ((2, 3, 7, 6), (3, 3), (1, 1), (1, 1)),
    ((1, 2, 9, 8), (3, 2), (2, 3), (1, 0)),
    ((2, 1, 5, 5), (5, 5), (1, 1), (0, 0)),
    ((1, 4, 6, 7), (2, 2), (2, 2), (0, 0)),
    ((3, 2, 4, 4), (3, 3), (1, 1), (2, 2)),
    ((1, 1, 1, 1), (1, 1), (1, 1), (0, 0)),
]


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _offsets(img_shape, k, s, p):
    (kh, kw), (sy, sx), (ph, pw) = _pair(k), _pair(s), _pair(p)
    h, w = img_shape[2:]
    oh, ow = (h + 2 * ph - kh) // sy + 1, (w + 2 * pw - kw) // sx + 1
    for ky in range(kh):
        for kx in range(kw):
            for oy in range(oh):
                for ox in range(ow):
                    y, x = ky + oy * sy - ph, kx + ox * sx - pw
                    yield (ky, kx, oy, ox), (y, x), 0 <= y < h and 0 <= x < w


def im2col_reference(img, k, s, p, pad_value=0.0):
    """col[n, c, ky, kx, oy, ox] = img[n, c, ky + oy*sy - ph, kx + ox*sx - pw] (or pad_value)."""
    (kh, kw), (sy, sx), (ph, pw) = _pair(k), _pair(s), _pair(p)
    n, c, h, w = img.shape
    oh, ow = (h + 2 * ph - kh) // sy + 1, (w + 2 * pw - kw) // sx + 1
    col = np.full((n, c, kh, kw, oh, ow), pad_value, dtype=img.dtype)
    for (ky, kx, oy, ox), (y, x), inside in _offsets(img.shape, k, s, p):
        if inside:
            col[:, :, ky, kx, oy, ox] = img[:, :, y, x]
    return col


def col2im_reference(col, img_shape, k, s, p):
    """The adjoint of im2col: every patch entry added back onto its pixel."""
    img = np.zeros(img_shape, dtype=col.dtype)
    for (ky, kx, oy, ox), (y, x), inside in _offsets(img_shape, k, s, p):
        if inside:
            img[:, :, y, x] += col[:, :, ky, kx, oy, ox]
    return img
