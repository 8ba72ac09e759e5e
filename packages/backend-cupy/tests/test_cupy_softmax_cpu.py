"""The softmax and cross-entropy CUDA kernel bodies, compiled as C++ for the CPU.

The very source strings CuPy compiles run here in a plain loop over ``i`` (as an
``ElementwiseKernel`` runs them once per output element), in float and double, against
the backend contract's generic code on numpy. (The real kernels run in test_cupy_gpu.py.)
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from cpu_build import RAW, build, ptr

from zerograd_cupy import softmax

_HARNESS = (
    RAW
    + """
#include <cmath>
#include <cstdint>
using std::exp;
using std::log;
using std::sqrt;

template <typename T>
void softmax_rows(const T* x_p, int64_t c, T* out, ptrdiff_t size) {
    const Raw<T> x{x_p};
    for (ptrdiff_t i = 0; i < size; ++i) {
        T& y = out[i];
        SOFTMAX_BODY
    }
}

template <typename T>
void cross_entropy_rows(const T* x_p, const int64_t* t_p, int64_t c, T* out, ptrdiff_t size) {
    const Raw<T> x{x_p};
    const Raw<int64_t> t{t_p};
    for (ptrdiff_t i = 0; i < size; ++i) {
        T& y = out[i];
        CROSS_ENTROPY_BODY
    }
}

template <typename T>
void cross_entropy_grad(const T* x_p, const int64_t* t_p, int64_t c, T scale, T* out,
                        ptrdiff_t size) {
    const Raw<T> x{x_p};
    const Raw<int64_t> t{t_p};
    for (ptrdiff_t i = 0; i < size; ++i) {
        T& g = out[i];
        CROSS_ENTROPY_GRAD_BODY
    }
}

template <typename T>
void relu_grad(const T* y_p, const T* gy_p, T* out, ptrdiff_t size) {
    for (ptrdiff_t i = 0; i < size; ++i) {
        const T y = y_p[i], gy = gy_p[i];
        T& gx = out[i];
        RELU_GRAD_BODY
    }
}

template <typename T>
void sigmoid_grad(const T* y_p, const T* gy_p, T* out, ptrdiff_t size) {
    for (ptrdiff_t i = 0; i < size; ++i) {
        const T y = y_p[i], gy = gy_p[i];
        T& gx = out[i];
        SIGMOID_GRAD_BODY
    }
}

