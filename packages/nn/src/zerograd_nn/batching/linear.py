"""Batching rules of :mod:`zerograd_nn.functional.linear`."""

from __future__ import annotations

import math
from typing import Any

import zerograd.functions as F
from zerograd.func import Batch, batching_rule
from zerograd.func.rules.registry import reshape

from ..functional.linear import Linear, linear_shape_error


@batching_rule(Linear)
def linear(fn: Any, batch: Batch) -> Any:
    """``x @ W + b`` per sample.

    With only ``x`` batched this is one Linear over every sample's rows (the fast path:
    one matrix product, the weight gradient summed as usual). With ``W`` or ``b`` batched
    (per-sample weights: what ``vmap(grad(...))`` differentiates) each sample's rows meet
    their own weights in a batched matrix product.
    """
    xs, ws = batch.shape(0), batch.shape(1)
    has_b = len(batch.xs) == 3
    error = linear_shape_error(xs, ws, batch.shape(2) if has_b else None)
    if error is not None:
        raise error
    if not batch.batched[1] and not (has_b and batch.batched[2]):
        return fn(*batch.xs)
    n, lead, (i, o) = batch.n, xs[:-1], ws
    x = reshape(batch.expanded(0), (n, math.prod(lead), i))
    y = F.matmul(x, batch.xs[1])  # (n, M, I) @ (I, O) or (n, I, O)
    if has_b:
        b = batch.xs[2]
        y = y + (F.reshape(b, (n, 1, o)) if batch.batched[2] else F.reshape(b, (o,)))
    return F.reshape(y, (n, *lead, o))
