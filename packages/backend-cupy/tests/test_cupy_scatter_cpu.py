"""The deterministic scatter-add's CUDA kernel body, compiled as C++ for the CPU.

The source string CuPy compiles runs here in a plain loop over ``i``, on indices sorted
as ``scatter_add_rows_gpu`` sorts them (numpy's stable argsort standing in for CuPy's), and
must give ``numpy.add.at``'s result bit for bit: the same additions in the same order.
(The real kernel runs in test_cupy_gpu.py.)
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from cpu_build import RAW, build, ptr

from zerograd_cupy import scatter

_HARNESS = (
    RAW
    + """
#include <cstdint>

template <typename T>
void scatter_rows(const int64_t* sid_p, const int64_t* order_p, const T* v_p, int64_t d,
                  int64_t m, T* out, ptrdiff_t size) {
    const Raw<int64_t> sid{sid_p};
    const Raw<int64_t> order{order_p};
    const Raw<T> v{v_p};
    for (ptrdiff_t i = 0; i < size; ++i) {
        BODY
    }
}

extern "C" {
void scatter_f(const int64_t* s, const int64_t* o, const float* v, int64_t d, int64_t m,
               float* out, ptrdiff_t n) { scatter_rows(s, o, v, d, m, out, n); }
void scatter_d(const int64_t* s, const int64_t* o, const double* v, int64_t d, int64_t m,
               double* out, ptrdiff_t n) { scatter_rows(s, o, v, d, m, out, n); }
}
""".replace("BODY", scatter._BODY)
)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build(_HARNESS, tmp_path_factory.mktemp("scatter"))


def run_scatter(lib, a, ids, values):
    """``a`` with ``values`` added at rows ``ids``, through the kernel body."""
    out = np.array(a, order="C", copy=True)
    n = out.shape[0]
    flat = np.asarray(ids, dtype=np.int64).ravel()
    flat = np.where(flat < 0, flat + n, flat)
    m, d = flat.size, out.size // n
    v = np.ascontiguousarray(np.broadcast_to(values, np.shape(ids) + out.shape[1:]))
    order = np.argsort(flat, kind="stable")
    sid = np.ascontiguousarray(flat[order])
    fn = lib.scatter_f if out.dtype == np.float32 else lib.scatter_d
    fn(ptr(sid), ptr(order), ptr(v), ctypes.c_int64(d), ctypes.c_int64(m), ptr(out),
       ctypes.c_ssize_t(m * d))  # fmt: skip
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shape, ids",
    [
        ((5,), [0, 1, 1, 4, 1]),  # one column
        ((7, 3), np.random.default_rng(3).integers(0, 4, 500)),  # long runs of each index
        ((6, 2, 4), [[5, 0, 5], [-1, 2, 0]]),  # 2-D ids, a negative one, rows of 2x4
        ((3, 2), [2]),
    ],
)
def test_body_gives_numpy_add_at_bit_for_bit(lib, dtype, shape, ids):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(dtype)
    ids = np.asarray(ids)
    values = (rng.standard_normal(ids.shape + shape[1:]) * 1e3).astype(dtype)
    want = a.copy()
    np.add.at(want, ids, values)
    got = run_scatter(lib, a, ids, values)
    np.testing.assert_array_equal(got, want)
    assert got.tobytes() == want.tobytes()  # every bit, the sign of zero included


def test_broadcast_values_and_an_order_that_rounds_differently(lib):
    # 1e8 + 1 + ... : the sum depends on the order of the additions in float32
    a = np.zeros((2, 1), np.float32)
    ids = np.array([0, 1, 0, 0, 1, 0])
    values = np.array([[1e8], [1.0], [1.0], [-1e8], [3.0], [1.0]], np.float32)
    want = a.copy()
    np.add.at(want, ids, values)
    assert want[0, 0] == 1.0  # (((0 + 1e8) + 1) - 1e8) + 1: the first 1 is lost
    np.testing.assert_array_equal(run_scatter(lib, a, ids, values), want)
    np.testing.assert_array_equal(
        run_scatter(lib, a, ids, np.float32(2.0)), [[8.0], [4.0]]
    )  # a scalar broadcast to every index
