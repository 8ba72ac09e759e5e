"""CUDA kernels for softmax and cross-entropy over the rows of a (N, C) array.

The generic code takes four array calls for a softmax (max, exp, sum, divide) and seven
for the cross-entropy's per-row values; on a GPU each call is a kernel launch and tens of
microseconds of Python, which is most of a classifier's loss at small C. These do each in
one launch. A row's maximum follows numpy's (a NaN in the row makes it NaN), so a row
with NaN or infinite scores gives NaN where the generic code does.

The softmax kernel runs one thread per element, each reading its whole row (cheap for
the few classes of a classifier); :data:`SOFTMAX_MAX_CLASSES` bounds where it is used. The
cross-entropy kernel runs one thread per row. CuPy is imported on first use only.

Examples:
    >>> SOFTMAX_MAX_CLASSES
    128
"""

from __future__ import annotations

import importlib
from typing import Any

from .compiled import elementwise

SOFTMAX_MAX_CLASSES = 128
"""Rows longer than this go to the generic softmax (each thread would read too much)."""

CROSS_ENTROPY_MAX_CLASSES = 4096
"""Rows longer than this go to the generic cross-entropy (one thread would loop too long)."""

_ROW_MAX = """
    T m = x[base];
    for (ptrdiff_t j = 1; j < c; ++j) {
        const T v = x[base + j];
        if (v > m || v != v) m = v;  // a NaN stays: numpy's max propagates it
        if (m != m) break;
    }
    T s = 0;
    for (ptrdiff_t j = 0; j < c; ++j) s += exp(x[base + j] - m);
"""

_SOFTMAX_BODY = (
    "    const ptrdiff_t base = i / c * c;\n" + _ROW_MAX + "    y = exp(x[i] - m) / s;\n"
)

_CROSS_ENTROPY_BODY = (
    "    const ptrdiff_t base = i * c;\n"
    + _ROW_MAX
    + "    const ptrdiff_t label = t[i];\n"
    # a label out of range gives NaN rather than a read outside the row (nn checks first)
    + "    y = 0 <= label && label < c ? log(s) - (x[base + label] - m) : sqrt((T)-1);  // NaN\n"
)

_CROSS_ENTROPY_GRAD_BODY = (
    "    const ptrdiff_t base = i / c * c;\n"
    + _ROW_MAX
    + "    const ptrdiff_t label = t[i / c];\n"
    # (softmax - onehot) * scale, in the generic kernel's order of operations
    + "    g = (exp(x[i] - m) / s - (T)(i - base == label)) * scale;\n"
)

_RELU_GRAD_BODY = (
    "    gx = gy * (T)(y > 0);  // 0 * gy keeps the sign of a zero, as astype then *\n"
)

_SIGMOID_GRAD_BODY = "    gx = gy * y * ((T)1 - y);\n"


_SOFTMAX = ("raw T x, int64 c", "T y", _SOFTMAX_BODY, "zerograd_softmax_rows")
_CROSS_ENTROPY = (
    "raw T x, raw I t, int64 c",
    "T y",
    _CROSS_ENTROPY_BODY,
    "zerograd_cross_entropy_rows",
)
_CROSS_ENTROPY_GRAD = (
    "raw T x, raw I t, int64 c, T scale",
    "T g",
    _CROSS_ENTROPY_GRAD_BODY,
    "zerograd_cross_entropy_grad",
)
_RELU_GRAD = ("T y, T gy", "T gx", _RELU_GRAD_BODY, "zerograd_relu_grad")
_SIGMOID_GRAD = ("T y, T gy", "T gx", _SIGMOID_GRAD_BODY, "zerograd_sigmoid_grad")


def softmax_rows_gpu(x: Any) -> Any:
    """Softmax of each row of a C-contiguous floating-point CuPy array (N, C), C >= 1.

    Args:
        x: a CuPy array of shape ``(N, C)``, float32 or float64.

    Returns:
        A new array of ``x``'s shape and dtype.
    """
    cp = importlib.import_module("cupy")
    y = cp.empty(x.shape, dtype=x.dtype)
    if y.size:
        elementwise(*_SOFTMAX)(cp.ascontiguousarray(x), x.shape[1], y)
    return y


def cross_entropy_rows_gpu(x: Any, t: Any) -> Any:
    """``logsumexp(x[i]) - x[i, t[i]]`` for each row of a CuPy array (N, C), C >= 1.

    Args:
        x: a CuPy array of shape ``(N, C)``, float32 or float64.
        t: integer CuPy labels of shape ``(N,)``, each in ``0..C - 1``.

    Returns:
        A new array of shape ``(N,)`` and ``x``'s dtype; NaN in a row whose label is out
        of range (nothing outside the row is read; zerograd-nn refuses such labels first).
    """
    cp = importlib.import_module("cupy")
    y = cp.empty((x.shape[0],), dtype=x.dtype)
    if y.size:
        elementwise(*_CROSS_ENTROPY)(
            cp.ascontiguousarray(x), cp.ascontiguousarray(t), x.shape[1], y
        )
    return y


def cross_entropy_grad_gpu(x: Any, t: Any, scale: Any) -> Any:
    """``(softmax(x) - onehot(t)) * scale`` for a CuPy array (N, C), C >= 1, in one launch.

    Args:
        x: a CuPy array of shape ``(N, C)``, float32 or float64.
        t: integer CuPy labels of shape ``(N,)``, each in ``0..C - 1``.
        scale: a 0-d CuPy array of ``x``'s dtype.

    Returns:
        A new array of ``x``'s shape and dtype (a label out of range subtracts nothing).
    """
    cp = importlib.import_module("cupy")
    g = cp.empty(x.shape, dtype=x.dtype)
    if g.size:
        elementwise(*_CROSS_ENTROPY_GRAD)(
            cp.ascontiguousarray(x), cp.ascontiguousarray(t), x.shape[1], scale, g
        )
    return g


def relu_grad_gpu(y: Any, gy: Any) -> Any:
    """``gy`` where ``y > 0``, else 0, for CuPy arrays of one shape and dtype, in one launch."""
    return elementwise(*_RELU_GRAD)(y, gy)


def sigmoid_grad_gpu(y: Any, gy: Any) -> Any:
    """``gy * y * (1 - y)`` for CuPy arrays of one shape and dtype, in one launch."""
    return elementwise(*_SIGMOID_GRAD)(y, gy)
