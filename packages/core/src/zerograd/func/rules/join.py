"""Batching rules of :mod:`zerograd.functions.join`: concatenate and stack, the batch first."""

from __future__ import annotations

import operator
from typing import Any

from ...functions.join import Concatenate, Stack
from .registry import Batch, batching_rule


def _axis(op: str, axis: Any, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{op}: axis {axis} is out of range for {ndim}-dimensional results")
    return axis % ndim


@batching_rule(Concatenate)
def concatenate(fn: Any, batch: Batch) -> Any:
    """Each sample's inputs joined along ``fn.axis``; unbatched inputs repeated per sample."""
    axis = _axis("concatenate", fn.axis, batch.ndim(0))
    return Concatenate(axis + 1)(*[batch.expanded(i) for i in range(len(batch.xs))])


@batching_rule(Stack)
def stack(fn: Any, batch: Batch) -> Any:
    """Each sample's inputs stacked along a new ``fn.axis``; unbatched inputs repeated."""
    axis = _axis("stack", fn.axis, batch.ndim(0) + 1)
    return Stack(axis + 1)(*[batch.expanded(i) for i in range(len(batch.xs))])
