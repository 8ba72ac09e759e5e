"""Batching rules of :mod:`zerograd_nn.functional.loss`: each sample's own mean loss."""

from __future__ import annotations

from typing import Any

import zerograd.functions as F
from zerograd import Constant
from zerograd.backends import backend_of, device_of, sum_dtype_of
from zerograd.func import Batch, batching_rule
from zerograd.utils import data_of

from ..functional.activation import LogSoftmax
from ..functional.loss import Accuracy, MeanSquaredError, SoftmaxCrossEntropy


class _Described:
    """An array described by its shape and dtype (what a Function's ``check`` may read)."""

    def __init__(self, shape: tuple, dtype: Any) -> None:
        self.shape, self.dtype, self.ndim = shape, dtype, len(shape)


@batching_rule(MeanSquaredError)
def mean_squared_error(fn: Any, batch: Batch) -> Any:
    """``sum((x0 - x1) ** 2) / len(x0)`` per sample, from the differences of the batch."""
    ndim = max(batch.ndim(0), batch.ndim(1))
    diff = batch.aligned(0, ndim) - batch.aligned(1, ndim)
    shape = tuple(diff.shape[1:]) if diff.shape[0] == batch.n and ndim < diff.ndim else None
    if shape is None or not shape:
        return NotImplemented  # per sample, the function names the shapes
    if sum_dtype_of(diff) is None:
        return F.sum(diff * diff, axis=tuple(range(1, diff.ndim))) / shape[0]
    # float16: the mean over each sample's batch adds and divides in float32 (as the
    # function does), where the sum and a batch past 65,504 are inf in float16
    return F.sum(F.mean(diff * diff, axis=1), axis=tuple(range(1, diff.ndim - 1)))


@batching_rule(SoftmaxCrossEntropy)
def softmax_cross_entropy(fn: Any, batch: Batch) -> Any:
    """Each sample's mean of ``-log softmax(x)[t]`` over its rows; its labels checked.

    Computed as log-softmax and picking the labels' entries (exact for any size of the
    scores, as the fused function is); the labels' range is checked as the function
    checks it.
    """
    n = batch.n
    x = batch.expanded(0)  # (n, N, C)
    if x.ndim != 3:
        return NotImplemented
    big_n, classes = x.shape[1:]
    t = data_of(batch.expanded(1))  # (n, N) integer labels
    backend = backend_of(t)
    xp = backend.xp
    t = xp.reshape(t, (n, big_n))
    fn.check(_Described((n * big_n, classes), x.dtype), xp.reshape(t, (n * big_n,)))
    logp = LogSoftmax(2)(x)
    dev = device_of(t)
    rows = xp.reshape(xp.arange(n, device=dev), (n, 1))
    cols = xp.reshape(xp.arange(big_n, device=dev), (1, big_n))
    picked = F.get_item(logp, (rows, cols, t))
    if sum_dtype_of(picked) is None:
        return F.sum(picked, axis=1) * (-1.0 / big_n)
    return -F.mean(picked, axis=1)  # float16: added and divided in float32


@batching_rule(Accuracy)
def accuracy(fn: Any, batch: Batch) -> Any:
    """Each sample's fraction of rows whose arg-max is the row's label; its labels checked.

    A metric with no gradient: computed on the arrays, the result a Constant.
    """
    n = batch.n
    y, t = data_of(batch.expanded(0)), data_of(batch.expanded(1))  # (n, N, C, ...), labels
    backend = backend_of(y)
    xp = backend.xp
    fn.check(_Described(tuple(y.shape[1:]), y.dtype), xp.reshape(t, (-1,)))  # one sample's
    hits = xp.reshape(xp.argmax(y, axis=2), (n, -1)) == xp.reshape(t, (n, -1))
    dtype = y.dtype if backend.dtype_kind(y.dtype) == "f" else "float64"
    return Constant(xp.mean(backend.astype(hits, dtype), axis=1))
