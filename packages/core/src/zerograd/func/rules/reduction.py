"""Batching rules of :mod:`zerograd.functions.reduction`: the sample axes, one further on."""

from __future__ import annotations

from typing import Any

from ...checks import normalize_axis
from ...functions.reduction import DivideByCount, Max, Mean, Min, Sum
from .arithmetic import elementwise
from .registry import Batch, batching_rule

batching_rule(DivideByCount)(elementwise)


def sample_axes(axis: Any, ndim: int, op: str) -> tuple[int, ...]:
    """The axes of the batch array that ``axis`` names in one sample of ``ndim`` axes.

    None (every axis of a sample) becomes all but the batch axis; negative axes count from
    a sample's end. A bad axis is refused as the function itself refuses it.
    """
    axes = normalize_axis(axis, ndim, op)
    if axes is None:
        axes = tuple(range(ndim))
    return tuple(a + 1 for a in axes)


@batching_rule(Sum, Mean, Max, Min)
def reduction(fn: Any, batch: Batch) -> Any:
    """The same reduction over the sample axes it names (never over the batch axis)."""
    op = {Sum: "sum", Mean: "mean", Max: "max", Min: "min"}[type(fn)]
    axes = sample_axes(fn.axis, batch.ndim(0), op)
    return type(fn)(axes, fn.keepdims)(batch.xs[0])
