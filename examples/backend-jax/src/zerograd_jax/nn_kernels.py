"""zerograd-nn's kernels for JAX arrays: jitted im2col and col2im (see :mod:`.kernels`).

Named by the ``zerograd_nn.kernels`` entry point, so only zerograd-nn imports it: the backend
itself works without zerograd-nn. Padding, softmax and the per-row cross-entropy stay
zerograd-nn's generic ones, which never write into an array.
"""

from __future__ import annotations

from typing import Any

from zerograd_nn.kernels import Kernels, kernels_hook

from . import JaxBackend
from .kernels import col2im, im2col


class JaxKernels(Kernels):
    """im2col and col2im compiled once per geometry with ``jax.jit``."""

    def im2col(self, img: Any, k: tuple, s: tuple, p: tuple, pad_value: float = 0.0) -> Any:
        return im2col(img, tuple(k), tuple(s), tuple(p), float(pad_value))

    def col2im(self, col: Any, img_shape: tuple, k: tuple, s: tuple, p: tuple) -> Any:
        return col2im(col, tuple(img_shape), tuple(k), tuple(s), tuple(p))


zerograd_nn_kernels = kernels_hook(JaxBackend, JaxKernels)