extern "C" {
void xent_grad_f(const float* x, const int64_t* t, int64_t c, float s, float* g, ptrdiff_t n) {
    cross_entropy_grad(x, t, c, s, g, n);
}
void xent_grad_d(const double* x, const int64_t* t, int64_t c, double s, double* g,
                 ptrdiff_t n) {
    cross_entropy_grad(x, t, c, s, g, n);
}
void relu_grad_f(const float* y, const float* gy, float* g, ptrdiff_t n) { relu_grad(y, gy, g, n); }
void relu_grad_d(const double* y, const double* gy, double* g, ptrdiff_t n) {
    relu_grad(y, gy, g, n);
}
void sigmoid_grad_f(const float* y, const float* gy, float* g, ptrdiff_t n) {
    sigmoid_grad(y, gy, g, n);
}
void sigmoid_grad_d(const double* y, const double* gy, double* g, ptrdiff_t n) {
    sigmoid_grad(y, gy, g, n);
}
void softmax_f(const float* x, int64_t c, float* y, ptrdiff_t n) { softmax_rows(x, c, y, n); }
void softmax_d(const double* x, int64_t c, double* y, ptrdiff_t n) { softmax_rows(x, c, y, n); }
void xent_f(const float* x, const int64_t* t, int64_t c, float* y, ptrdiff_t n) {
    cross_entropy_rows(x, t, c, y, n);
}
void xent_d(const double* x, const int64_t* t, int64_t c, double* y, ptrdiff_t n) {
    cross_entropy_rows(x, t, c, y, n);
}
}
""".replace("SOFTMAX_BODY", softmax._SOFTMAX_BODY)
    .replace("CROSS_ENTROPY_BODY", softmax._CROSS_ENTROPY_BODY)
    .replace("CROSS_ENTROPY_GRAD_BODY", softmax._CROSS_ENTROPY_GRAD_BODY)
    .replace("RELU_GRAD_BODY", softmax._RELU_GRAD_BODY)
    .replace("SIGMOID_GRAD_BODY", softmax._SIGMOID_GRAD_BODY)
)


def numpy_softmax(x):
    """The generic softmax's arithmetic over rows (zerograd-nn's ``Kernels.softmax``), in numpy."""
    y = np.exp(x - x.max(axis=1, keepdims=True))
    return y / y.sum(axis=1, keepdims=True)


def numpy_cross_entropy_rows(x, t):
    """The generic per-row cross-entropy (``Kernels.cross_entropy_rows``), in numpy."""
    m = x.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(x - m).sum(axis=1, keepdims=True))
    return -((x - lse)[np.arange(x.shape[0]), t])


_RTOL = {"float32": 2e-6, "float64": 1e-13}


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build(_HARNESS, tmp_path_factory.mktemp("softmax"))


def run_softmax(lib, x):
    x = np.ascontiguousarray(x)
    y = np.empty_like(x)
    fn = lib.softmax_f if x.dtype == np.float32 else lib.softmax_d
    fn(ptr(x), ctypes.c_int64(x.shape[1]), ptr(y), ctypes.c_ssize_t(y.size))
    return y


def run_cross_entropy(lib, x, t):
    x, t = np.ascontiguousarray(x), np.ascontiguousarray(t, dtype=np.int64)
    y = np.empty(x.shape[0], dtype=x.dtype)
    fn = lib.xent_f if x.dtype == np.float32 else lib.xent_d
    fn(ptr(x), ptr(t), ctypes.c_int64(x.shape[1]), ptr(y), ctypes.c_ssize_t(y.size))
    return y


def _scores(n, c, dtype, scale=3.0, seed=0):
    return (np.random.default_rng(seed).standard_normal((n, c)) * scale).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n, c", [(1, 1), (5, 10), (3, 128), (64, 7)])
def test_softmax_body_matches_the_generic_softmax(lib, dtype, n, c):
    x = _scores(n, c, dtype)
    x[0, 0] = 80.0 if dtype == "float32" else 700.0  # exp would overflow without the max
    got = run_softmax(lib, x)
    np.testing.assert_allclose(got, numpy_softmax(x), rtol=_RTOL[dtype], atol=1e-30)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=10 * _RTOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n, c", [(1, 1), (5, 10), (3, 128), (64, 4096)])
def test_cross_entropy_body_matches_the_generic_rows(lib, dtype, n, c):
    x = _scores(n, c, dtype, seed=1)
    x[-1, -1] = 80.0 if dtype == "float32" else 700.0
    t = np.random.default_rng(2).integers(0, c, n)
    t[-1] = c - 1  # the largest score is the label's: a loss near 0
    got = run_cross_entropy(lib, x, t)
    want = numpy_cross_entropy_rows(x, t)
    np.testing.assert_allclose(got, want, rtol=_RTOL[dtype], atol=4 * np.finfo(dtype).eps)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_rows_with_nan_or_infinite_scores_give_what_the_generic_code_gives(lib, bad):
    x = _scores(3, 4, "float64")
    x[1, 2] = bad
    x[2, :] = -np.inf if bad == -np.inf else x[2, :]  # an all -inf row when bad is -inf
    t = np.array([0, 1, 3])
    with np.errstate(invalid="ignore"):
        want_p, want_l = numpy_softmax(x), numpy_cross_entropy_rows(x, t)
    np.testing.assert_allclose(run_softmax(lib, x), want_p, rtol=1e-13, equal_nan=True)
    np.testing.assert_allclose(run_cross_entropy(lib, x, t), want_l, rtol=1e-13, equal_nan=True)


def test_a_label_out_of_range_gives_nan_and_reads_nothing_outside_its_row(lib):
    x = _scores(4, 3, "float64")
    t = np.array([0, 3, -1, 2])  # rows 1 and 2: out of range (zerograd-nn refuses them first)
    got = run_cross_entropy(lib, x, t)
    assert np.isnan(got[1]) and np.isnan(got[2])
    ok = np.array([0, 3])
    np.testing.assert_allclose(got[ok], numpy_cross_entropy_rows(x[ok], t[ok]), rtol=1e-13)


def numpy_cross_entropy_grad(x, t, scale):
    """The generic loss gradient (``Kernels.cross_entropy_grad``), in numpy."""
    hot = (np.arange(x.shape[1]) == t.reshape(-1, 1)).astype(x.dtype)
    return (numpy_softmax(x) - hot) * scale


def run_cross_entropy_grad(lib, x, t, scale):
    x, t = np.ascontiguousarray(x), np.ascontiguousarray(t, dtype=np.int64)
    g = np.empty_like(x)
    f32 = x.dtype == np.float32
    fn, c_t = (lib.xent_grad_f, ctypes.c_float) if f32 else (lib.xent_grad_d, ctypes.c_double)
    fn(ptr(x), ptr(t), ctypes.c_int64(x.shape[1]), c_t(scale), ptr(g), ctypes.c_ssize_t(g.size))
    return g


def run_activation_grad(lib, name, y, gy):
    g = np.empty_like(y)
    fn = getattr(lib, f"{name}_grad_{'f' if y.dtype == np.float32 else 'd'}")
    fn(ptr(y), ptr(gy), ptr(g), ctypes.c_ssize_t(g.size))
    return g


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n, c", [(1, 1), (5, 10), (3, 128)])
def test_cross_entropy_grad_body_matches_the_generic_gradient(lib, dtype, n, c):
    x = _scores(n, c, dtype, seed=3)
    x[0, 0] = 80.0 if dtype == "float32" else 700.0
    t = np.random.default_rng(4).integers(0, c, n)
    scale = np.asarray(0.3, dtype=dtype)
    got = run_cross_entropy_grad(lib, x, t, scale)
    want = numpy_cross_entropy_grad(x, t, scale)
    np.testing.assert_allclose(got, want, rtol=_RTOL[dtype], atol=4 * np.finfo(dtype).eps)
    # each row's gradient sums to 0 (softmax sums to 1, minus the label's 1)
    np.testing.assert_allclose(got.sum(axis=1), 0.0, atol=20 * np.finfo(dtype).eps)


def test_cross_entropy_grad_body_subtracts_nothing_for_a_label_out_of_range(lib):
    x = _scores(3, 4, "float64", seed=5)
    t = np.array([0, 4, -1])  # rows 1 and 2: out of range (zerograd-nn refuses them first)
    got = run_cross_entropy_grad(lib, x, t, 1.0)
    np.testing.assert_allclose(got[1:], numpy_softmax(x)[1:], rtol=1e-13)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_and_sigmoid_grad_bodies_give_the_generic_bits(lib, dtype):
    rng = np.random.default_rng(6)
    y = np.maximum(rng.standard_normal(257), 0).astype(dtype)
    gy = rng.standard_normal(257).astype(dtype)  # negative gy at y == 0: a -0.0 to keep
    got = run_activation_grad(lib, "relu", y, gy)
    assert got.tobytes() == ((y > 0).astype(dtype) * gy).tobytes()
    s = (1 / (1 + np.exp(-gy))).astype(dtype)
    got = run_activation_grad(lib, "sigmoid", s, gy)
    assert got.tobytes() == (gy * s * (1 - s)).tobytes()
