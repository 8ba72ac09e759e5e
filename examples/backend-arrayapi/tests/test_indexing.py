"""numpy-rule indexing and scatter_add (repeated indices add up) against numpy itself."""

from __future__ import annotations

import numpy as np
import pytest
import zerograd_arrayapi.namespace as xp
from zerograd_arrayapi.indexing import getitem, scatter_add

rng = np.random.default_rng(1)
INDICES = [
    ((6,), np.array([0, 1, 1, 5, 1, -1])),  # repeats, and -1 is 5 again
    ((5, 3), np.array([2, 2, 0, 2])),  # whole rows, repeated
    ((3, 4), (np.array([0, 2, 2]), np.array([1, 3, 3]))),  # repeated (row, col) pairs
    ((3, 4, 2), (slice(None), np.array([3, 3, 0]))),  # an array after a slice
    ((3, 4, 2), (np.array([1, 1]), slice(None), np.array([0, 0]))),  # arrays apart
    ((4, 3), (slice(1, 3),)),  # basic: no repeats possible
    ((4, 3), (slice(1, 99), 2)),  # out-of-range stop, clipped as numpy does
    ((4, 3), np.array([[0, 3], [3, 3]])),  # a 2-D index
    ((2, 3), np.array([[True, False, True], [False, False, True]])),  # a boolean mask
    ((2, 3), (None, 1)),  # a new axis
    ((2, 3, 4), (Ellipsis, np.array([1, 1]))),  # an ellipsis before an array
]


def _ids(case):
    return str(case[1]).replace("\n", "")


@pytest.mark.parametrize("shape, index", INDICES, ids=[_ids(c) for c in INDICES])
def test_getitem_is_numpys(shape, index):
    a = rng.standard_normal(shape)
    got = xp.to_numpy(getitem(xp.asarray(a), index))
    np.testing.assert_array_equal(got, a[index])


@pytest.mark.parametrize("shape, index", INDICES, ids=[_ids(c) for c in INDICES])
def test_scatter_add_is_numpys_add_at(shape, index):
    a = rng.standard_normal(shape)
    values = rng.standard_normal(a[index].shape)
    expected = a.copy()
    np.add.at(expected, index, values)
    arr = xp.asarray(a)
    out = scatter_add(arr, index, xp.asarray(values))
    np.testing.assert_allclose(xp.to_numpy(out), expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(xp.to_numpy(arr), a)  # a new array; the input is untouched


def test_scatter_add_repeated_index_many_times():
    # 1,000 additions into 3 slots: plain ``a[idx] += v`` would keep only one per slot
    idx = np.arange(1000) % 3
    values = np.ones(1000)
    out = scatter_add(xp.zeros(3), xp.asarray(idx), xp.asarray(values))
    assert xp.to_numpy(out).tolist() == [334.0, 333.0, 333.0]


def test_scatter_add_broadcasts_values_and_keeps_dtype():
    a = xp.zeros((3, 2), dtype=xp.float32)
    out = scatter_add(a, xp.asarray([1, 1]), 1.5)
    assert out.dtype == xp.float32
    assert xp.to_numpy(out).tolist() == [[0, 0], [3, 3], [0, 0]]


def test_scatter_add_in_chunks_matches(monkeypatch):
    import zerograd_arrayapi.indexing as ix

    monkeypatch.setattr(ix, "_CHUNK", 4)  # force many one-hot chunks
    idx = rng.integers(0, 5, size=37)
    values = rng.standard_normal((37, 2))
    expected = np.zeros((5, 2))
    np.add.at(expected, idx, values)
    out = ix.scatter_add(xp.zeros((5, 2)), xp.asarray(idx), xp.asarray(values))
    np.testing.assert_allclose(xp.to_numpy(out), expected, rtol=1e-12)


def test_bad_index_names_the_shape():
    with pytest.raises(IndexError, match=r"on shape \(3,\)"):
        scatter_add(xp.zeros(3), np.array([3]), xp.ones(1))
    with pytest.raises(TypeError, match="boolean arrays cannot be added"):
        scatter_add(xp.zeros(2, dtype=xp.bool), np.array([0]), xp.ones(1, dtype=xp.bool))
