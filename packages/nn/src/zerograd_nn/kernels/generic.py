"""The generic kernels: what zerograd-nn runs on a backend that brings none of its own.

Written with array API standard calls only (the names of :mod:`zerograd.backends.contract`),
so every backend that passes the core conformance suite runs them. Every kernel returns a
new array and writes into none it is given, so backends with immutable arrays fit. Creation
calls pass ``device=`` so an array never lands on another device than its inputs.
"""

from __future__ import annotations

from typing import Any

from zerograd.backends import Backend
from zerograd.shapes import conv_outsize


class Kernels:
    """Convolution, pooling and loss kernels for the arrays of one backend.

    A backend's kernel plugin subclasses it and overrides the kernels it does faster; the
    others stay these defaults. zerograd-nn checks every argument before calling a kernel
    (shapes, label ranges, the geometry), so kernels do not check again.

    Args:
        backend: The backend whose arrays the kernels take and return.

    Examples:
        >>> import numpy as np
        >>> from zerograd.backends import get_backend
        >>> Kernels(get_backend("numpy")).pad(np.ones((1, 1)), ((1, 0), (0, 1)), 0.0)
        array([[0., 0.],
               [1., 0.]])
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def __repr__(self) -> str:
        return f"<{type(self).__name__} for backend {self.backend.name!r}>"

    def pad(self, x: Any, pad_width: Any, value: float = 0.0) -> Any:
        """Return ``x`` padded with ``value``: ``(before, after)`` blocks joined on each axis.

        Args:
            x: An array of the backend.
            pad_width: One ``(before, after)`` pair of ints per axis.
            value: What the padding holds.

        Returns:
            The padded array (``x`` itself where every pair is ``(0, 0)``).
        """
        xp = self.backend.xp
        for axis, (before, after) in enumerate(pad_width):
            if not (before or after):
                continue
            parts = []
            for size in (before, None, after):
                if size is None:
                    parts.append(x)
                elif size:
                    shape = x.shape[:axis] + (size,) + x.shape[axis + 1 :]
                    parts.append(xp.full(shape, value, dtype=x.dtype, device=x.device))
            x = xp.concat(parts, axis=axis)
        return x

    def im2col(self, img: Any, k: tuple, s: tuple, p: tuple, pad_value: float = 0.0) -> Any:
        """Return the patches (N, C, KH, KW, OH, OW) of ``img`` (N, C, H, W).

        One strided slice per kernel offset, stacked.

        Args:
            img: The image batch.
            k: The kernel size, an ``(h, w)`` pair of ints.
            s: The stride, a pair.
            p: The padding, a pair.
            pad_value: What the padding holds (``-inf`` for max pooling).

        Returns:
            A new array; ``[n, c, j, i, y, x]`` is the padded image's
            ``[n, c, j + s[0]*y, i + s[1]*x]``.
        """
        xp = self.backend.xp
        (kh, kw), (sh, sw), (ph, pw) = k, s, p
        n, c, h, w = img.shape
        oh, ow = conv_outsize(h, kh, sh, ph), conv_outsize(w, kw, sw, pw)
        if ph or pw:
            img = self.pad(img, ((0, 0), (0, 0), (ph, ph), (pw, pw)), pad_value)
        windows = [
            img[:, :, j : j + sh * (oh - 1) + 1 : sh, i : i + sw * (ow - 1) + 1 : sw]
            for j in range(kh)
            for i in range(kw)
        ]
        return xp.reshape(xp.stack(windows, axis=2), (n, c, kh, kw, oh, ow))

    def col2im(self, col: Any, img_shape: tuple, k: tuple, s: tuple, p: tuple) -> Any:
        """Fold patches into an image, the adjoint of :meth:`im2col`; overlaps add up.

        Each kernel offset's patches are spread with zeros by reshaping, padded into place
        and summed.

        Args:
            col: The patches (N, C, KH, KW, OH, OW).
            img_shape: The image shape (N, C, H, W).
            k: The kernel size, an ``(h, w)`` pair of ints.
            s: The stride, a pair.
            p: The padding, a pair.

        Returns:
            A new array of ``img_shape``.
        """
        xp = self.backend.xp
        _, _, h, w = img_shape
        (kh, kw), (sh, sw), (ph, pw) = k, s, p
        oh, ow = col.shape[4], col.shape[5]
        full_h, full_w = h + 2 * ph + sh - 1, w + 2 * pw + sw - 1
        img = None
        for j in range(kh):
            for i in range(kw):
                part = _spread(xp, _spread(xp, col[:, :, j, i, :, :], 2, sh), 3, sw)
                part = self.pad(
                    part,
                    ((0, 0), (0, 0), (j, full_h - j - oh * sh), (i, full_w - i - ow * sw)),
                    0.0,
                )
                img = part if img is None else img + part
        return img[:, :, ph : h + ph, pw : w + pw]

    def softmax(self, x: Any, axis: int) -> Any:
        """Return ``exp(x) / sum(exp(x), axis)`` without overflow.

        The maximum along ``axis`` is subtracted first (four array calls; a GPU backend does
        it in one launch).

        Args:
            x: A floating-point array with at least one element along ``axis``.
            axis: A non-negative axis of ``x``.

        Returns:
            A new array of ``x``'s shape and dtype.
        """
        xp = self.backend.xp
        y = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
        return y / self.backend.sum(y, (axis,), True)  # float16 adds in float32

    def cross_entropy_rows(self, x: Any, t: Any) -> Any:
        """Return each row's cross-entropy, ``logsumexp(x[i]) - x[i, t[i]]``.

        Log-sum-exp after subtracting each row's maximum, less the labels' shifted entries
        (nine array calls; a GPU backend does it in one launch).

        Args:
            x: Floating-point scores, shape (N, C) with C >= 1.
            t: Integer labels, shape (N,), each in ``0..C - 1``.

        Returns:
            A new array of shape (N,) and ``x``'s dtype.
        """
        xp = self.backend.xp
        z = x - xp.max(x, axis=1, keepdims=True)
        rows = self.row_index(x)
        t = labels_as(self.backend, t, rows.dtype)
        # the label's entry picked from the shifted scores: m + log(sum) rounded the log
        # into a large m (a row of 1e30 lost its log(C))
        return xp.log(self.backend.sum(xp.exp(z), (1,), True))[:, 0] - z[rows, t]

    def cross_entropy_rows_kept(self, x: Any, t: Any) -> tuple[Any, Any]:
        """Return ``cross_entropy_rows(x, t)`` and what of its work the gradient can reuse.

        A backend whose rows compute the softmax's numerator and denominator on the way
        (numpy) returns them, so that :meth:`cross_entropy_grad` given them does not compute
        them again; one that fuses each into one launch (CuPy) keeps nothing. This one keeps
        nothing.

        Args:
            x: Floating-point scores, shape (N, C) with C >= 1.
            t: Integer labels, shape (N,), each in ``0..C - 1``.

        Returns:
            ``(rows, kept)``: the rows as :meth:`cross_entropy_rows` returns them, and an
            object only this backend's :meth:`cross_entropy_grad` reads, or None.
        """
        return self.cross_entropy_rows(x, t), None

    def cross_entropy_grad(self, x: Any, t: Any, scale: Any, kept: Any = None) -> Any:
        """Return ``(softmax(x) - onehot(t)) * scale``, the gradient of the scaled row sum.

        That is the scores' gradient of ``scale * sum(cross_entropy_rows(x, t))``.

        Args:
            x: Floating-point scores, shape (N, C) with C >= 1.
            t: Integer labels, shape (N,), each in ``0..C - 1``.
            scale: A 0-d array of ``x``'s dtype (the loss's gradient over N for a mean).
            kept: What :meth:`cross_entropy_rows_kept` kept of ``x``'s rows, or None; a
                backend that keeps something may write its result over it, so pass it once.

        Returns:
            A new array of ``x``'s shape and dtype.
        """
        xp = self.backend.xp
        p = self.softmax(x, 1)
        classes = xp.arange(x.shape[1], device=getattr(x, "device", None))  # numpy 1.26: none
        t = labels_as(self.backend, t, classes.dtype)
        hot = self.backend.astype(classes == xp.reshape(t, (-1, 1)), p.dtype)
        return (p - hot) * scale

    def relu_grad(self, y: Any, gy: Any) -> Any:
        """Return ``gy`` where ``y > 0``, else 0 (ReLU's gradient from its output ``y``).

        Args:
            y: ReLU's output.
            gy: The output's gradient, of ``y``'s shape.

        Returns:
            A new array of ``gy``'s dtype.
        """
        mask = self.backend.astype(y > 0, gy.dtype)
        mask *= gy  # the fresh mask becomes the gradient (no third array)
        return mask

    def sigmoid(self, x: Any) -> Any:
        """Return ``1 / (1 + exp(-x))``, the logistic sigmoid, accurate in both tails.

        Where ``exp(-x)`` overflows the result is its limit, 0. (``tanh(x/2)/2 + 1/2`` cost
        as many calls but rounded every value below 2**-25 to 0: float32's sigmoid(-18) was
        0, float16's sigmoid(-5) 1.5% off.)

        Args:
            x: A floating-point array.

        Returns:
            A new array of ``x``'s shape and dtype (four array calls).
        """
        y = 1 / (1 + self.backend.xp.exp(-x))
        # numpy 1.x computes 1 + a 0-d result in float64 (value-based casting): cast back
        return y if y.dtype == x.dtype else self.backend.astype(y, x.dtype)

    def sigmoid_grad(self, y: Any, gy: Any) -> Any:
        """Return ``gy * y * (1 - y)`` (the sigmoid's gradient from its output ``y``).

        Args:
            y: The sigmoid's output.
            gy: The output's gradient, of ``y``'s shape and dtype.

        Returns:
            A new array.
        """
        return gy * y * (1 - y)

    def row_index(self, x: Any) -> Any:
        """Return ``0 .. N - 1`` for the rows of ``x`` (N, ...), an integer array on its device.

        The loss kernels pick each row's label entry with it; a backend may hand out one
        read-only array per N instead of making one each time.
        """
        return self.backend.xp.arange(x.shape[0], device=getattr(x, "device", None))


def labels_as(backend: Backend, t: Any, dtype: Any) -> Any:
    """Integer labels ``t`` in ``dtype``, an index's (``t`` itself when already of it).

    Labels meet class and row numbers (aranges) in comparisons and indexing, where PyTorch
    pairs no int64 with uint16 .. uint64, reads uint8 as a mask and indexes by no int8 or
    int16: so they take the other side's dtype.
    """
    return t if t.dtype == dtype else backend.astype(t, dtype)


def _spread(xp: Any, a: Any, axis: int, step: int) -> Any:
    """Put ``step - 1`` zeros after each element of ``a`` along ``axis`` (a is 4-D)."""
    if step == 1:
        return a
    a = xp.expand_dims(a, axis=axis + 1)
    zeros_shape = a.shape[: axis + 1] + (step - 1,) + a.shape[axis + 2 :]
    a = xp.concat([a, xp.zeros(zeros_shape, dtype=a.dtype, device=a.device)], axis=axis + 1)
    shape = a.shape[:axis] + (a.shape[axis] * step,) + a.shape[axis + 2 :]
    return xp.reshape(a, shape)
