"""zerograd-nn's kernels for numpy arrays: padding, im2col and col2im written in place.

Imported only by zerograd-nn, through the ``zerograd_nn.kernels`` entry point (zerograd-numpy
itself does not need zerograd-nn). softmax and the per-row cross-entropy stay zerograd-nn's
generic ones: on the CPU they are the same numpy calls.
"""

from __future__ import annotations

from typing import Any

from zerograd_nn.kernels import Kernels, kernels_hook

from . import NumpyBackend, kernels


class NumpyKernels(Kernels):
    """The numpy backend's kernels: each fills one new array (numpy arrays are mutable).

    Examples:
        >>> import numpy as np
        >>> from zerograd.backends import get_backend
        >>> NumpyKernels(get_backend("numpy")).pad(np.ones(1), ((1, 1),), 0.0)
        array([0., 1., 0.])
    """

    def pad(self, x: Any, pad_width: Any, value: float = 0.0) -> Any:
        return kernels.pad(x, pad_width, value)

    def im2col(self, img: Any, k: tuple, s: tuple, p: tuple, pad_value: float = 0.0) -> Any:
        return kernels.im2col(img, k, s, p, pad_value)

    def col2im(self, col: Any, img_shape: tuple, k: tuple, s: tuple, p: tuple) -> Any:
        return kernels.col2im(col, img_shape, k, s, p)


zerograd_nn_kernels = kernels_hook(NumpyBackend, NumpyKernels)
