"""shard_indices: the pure function behind scatter_dataset, for every size and length."""

from __future__ import annotations

import numpy as np
import pytest

from zerograd_distributed import shard_indices


@pytest.mark.parametrize("size", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("n", [7, 8, 30, 31])
def test_equal_lengths_cover_everything(size, n):
    shards = [shard_indices(n, size, r, seed=4) for r in range(size)]
    assert {len(s) for s in shards} == {-(-n // size)}
    flat = np.concatenate(shards)
    assert set(flat.tolist()) == set(range(n))
    assert len(flat) - n == (-n) % size  # the only repeats are the padding


@pytest.mark.parametrize("size", [2, 3, 4])
def test_drop_last_disjoint(size):
    flat = np.concatenate([shard_indices(31, size, r, drop_last=True) for r in range(size)])
    assert len(flat) == len(set(flat.tolist())) == 31 // size * size


def test_same_seed_same_order_other_seed_other_order():
    a = shard_indices(50, 2, 0, seed=1)
    np.testing.assert_array_equal(a, shard_indices(50, 2, 0, seed=1))
    assert not np.array_equal(a, shard_indices(50, 2, 0, seed=2))
    np.testing.assert_array_equal(a, np.random.default_rng(1).permutation(50)[:25])


def test_unshuffled_is_consecutive():
    assert shard_indices(5, 2, 0, shuffle=False).tolist() == [0, 1, 2]
    assert shard_indices(5, 2, 1, shuffle=False).tolist() == [3, 4, 0]


@pytest.mark.parametrize("size", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("n", [7, 8, 31])
def test_unpadded_shards_hold_each_example_once(size, n):
    shards = [shard_indices(n, size, r, seed=2, pad=False) for r in range(size)]
    assert [len(s) for s in shards] == [len(a) for a in np.array_split(np.arange(n), size)]
    flat = np.concatenate(shards)
    np.testing.assert_array_equal(flat, np.random.default_rng(2).permutation(n))
