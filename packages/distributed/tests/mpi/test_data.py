"""scatter_dataset and distributed evaluation on every rank."""

from __future__ import annotations

import numpy as np
import pytest

from zerograd_distributed import DatasetShard, evaluate, mean_over_ranks, scatter_dataset
from zerograd_nn import DataLoader


@pytest.mark.parametrize("n", [12, 13, 3 * 5 + 2])
def test_shards_are_disjoint_equal_and_cover_everything(comm, n):
    shard = scatter_dataset(np.arange(n) * 10, comm, seed=3)
    assert isinstance(shard, DatasetShard)
    lengths = comm.allgather_obj(len(shard))
    assert lengths == [-(-n // comm.size)] * comm.size
    values = comm.allgather_obj([int(shard[i]) for i in range(len(shard))])
    flat = [v for vs in values for v in vs]
    assert sorted(set(flat)) == [10 * i for i in range(n)]  # every example somewhere
    assert len(flat) - len(set(flat)) == len(flat) - n  # only the padding repeats


def test_drop_last_shards_never_repeat(comm):
    n = 3 * comm.size + (1 if comm.size > 1 else 0)
    shard = scatter_dataset(list(range(n)), comm, seed=1, drop_last=True)
    values = comm.allgather_obj([shard[i] for i in range(len(shard))])
    flat = [v for vs in values for v in vs]
    assert len(flat) == len(set(flat)) == 3 * comm.size


def test_shared_seed_drawn_on_rank_0(comm):
    shard = scatter_dataset(list(range(20)), comm, seed=None)
    values = comm.allgather_obj([shard[i] for i in range(len(shard))])
    flat = [v for vs in values for v in vs]
    assert set(flat) == set(range(20))
    assert len(flat) == 20 + (-20) % comm.size  # only the padding repeats


def test_ranks_with_different_data_sets_raise_on_every_rank(comm):
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one rank cannot disagree with itself")
    with pytest.raises(ValueError, match=r"same data set, seed and options, got rank 0: 10 ex"):
        scatter_dataset(list(range(10 + comm.rank)), comm)
    with pytest.raises(ValueError, match=r"rank 1: 10 examples, seed 0, shuffle=True, drop_la"):
        scatter_dataset(list(range(10)), comm, shuffle=comm.rank == 1)


def test_too_few_examples(comm):
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one example is enough for one rank")
    with pytest.raises(ValueError, match=rf"1 examples cannot give each of {comm.size} ranks"):
        scatter_dataset([0], comm)


def test_a_dataloader_runs_over_a_shard(comm):
    from zerograd_nn.datasets import Spiral

    data = Spiral()
    shard = scatter_dataset(data, comm, seed=0)
    batches = list(DataLoader(shard, batch_size=32, shuffle=False))
    x, t = batches[0]
    want = [data[int(i)] for i in shard.indices[:32]]
    np.testing.assert_array_equal(x, np.stack([w[0] for w in want]))
    np.testing.assert_array_equal(t, np.array([w[1] for w in want]))


@pytest.mark.parametrize("pad", [True, False])
def test_evaluate_gives_the_mean_over_every_example(comm, pad):
    x = np.arange(11, dtype=np.float64) ** 1.5  # 11: padded shards repeat some examples
    shard = scatter_dataset(x, comm, shuffle=False, pad=pad)
    mine = np.array([shard[i] for i in range(len(shard))])
    batches = [(mine[i : i + 3],) for i in range(0, len(mine), 3)]  # uneven batches
    out = evaluate(comm, lambda xb: {"mean": xb.mean(), "sq": (xb**2).mean()}, batches)
    every = np.concatenate(comm.allgather_obj(mine))  # independent: all examples at once
    assert out == pytest.approx({"mean": every.mean(), "sq": (every**2).mean()})
    assert comm.allgather_obj(out) == [out] * comm.size
    if not pad:  # each example exactly once: the data set's own mean
        assert out["mean"] == pytest.approx(x.mean())


def test_mean_over_ranks_weights_and_names(comm):
    out = mean_over_ranks(comm, {"acc": comm.rank}, weight=comm.rank + 1)
    w = np.arange(1, comm.size + 1)
    assert out["acc"] == pytest.approx((np.arange(comm.size) * w).sum() / w.sum())
    if comm.size > 1:
        with pytest.raises(ValueError, match=r"same names, got rank 0: \['a'\]; rank 1: \['b'\]"):
            mean_over_ranks(comm, {"a": 1.0} if comm.rank == 0 else {"b": 1.0})
    with pytest.raises(ValueError, match=r"weights of all ranks sum to 0"):
        mean_over_ranks(comm, {"a": 1.0}, weight=0)


@pytest.mark.parametrize(
    "bad, said",
    [
        (-1, r"weight must be a finite number >= 0, got -1"),
        (float("nan"), r"weight must be a finite number >= 0, got nan"),
        (float("inf"), r"weight must be a finite number >= 0, got inf"),
        ("3", r"weight must be a real number, got '3' \(str\)"),
    ],
)
def test_a_bad_weight_on_one_rank_raises_on_every_rank(comm, bad, said):
    """A negative weight was taken: a wrong mean in silence, or, beside another rank's 1,
    "the weights sum to 0"; nan gave nan; a string on one rank raised there alone
    (TypeError: can't multiply sequence), leaving the others waiting."""
    last = comm.size - 1
    with pytest.raises(
        ValueError, match=rf"mean_over_ranks: rank {last}: {said}\. Nothing was averaged"
    ):
        mean_over_ranks(comm, {"a": 1.0}, weight=bad if comm.rank == last else 1)
    assert comm.allreduce_obj(1) == comm.size  # every rank is still in step


def test_mean_over_ranks_gives_python_floats(comm):
    out = mean_over_ranks(comm, {"a": np.float32(0.1)}, weight=np.float32(3))
    assert type(out["a"]) is float and out["a"] == float(np.float32(0.1))
