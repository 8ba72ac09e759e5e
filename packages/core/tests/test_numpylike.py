"""NumpyLikeBackend: what numpy-compatible backends share, run on numpy through a minimal one."""

from __future__ import annotations

import numpy as np
import pytest

from zerograd.backends import get_backend
from zerograd.backends.numpylike import NumpyLikeBackend


class _Counting(NumpyLikeBackend):
    """numpy through the shared code, counting the calls of the step a backend may replace."""

    name = "numpylike-test"
    lib = np

    def __init__(self):
        self.add_at_calls = 0

    def owns(self, array_type):
        return False

    def load_module(self):
        return np

    def to_numpy(self, x):
        return x

    def add_at(self, out, indices, values):
        self.add_at_calls += 1
        super().add_at(out, indices, values)


def test_the_in_tree_numpy_backend_is_numpy_like():
    assert isinstance(get_backend("numpy"), NumpyLikeBackend)


def test_scatter_add_adds_basic_indices_at_once_and_repeats_through_add_at():
    b, a = _Counting(), np.arange(6.0).reshape(2, 3)
    got = b.scatter_add(a, (slice(None), 1), 10.0)
    np.testing.assert_array_equal(got, [[0.0, 11.0, 2.0], [3.0, 14.0, 5.0]])
    assert b.add_at_calls == 0
    got = b.scatter_add(a, np.array([1, 1, 0]), np.ones(3))
    np.testing.assert_array_equal(got, [[1.0, 2.0, 3.0], [5.0, 6.0, 7.0]])
    assert b.add_at_calls == 1
    np.testing.assert_array_equal(a, np.arange(6.0).reshape(2, 3))  # the input is unchanged


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "sqrt"])
def test_compute_into_writes_the_ufuncs_result_into_out(op):
    b = _Counting()
    x1, x2 = np.array([4.0, 9.0]), np.array([2.0, 3.0])
    want = getattr(np, op)(x1) if op == "sqrt" else getattr(np, op)(x1, x2)
    out = np.empty(2)
    b.compute_into(op, x1, None if op == "sqrt" else x2, out=out)
    np.testing.assert_array_equal(out, want)
    want = getattr(np, op)(x1) if op == "sqrt" else getattr(np, op)(x1, 2.0)
    b.compute_into(op, x1, None if op == "sqrt" else 2.0, out=x1)  # out may be an operand
    np.testing.assert_array_equal(x1, want)


def test_dtype_helpers_conversions_and_indexing_follow_numpy():
    b = _Counting()
    assert b.resolve_dtype("float32") == np.float32 and b.resolve_dtype(np.int64) == np.int64
    assert [b.dtype_kind(np.dtype(t)) for t in ("bool", "int8", "uint8", "float32")] == list("biuf")
    a = np.arange(3)
    assert b.asarray([1, 2], dtype="float32").dtype == np.float32
    c = b.astype(a, "float64")
    assert c.dtype == np.float64 and not np.shares_memory(a, c)
    np.testing.assert_array_equal(b.getitem(a, np.array([2, 2])), [2, 2])
    assert b.broadcast_to(a, (2, 3)).shape == (2, 3)
    assert b.from_numpy(a) is a


def test_into_function_is_the_ufunc_unless_a_subclass_writes_its_own_way():
    b = _Counting()
    assert b.into_function("multiply") is np.multiply  # returns out itself: no wrapper

    class Logged(_Counting):
        def compute_into(self, op, x1, x2=None, *, out):
            self.calls = getattr(self, "calls", []) + [op]
            super().compute_into(op, x1, x2, out=out)

    lb, out = Logged(), np.zeros(3)
    f = lb.into_function("add")
    assert f(np.ones(3), 2.0, out=out) is out
    assert lb.calls == ["add"] and out.tolist() == [3.0, 3.0, 3.0]
    head = out[:2]
    assert lb.into_function("sqrt")(np.full(2, 4.0), out=head) is head
    assert lb.calls == ["add", "sqrt"] and out.tolist() == [2.0, 2.0, 3.0]
