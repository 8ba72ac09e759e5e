"""Batching rules of :mod:`zerograd.functions.linalg`: the matrix product."""

from __future__ import annotations

from typing import Any

from ...functions.linalg import MatMul, matmul_shape_error
from .registry import Batch, batching_rule, reshape


def _as_matrix(batch: Batch, i: int, ndim: int, vector_axis: int) -> Any:
    """Input ``i`` with samples of at least 2 axes, batched ones aligned to ``ndim`` axes.

    A 1-d sample becomes a row (``vector_axis=0``) or a column (``vector_axis=1``), as
    numpy's matmul treats it.
    """
    x, batched = batch.xs[i], batch.batched[i]
    lead = (x.shape[0],) if batched else ()
    sample = tuple(x.shape[1:]) if batched else tuple(x.shape)
    if len(sample) == 1:
        sample = (1, sample[0]) if vector_axis == 0 else (sample[0], 1)
    if batched:
        sample = (1,) * (ndim - len(sample)) + sample
    new = lead + sample
    return x if tuple(x.shape) == new else reshape(x, new)


@batching_rule(MatMul)
def matmul(fn: Any, batch: Batch) -> Any:
    """``a @ b`` per sample: 1-d samples made matrices, sample batch axes aligned, then undone."""
    na, nb = batch.ndim(0), batch.ndim(1)
    if na == 0 or nb == 0:
        return NotImplemented  # per sample, matmul names the 0-d input
    error = matmul_shape_error(batch.shape(0), batch.shape(1))
    if error is not None:  # named by one sample's shapes, not the whole batch's
        raise error
    ndim = max(na, nb, 2)
    y = fn(_as_matrix(batch, 0, ndim, 0), _as_matrix(batch, 1, ndim, 1))
    if na == 1:  # drop the row axis a 1-d left operand got
        y = reshape(y, (*y.shape[:-2], y.shape[-1]))
    if nb == 1:  # and the column axis of a 1-d right operand
        y = reshape(y, tuple(y.shape[:-1]))
    return y
