"""Batching rules of :mod:`zerograd_nn.functional.normalization`: what vmap refuses there."""

from __future__ import annotations

from typing import Any, NoReturn

from zerograd.func import Batch, batching_rule

from ..functional.normalization import RunningStatistics, train_mode_in_vmap_error


@batching_rule(RunningStatistics, reads=("mean", "var"))
def running_statistics(fn: Any, batch: Batch) -> NoReturn:
    """Refuse train-mode batch norm on a batch inside vmap, before the statistics change."""
    raise train_mode_in_vmap_error(batch.n)
