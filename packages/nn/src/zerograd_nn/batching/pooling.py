"""Batching rules of :mod:`zerograd_nn.functional.pooling`: the batch joins the images."""

from __future__ import annotations

from typing import Any

from zerograd.func import Batch, batching_rule

from ..functional.pooling import AveragePooling, Pooling


@batching_rule(Pooling, AveragePooling)
def pooling(fn: Any, batch: Batch) -> Any:
    """Each sample's images pooled: the batch's samples pooled as one batch of images."""
    if batch.ndim(0) != 4:
        return NotImplemented  # per sample, the function names the wrong shape
    return batch.split(fn(batch.merged(0)))
