"""Batching rules of :mod:`zerograd.functions.arithmetic`: elementwise with broadcasting."""

from __future__ import annotations

from typing import Any

from ...functions.arithmetic import Add, Div, Mul, Neg, Pow, PowVar, Sub
from .registry import Batch, batching_rule


@batching_rule(Add, Sub, Mul, Div, PowVar)
def broadcasting(fn: Any, batch: Batch) -> Any:
    """The same function on the whole batch, batched inputs aligned on their sample axes.

    Broadcasting aligns shapes from the right: a batched input whose samples have fewer
    axes than the result gets axes of length 1 after its batch axis, so its batch axis
    meets the other batched input's; unbatched inputs broadcast as they would per sample.
    """
    ndim = max(batch.ndim(i) for i in range(len(batch.xs)))
    return fn(*[batch.aligned(i, ndim) for i in range(len(batch.xs))])


@batching_rule(Neg, Pow)
def elementwise(fn: Any, batch: Batch) -> Any:
    """The same function on the whole batch: each element's result depends on it alone."""
    return fn(*batch.xs)
