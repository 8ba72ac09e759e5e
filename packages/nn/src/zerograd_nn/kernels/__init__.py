"""zerograd-nn's kernel contract: the convolution, pooling and loss kernels of a backend.

zerograd's core contract is arrays only. What zerograd-nn needs beyond the array API (padding,
im2col/col2im, a softmax and a per-row cross-entropy in one pass) it finds here, through
:func:`kernels_of`: a backend's kernel plugin (the ``zerograd_nn_kernels`` hook, see
:mod:`zerograd_nn.kernels.hookspecs`) where it has one, else the generic :class:`Kernels`.
zerograd-numpy and zerograd-cupy implement the hook; ``zerograd_nn.testing.conformance``
checks any backend's kernels against numpy's.

Examples:
    >>> import numpy as np
    >>> img = np.ones((1, 1, 3, 3))
    >>> kernels_of(img).im2col(img, (2, 2), (1, 1), (0, 0)).shape
    (1, 1, 2, 2, 2, 2)
"""

from __future__ import annotations

from .generic import Kernels
from .hookspecs import ENTRY_POINT_GROUP, hookimpl, hookspec, kernels_hook
from .registry import kernels_for, kernels_of, refresh, register

__all__ = [
    "ENTRY_POINT_GROUP",
    "Kernels",
    "hookimpl",
    "hookspec",
    "kernels_hook",
    "kernels_for",
    "kernels_of",
    "refresh",
    "register",
]
