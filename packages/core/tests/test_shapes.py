"""zerograd.shapes: which indices pick each element at most once; convolution output sizes."""

from __future__ import annotations

import numpy as np
import pytest

from zerograd.shapes import basic_index, conv_outsize_2d


@pytest.mark.parametrize(
    "index", [0, -1, slice(1, 3), (slice(None), 2), (Ellipsis, None, 0), (), (1, slice(0, 4, 2))]
)
def test_ints_slices_none_and_ellipsis_are_basic(index):
    assert basic_index(index)
    a = np.zeros((4, 5))
    a[index] += 1.0  # a basic index adds once per element it picks ...
    want = np.zeros((4, 5))
    np.add.at(want, index, 1.0)
    np.testing.assert_array_equal(a, want)  # ... exactly as add.at does


@pytest.mark.parametrize(
    "index",
    [
        [0, 0],
        np.array([1, 1]),
        (np.array([0, 0]), 1),
        (slice(None), [2, 2]),
        np.array([True, False, True, False]),
        np.int64(2),  # a numpy scalar is not an int: the careful path, which is also right
    ],
)
def test_arrays_lists_and_numpy_scalars_are_not(index):
    assert not basic_index(index)


def test_conv_outsize_2d_gives_each_axis_and_refuses_a_kernel_that_does_not_fit():
    assert conv_outsize_2d("conv2d", 7, 6, (3, 2), (2, 3), (1, 0)) == (4, 2)
    assert conv_outsize_2d("pooling", 4, 4, (2, 2), (2, 2), (0, 0)) == (2, 2)
    message = (
        r"^im2col: a kernel of \(5, 1\) with stride \(1, 1\) and pad \(0, 0\) does not fit an "
        r"input of height/width \(3, 3\); use a smaller kernel or more padding\.$"
    )
    with pytest.raises(ValueError, match=message):
        conv_outsize_2d("im2col", 3, 3, (5, 1), (1, 1), (0, 0))
