"""Batching rules of :mod:`zerograd_nn.functional.pooling`: the batch joins the images."""

from __future__ import annotations

from typing import Any

from zerograd.backends import get_array_module
from zerograd.func import Batch, batching_rule

from ..functional.pooling import (
    AveragePooling,
    Pooling,
    Pooling2DGrad,
    Pooling2DWithIndexes,
    WinnerPicks,
)


@batching_rule(Pooling, AveragePooling)
def pooling(fn: Any, batch: Batch) -> Any:
    """Each sample's images pooled: the batch's samples pooled as one batch of images."""
    if batch.ndim(0) != 4:
        return NotImplemented  # per sample, the function names the wrong shape
    return batch.split(fn(batch.merged(0)))


def _repeated(pool: Pooling, n: int) -> Pooling:
    """A Pooling of ``pool``'s settings that recorded ``pool``'s winners for ``n`` samples."""
    shape, geometry, winner = pool.ctx
    xp = get_array_module(winner)
    one = xp.reshape(winner, (1, *winner.shape))
    many = xp.broadcast_to(one, (n, *winner.shape))
    repeated = Pooling(pool.kernel_size, pool.stride, pool.pad)
    repeated.ctx = (
        (n * shape[0], *shape[1:]),
        geometry,
        xp.reshape(many, (n * winner.shape[0], *winner.shape[1:])),
    )
    return repeated


@batching_rule(Pooling2DGrad, Pooling2DWithIndexes)
def by_winners(fn: Any, batch: Batch) -> Any:
    """Max pooling's derivatives on a batch of gradients or tangents, for one forward's winners.

    ``jacrev``, ``jacfwd`` and ``hessian`` of a pooling run them on the whole basis at once:
    each sample is one more batch of images with the same winners, so the batch is merged
    into one of ``n`` times the images and the winners repeated ``n`` times.
    """
    ctx = fn.pool.ctx
    if ctx is None or not batch.batched[0]:
        return NotImplemented
    shape, _, winner = ctx
    sample = tuple(winner.shape) if isinstance(fn, Pooling2DGrad) else tuple(shape)
    if batch.shape(0) != sample:
        return NotImplemented  # the winners are not one sample's (a pooling run in vmap)
    return batch.split(type(fn)(_repeated(fn.pool, batch.n))(batch.merged(0)))


@batching_rule(WinnerPicks)
def winner_picks(fn: Any, batch: Batch) -> Any:
    """Each sample's picks: the function takes any leading axes, the batch's among them."""
    return fn(batch.xs[0])
