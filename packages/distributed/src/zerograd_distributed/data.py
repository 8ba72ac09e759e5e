"""Data on many ranks: each rank a disjoint shard of the data set, metrics averaged over all.

Examples:
    >>> from zerograd_distributed import create_communicator
    >>> comm = create_communicator("mpi")
    >>> shard = scatter_dataset(list(range(10)), comm, seed=0)
    >>> len(shard)
    10
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from zerograd import Variable, no_grad, test_mode
from zerograd.checks import is_real

from .communicator import Communicator

__all__ = ["DatasetShard", "evaluate", "mean_over_ranks", "scatter_dataset", "shard_indices"]


def shard_indices(
    n: int,
    size: int,
    rank: int,
    *,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    pad: bool = True,
) -> np.ndarray:
    """Return the indices of rank ``rank``'s shard of ``n`` examples split over ``size`` ranks.

    The order is ``numpy.random.default_rng(seed).permutation(n)`` (or ``arange(n)``), cut
    into ``size`` consecutive, equally long shards. When ``size`` does not divide ``n``, the
    order is extended from its start so every shard has ``ceil(n / size)`` examples (a few
    appear twice), or cut to ``n // size`` each with ``drop_last``. With ``pad=False`` every
    example appears exactly once and the first ``n % size`` shards hold one more (for
    evaluation, where ranks need not run the same number of steps).

    Args:
        n: the data set's length.
        size: the number of ranks.
        rank: the shard wanted, ``0 <= rank < size``.
        shuffle: permute before cutting.
        seed: the permutation's seed (the same on every rank).
        drop_last: drop the remainder instead of repeating examples.
        pad: repeat examples to equalize the shards (ignored with ``drop_last``).

    Returns:
        An int64 array of indices into the data set.

    Examples:
        >>> shard_indices(5, 2, 1, shuffle=False)
        array([3, 4, 0])
    """
    order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
    if not pad and not drop_last:
        start = rank * (n // size) + min(rank, n % size)
        return order[start : start + n // size + (rank < n % size)].astype(np.int64)
    per = n // size if drop_last else -(-n // size)
    order = np.resize(order, per * size)  # repeats from the start when it grows
    return order[rank * per : (rank + 1) * per].astype(np.int64)


def _number(v: Any) -> float:
    """A Python float from a number, a 0-d array of any backend or a 0-d Variable."""
    return float(v.data if isinstance(v, Variable) else v)


class DatasetShard:
    """The examples ``indices`` of ``dataset``: sized and indexable like a Dataset.

    Args:
        dataset: the whole data set.
        indices: this shard's positions in it.

    Attributes:
        dataset: the whole data set.
        indices: this shard's positions in it.
    """

    def __init__(self, dataset: Any, indices: np.ndarray) -> None:
        self.dataset = dataset
        self.indices = indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[int(self.indices[index])]

    def __repr__(self) -> str:
        return f"<DatasetShard {len(self)} of {len(self.dataset)} examples>"


def scatter_dataset(
    dataset: Any,
    comm: Communicator,
    *,
    shuffle: bool = True,
    seed: int | None = 0,
    drop_last: bool = False,
    pad: bool = True,
) -> DatasetShard:
    """Return this rank's shard of ``dataset`` (see ``shard_indices``); call it on every rank.

    Every rank passes the same data set (each loads it itself); the shards are disjoint
    (up to the repeats that equalize their lengths) and equally long, so every rank runs the
    same number of steps. For evaluation pass ``pad=False``: each example exactly once.

    Args:
        dataset: anything with ``len()`` and integer indexing.
        comm: the communicator.
        shuffle: shuffle before sharding.
        seed: the shuffle's seed; None draws one on rank 0 and shares it.
        drop_last: drop the remainder instead of repeating examples.
        pad: repeat examples to equalize the shards; False for evaluation.

    Returns:
        A ``DatasetShard``.

    Raises:
        ValueError: on every rank, when the ranks' data sets differ in length or the seeds
            differ, or when there are fewer examples than ranks.
    """
    n = len(dataset)
    with comm.during("scatter_dataset()"):
        seen = comm.allgather_obj((n, seed, shuffle, drop_last, pad))
    if any(s != seen[0] for s in seen):
        listed = "; ".join(
            f"rank {r}: {s[0]} examples, seed {s[1]}, shuffle={s[2]}, drop_last={s[3]}, pad={s[4]}"
            for r, s in enumerate(seen)
        )
        raise ValueError(
            f"scatter_dataset: every rank must pass the same data set, seed and options, got "
            f"{listed}."
        )
    if n < comm.size:
        raise ValueError(
            f"scatter_dataset: {n} examples cannot give each of {comm.size} ranks a shard; "
            f"use a larger data set or fewer ranks."
        )
    if seed is None:
        with comm.during("scatter_dataset()"):
            seed = comm.bcast_obj(secrets.randbits(63) if comm.rank == 0 else None)
    idx = shard_indices(
        n, comm.size, comm.rank, shuffle=shuffle, seed=seed, drop_last=drop_last, pad=pad
    )
    return DatasetShard(dataset, idx)


def _weighted(values: Mapping[str, Any], weight: Any) -> tuple[dict, float, str | None]:
    """``({name: value * weight}, weight, None)``, or ``({}, 0.0, what is wrong)``."""
    if not is_real(weight):
        return {}, 0.0, f"weight must be a real number, got {weight!r} ({type(weight).__name__})"
    w = float(weight)
    if not 0 <= w < math.inf:  # a negative weight gives a wrong mean; nan and inf, nan
        return {}, 0.0, f"weight must be a finite number >= 0, got {weight!r}"
    try:
        return {k: _number(v) * w for k, v in values.items()}, w, None
    except (TypeError, ValueError) as e:
        return {}, 0.0, f"a value is not a number ({type(e).__name__}: {e})"


def mean_over_ranks(comm: Communicator, values: Mapping[str, Any], weight: float = 1) -> dict:
    """Average each named value over the ranks, weighted by ``weight``; call on every rank.

    Args:
        comm: the communicator.
        values: name -> number (or 0-d array / Variable); the same names on every rank.
        weight: this rank's weight, e.g. how many examples its values cover (a finite
            number >= 0).

    Returns:
        name -> float, the same on every rank.

    Raises:
        ValueError: on every rank, when the names differ, the weights sum to zero, or a
            rank's weight is not a finite number >= 0 or one of its values is no number.

    Examples:
        >>> from zerograd_distributed import create_communicator
        >>> mean_over_ranks(create_communicator("mpi"), {"loss": 0.5}, weight=10)
        {'loss': 0.5}
    """
    mine, weight, problem = _weighted(values, weight)
    with comm.during("mean_over_ranks()"):
        seen = comm.allgather_obj((mine, weight, problem))
    bad = [(r, s[2]) for r, s in enumerate(seen) if s[2]]
    if bad:  # every rank raises, so none is left waiting for the one that cannot send
        listed = "; ".join(f"rank {r}: {problem}" for r, problem in bad)
        raise ValueError(f"mean_over_ranks: {listed}. Nothing was averaged, on any rank.")
    names = [sorted(s[0]) for s in seen if s[1]]
    if any(ns != names[0] for ns in names):
        listed = "; ".join(f"rank {r}: {sorted(s[0])}" for r, s in enumerate(seen))
        raise ValueError(f"mean_over_ranks: every rank must pass the same names, got {listed}.")
    total = sum(s[1] for s in seen)
    if total == 0:
        raise ValueError("mean_over_ranks: the weights of all ranks sum to 0; nothing to average.")
    return {k: sum(s[0].get(k, 0.0) for s in seen) / total for k in (names[0] if names else ())}


def evaluate(
    comm: Communicator, fn: Callable[..., Mapping[str, Any]], batches: Iterable[Any]
) -> dict:
    """Run ``fn`` on this rank's batches and average its metrics over every rank's examples.

    Each ``fn(*batch)`` (``fn(batch)`` when a batch is not a tuple) returns name -> mean over
    the batch; means are weighted by batch length, so the result is the mean over all the
    ranks' examples (shard the data with ``scatter_dataset(..., pad=False)`` so that each
    example counts once). Runs under ``no_grad()`` and ``test_mode()``.

    Args:
        comm: the communicator.
        fn: computes the metrics of one batch, e.g. ``{"loss": ..., "accuracy": ...}``.
        batches: this rank's batches (a DataLoader over its shard).

    Returns:
        name -> float, the same on every rank.

    Examples:
        >>> import numpy as np
        >>> from zerograd_distributed import create_communicator
        >>> batches = [(np.zeros(2), np.ones(2)), (np.zeros(1), np.zeros(1))]
        >>> evaluate(create_communicator("mpi"), lambda x, t: {"mean_t": t.mean()}, batches)
        {'mean_t': 0.6666666666666666}
    """
    sums: dict = {}
    count = 0
    with no_grad(), test_mode():
        for batch in batches:
            out = fn(*batch) if isinstance(batch, tuple) else fn(batch)
            n = len(batch[0]) if isinstance(batch, tuple) else len(batch)
            for k, v in out.items():
                sums[k] = sums.get(k, 0.0) + _number(v) * n
            count += n
    means = {k: v / count for k, v in sums.items()} if count else {}
    return mean_over_ranks(comm, means, weight=count)
