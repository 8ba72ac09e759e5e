"""zerograd-nn's kernels for numpy arrays: padding, im2col and col2im written in place.

Imported only by zerograd-nn, through the ``zerograd_nn.kernels`` entry point (zerograd-numpy
itself does not need zerograd-nn). softmax makes zerograd-nn's generic calls, with numpy's
overflow report silenced for the shift by the maximum alone. What differs is where numpy
does a kernel's work in fewer calls (a
step's count of array calls is a bench row and a test): the loss's rows keep softmax's
exponentials and row sums for its gradient, which then subtracts at the labels in place;
ReLU's gradient multiplies by the boolean mask, and the row indices are made once per batch
size.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

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

    def softmax(self, x: Any, axis: int) -> Any:
        y = np.exp(_shifted(x, axis))
        return y / self.backend.sum(y, (axis,), True)  # float16 adds in float32

    def cross_entropy_rows(self, x: Any, t: Any) -> Any:
        return self.cross_entropy_rows_kept(x, t)[0]

    def cross_entropy_rows_kept(self, x: Any, t: Any) -> tuple[Any, Any]:
        # log-sum-exp shifted by each row's maximum, the labels' entries picked from the
        # shifted scores (no add of the maximum back); softmax's exponentials and row sums
        # are kept for the gradient (seven array calls; nine before, and five more to
        # compute the softmax again in the gradient)
        z = _shifted(x, 1)
        e = np.exp(z)
        s = self.backend.sum(e, (1,), True)  # float16 adds in float32
        return np.log(s)[:, 0] - z[self.row_index(x), t], (e, s)

    def cross_entropy_grad(self, x: Any, t: Any, scale: Any, kept: Any = None) -> Any:
        if kept is None:
            p = self.softmax(x, 1)
        else:  # softmax's very divide, over the exponentials the rows computed
            e, s = kept
            p = np.divide(e, s, out=e)
        np.subtract.at(p, (self.row_index(x), t), 1)  # p - onehot(t), with no one-hot array
        p *= scale
        return p

    def sigmoid(self, x: Any) -> Any:
        with np.errstate(over="ignore"):  # exp(-x) = inf for x < -88 (float32): y is 0
            e = np.exp(-x)
            if e.ndim == 0:  # numpy scalars take no out= (numpy 1.x widens 1 + e: cast back)
                return (1 / (1 + e)).astype(x.dtype)
        e += 1  # the fresh array becomes the result (no second and third array)
        return np.divide(1, e, out=e)

    def relu_grad(self, y: Any, gy: Any) -> Any:
        return np.multiply(gy, y > 0)  # bool mask: 1.0 or 0.0 times gy, as astype then multiply

    def row_index(self, x: Any) -> Any:
        return _rows(x.shape[0])


def _shifted(x: Any, axis: int) -> Any:
    """``x`` less its maximum along ``axis``, without numpy's report of an overflow there.

    A row holding the dtype's largest number and its negative ([max, 0, -max]) shifts
    -max to -inf, whose exponential is the right 0; PyTorch is silent there. Only the
    overflow report is off, and only for this subtraction: inf - inf (an infinite score)
    still reports an invalid value, and nan passes through as before.
    """
    with np.errstate(over="ignore"):
        return x - np.max(x, axis=axis, keepdims=True)


@functools.lru_cache(maxsize=8)
def _rows(n: int) -> Any:
    rows = np.arange(n)
    rows.flags.writeable = False  # shared by every call with n rows
    return rows


zerograd_nn_kernels = kernels_hook(NumpyBackend, NumpyKernels)
