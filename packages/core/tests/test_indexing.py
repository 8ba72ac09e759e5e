"""get_item's gradient goes where its forward read, whatever happens to the index after."""

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Variable


def _x():
    return Variable(np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize(
    "make, write",
    [
        # an index array rewritten in place (a reused id buffer)
        (lambda: np.array([0, 0, 1]), lambda i: i.__setitem__(slice(None), 1)),
        # a list grown and rewritten
        (lambda: [0, 0, 1], lambda i: (i.append(1), i.__setitem__(0, 1))),
        # an index Variable whose data is written into
        (lambda: Variable(np.array([0, 0, 1])), lambda i: i.data.__setitem__(0, 1)),
        # a tuple's array and nested list
        (lambda: (np.array([0, 0, 1]), [[0, 0, 0]]), lambda i: i[0].fill(1)),
        (lambda: (np.array([0, 0, 1]), [[0, 0, 0]]), lambda i: i[1][0].__setitem__(0, 2)),
    ],
    ids=["array", "list", "variable", "tuple array", "tuple nested list"],
)
def test_writing_into_the_index_after_the_forward_leaves_the_gradient(make, write):
    x = _x()
    index = make()
    y = x[index]
    before = y.data.copy()
    write(index)
    gy = np.arange(1.0, 1.0 + y.size).reshape(y.shape)
    F.sum(y * gy).backward()
    # by hand: each picked element's gy added at the position the forward read
    expected = np.zeros((2, 3))
    if isinstance(make(), tuple):
        # rows [0, 0, 1], columns [[0, 0, 0]]: (0, 0) twice, (1, 0) once
        expected[0, 0] = gy[0, 0] + gy[0, 1]
        expected[1, 0] = gy[0, 2]
    else:
        # rows [0, 0, 1]: row 0 gets gy's rows 0 and 1, row 1 gets row 2
        expected[0] = gy[0] + gy[1]
        expected[1] = gy[2]
    np.testing.assert_array_equal(y.data, before)
    np.testing.assert_array_equal(x.grad.data, expected)


def test_second_order_reads_the_index_as_the_forward_did():
    x = _x()
    index = np.array([1, 1])
    y = x[index]
    index[:] = 0
    F.sum(y * y).backward(create_graph=True)
    gx = x.grad
    np.testing.assert_array_equal(gx.data, [[0, 0, 0], [12, 16, 20]])  # 2 * 2 * x[1]
    x.cleargrad()
    F.sum(gx * np.arange(6.0).reshape(2, 3)).backward()
    np.testing.assert_array_equal(x.grad.data, [[0, 0, 0], [12, 16, 20]])  # 2 * 2 * w[1]


@pytest.mark.parametrize(
    "index, text",
    [
        ([[0, 1], [1]], r"get_item: index \[\[0, 1\], \[1\]\] on shape \(2, 3\): .*inhomogeneous"),
        (slice(None, None, 0), r"get_item: index slice\(None, None, 0\) on shape \(2, 3\): .*zero"),
    ],
    ids=["ragged list", "step 0"],
)
def test_a_malformed_index_is_one_value_error_naming_get_item_and_nothing_changes(index, text):
    x = _x()
    x.grad = Variable(np.ones((2, 3)))
    with pytest.raises(ValueError, match=text):
        x[index]
    np.testing.assert_array_equal(x.data, np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(x.grad.data, np.ones((2, 3)))
    assert x.creator is None


def test_basic_indexing_reshape_and_transpose_share_memory_as_numpys_do():
    # a view, as numpy's and PyTorch's: writing into y.data writes into x.data
    x = _x()
    y = x[0]
    y.data[0] = 100.0
    assert x.data[0, 0] == 100.0
    assert np.shares_memory(F.reshape(x, (3, 2)).data, x.data)
    assert np.shares_memory(F.transpose(x).data, x.data)
    # an integer-array index copies, as numpy's
    assert not np.shares_memory(x[[0, 1]].data, x.data)


def test_an_array_the_graph_keeps_changed_in_place_changes_the_gradient_unnoticed():
    # DeZero's model, and zerograd's: no version counters (PyTorch raises instead). tanh's
    # derivative reads its output: zeroing y.data before backward makes it 1 - 0**2 = 1
    x = Variable(np.array([0.5, 1.0]))
    y = F.tanh(x)
    y.data[...] = 0.0
    F.sum(y).backward()
    np.testing.assert_array_equal(x.grad.data, [1.0, 1.0])
