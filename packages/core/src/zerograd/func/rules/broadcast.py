"""Batching rules of :mod:`zerograd.functions.broadcast`: shapes with the batch axis in front."""

from __future__ import annotations

from typing import Any

from ... import functions as F
from ...functions.broadcast import BroadcastTo, SumTo
from .registry import Batch, batching_rule


@batching_rule(BroadcastTo)
def broadcast_to(fn: Any, batch: Batch) -> Any:
    """Broadcast each sample to ``fn.shape``: the batch axis leads the target shape."""
    shape = tuple(fn.shape)
    x = batch.aligned(0, len(shape))
    return BroadcastTo((batch.n, *shape))(x)


@batching_rule(SumTo)
def sum_to(fn: Any, batch: Batch) -> Any:
    """Sum each sample down to ``fn.shape``: its extra leading axes first, then the rest."""
    shape = tuple(fn.shape)
    x = batch.xs[0]
    extra = batch.ndim(0) - len(shape)
    if extra > 0:
        x = F.sum(x, axis=tuple(range(1, 1 + extra)))
    return SumTo((batch.n, *shape))(x)
