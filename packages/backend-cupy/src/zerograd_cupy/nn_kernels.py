"""zerograd-nn's kernels for CuPy arrays: one CUDA launch where the generic ones take several.

Imported only by zerograd-nn, through the ``zerograd_nn.kernels`` entry point (zerograd-cupy
itself does not need zerograd-nn). Imports no CuPy: the kernels load it on first use.
"""

from __future__ import annotations

from typing import Any

from zerograd_nn.kernels import Kernels, kernels_hook

from .backend import CupyBackend
from .kernels import col2im_gpu, im2col_gpu
from .softmax import (
    CROSS_ENTROPY_MAX_CLASSES,
    SOFTMAX_MAX_CLASSES,
    cross_entropy_grad_gpu,
    cross_entropy_rows_gpu,
    relu_grad_gpu,
    sigmoid_grad_gpu,
    softmax_rows_gpu,
)


class CupyKernels(Kernels):
    """The CuPy backend's kernels: im2col, col2im, the loss and activation gradients in one launch.

    Examples:
        >>> from zerograd_cupy import CupyBackend
        >>> CupyKernels(CupyBackend())
        <CupyKernels for backend 'cupy'>
    """

    def pad(self, x: Any, pad_width: Any, value: float = 0.0) -> Any:
        return self.backend.lib.pad(x, pad_width, mode="constant", constant_values=value)

    def im2col(self, img: Any, k: tuple, s: tuple, p: tuple, pad_value: float = 0.0) -> Any:
        return im2col_gpu(img, k, s, p, pad_value=pad_value)

    def col2im(self, col: Any, img_shape: tuple, k: tuple, s: tuple, p: tuple) -> Any:
        return col2im_gpu(col, img_shape, k, s, p)

    def softmax(self, x: Any, axis: int) -> Any:
        """Softmax along the last axis in one CUDA kernel where rows are short.

        Other axes, rows longer than ``SOFTMAX_MAX_CLASSES`` and dtypes other than float32
        and float64 take the generic path.
        """
        c = x.shape[axis] if x.ndim else 0
        if axis != x.ndim - 1 or not 0 < c <= SOFTMAX_MAX_CLASSES or x.dtype.char not in "fd":
            return super().softmax(x, axis)
        return softmax_rows_gpu(x.reshape(-1, c)).reshape(x.shape)

    def cross_entropy_rows(self, x: Any, t: Any) -> Any:
        """Each row's cross-entropy in one CUDA kernel, one thread per row.

        Rows longer than ``CROSS_ENTROPY_MAX_CLASSES`` and dtypes other than float32 and
        float64 take the generic path.
        """
        if x.shape[1] > CROSS_ENTROPY_MAX_CLASSES or x.dtype.char not in "fd":
            return super().cross_entropy_rows(x, t)
        return cross_entropy_rows_gpu(x, t)

    def cross_entropy_grad(self, x: Any, t: Any, scale: Any, kept: Any = None) -> Any:
        """The loss's gradient in one CUDA kernel, one thread per element reading its row.

        Rows longer than ``SOFTMAX_MAX_CLASSES`` and dtypes other than float32 and float64
        take the generic path. ``kept`` is None: the rows keep nothing here.
        """
        if not 0 < x.shape[1] <= SOFTMAX_MAX_CLASSES or x.dtype.char not in "fd":
            return super().cross_entropy_grad(x, t, scale)
        return cross_entropy_grad_gpu(x, t, scale)

    def relu_grad(self, y: Any, gy: Any) -> Any:
        if not _same_float(y, gy):
            return super().relu_grad(y, gy)
        return relu_grad_gpu(y, gy)

    def sigmoid_grad(self, y: Any, gy: Any) -> Any:
        if not _same_float(y, gy):
            return super().sigmoid_grad(y, gy)
        return sigmoid_grad_gpu(y, gy)


def _same_float(y: Any, gy: Any) -> bool:
    """Whether one elementwise kernel of T takes both: float32 or float64, one shape."""
    return y.dtype == gy.dtype and y.dtype.char in "fd" and y.shape == gy.shape


zerograd_nn_kernels = kernels_hook(CupyBackend, CupyKernels)
