"""zerograd.testing.calls: what the call counter counts, and what it leaves alone."""

import numpy as np

import zerograd as zg
from zerograd.testing.calls import CallCounter, CountedArray


def test_counts_ufuncs_functions_and_copying_methods_once_each():
    c = CallCounter()
    x = c.array(np.arange(6.0).reshape(2, 3))
    with c:
        y = x * 2.0  # multiply
        s = y.sum(axis=0)  # add.reduce
        m = np.max(y, axis=1)  # max (its reduce inside is not counted again)
        z = np.concatenate([y, y])  # concatenate
        w = y.astype(np.float32)  # astype
        g = y[np.array([0, 1]), np.array([2, 0])]  # a gather
    assert dict(c.calls) == {
        "multiply": 1,
        "add.reduce": 1,
        "max": 1,
        "concatenate": 1,
        "astype": 1,
        "getitem": 1,
    }
    np.testing.assert_array_equal(s, [3.0 * 2, 5.0 * 2, 7.0 * 2])
    np.testing.assert_array_equal(m, [4.0, 10.0])
    assert z.shape == (4, 3) and w.dtype == np.float32
    np.testing.assert_array_equal(g, [4.0, 6.0])
    assert all(type(a) is CountedArray for a in (y, s, m, z, w, g))


def test_views_and_slices_are_not_counted():
    c = CallCounter()
    x = c.array(np.arange(6.0))
    with c:
        v = np.reshape(x, (2, 3))
        t = v.T
        b = np.broadcast_to(x[:3], (2, 3))
        r = x[1:4]
    assert c.count == 0
    assert np.shares_memory(v, x) and np.shares_memory(t, x) and np.shares_memory(b, x)
    assert np.shares_memory(r, x)


def test_nothing_is_counted_outside_the_block_and_entering_resets():
    c = CallCounter()
    x = c.array(np.ones(3))
    x + x
    assert c.count == 0
    with c:
        x + x
    with c:
        x + x
        x * x
    assert c.count == 2


def test_results_are_the_values_numpy_gives_and_out_is_returned_as_given():
    c = CallCounter()
    a = np.linspace(-1.0, 1.0, 7)
    x = c.array(a)
    out = c.array(np.empty(7))
    with c:
        got = np.exp(x, out=out)
    assert got is out
    np.testing.assert_array_equal(out, np.exp(a))
    assert c.count == 1


def test_a_backward_pass_on_counted_arrays_is_counted_and_exact():
    c = CallCounter()
    a = np.array([0.5, -1.0, 2.0])
    x = zg.Variable(c.array(a))
    with c:
        y = zg.functions.sum(x * x)
        y.backward()
    np.testing.assert_array_equal(x.grad.data, 2 * a)
    assert type(x.grad.data) is CountedArray
    assert c.calls["multiply"] >= 1 and c.count >= 3
