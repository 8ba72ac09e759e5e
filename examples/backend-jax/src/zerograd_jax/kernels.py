"""im2col / col2im for JAX: the kernels :mod:`.nn_kernels` gives zerograd-nn's convolutions.

zerograd-nn's generic versions never write into an array either, but run as many small array
calls (col2im pads one array per kernel offset). These build the same results without
mutation (stacked slices, ``.at[].add``) and are compiled once per geometry with
``jax.jit``: the sizes are static arguments.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from zerograd.shapes import conv_outsize


def _window(j: int, i: int, s: tuple, out: tuple) -> tuple[slice, ...]:
    """The strided slice of the padded image that kernel offset ``(j, i)`` reads."""
    (sh, sw), (oh, ow) = s, out
    return (
        slice(None),
        slice(None),
        slice(j, j + sh * (oh - 1) + 1, sh),
        slice(i, i + sw * (ow - 1) + 1, sw),
    )


@partial(jax.jit, static_argnums=(1, 2, 3, 4))
def im2col(img: Any, k: tuple, s: tuple, p: tuple, pad_value: float) -> Any:
    """Patches (N, C, KH, KW, OH, OW) of ``img`` (N, C, H, W), borders filled with ``pad_value``.

    >>> im2col(jnp.ones((1, 1, 3, 3)), (2, 2), (1, 1), (0, 0), 0.0).shape
    (1, 1, 2, 2, 2, 2)
    """
    (kh, kw), (ph, pw) = k, p
    out = tuple(conv_outsize(img.shape[2 + d], k[d], s[d], p[d]) for d in (0, 1))
    img = jnp.pad(img, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=pad_value)
    rows = [jnp.stack([img[_window(j, i, s, out)] for i in range(kw)], axis=2) for j in range(kh)]
    return jnp.stack(rows, axis=2)


@partial(jax.jit, static_argnums=(1, 2, 3, 4))
def col2im(col: Any, img_shape: tuple, k: tuple, s: tuple, p: tuple) -> Any:
    """Fold patches (N, C, KH, KW, OH, OW) into an image of ``img_shape``, summing overlaps.

    The adjoint of :func:`im2col`.

    >>> col2im(jnp.ones((1, 1, 2, 2, 2, 2)), (1, 1, 3, 3), (2, 2), (1, 1), (0, 0))[0, 0, 1]
    Array([2., 4., 2.], dtype=float32)
    """
    n, c, h, w = img_shape
    (kh, kw), (sh, sw), (ph, pw) = k, s, p
    out = col.shape[4:]
    # room for the padded image plus one stride, so every window slice stays in bounds
    img = jnp.zeros((n, c, h + 2 * ph + sh - 1, w + 2 * pw + sw - 1), dtype=col.dtype)
    for j in range(kh):
        for i in range(kw):
            img = img.at[_window(j, i, s, out)].add(col[:, :, j, i])
    return img[:, :, ph : ph + h, pw : pw + w]
