"""The im2col/col2im CUDA kernel bodies, compiled as C++ for the CPU and checked against numpy.

An ``ElementwiseKernel`` runs its body once per output element with the index in ``i``;
here a plain loop does the same, so the very source strings CuPy compiles are checked for
their index arithmetic on machines without a GPU. (The real kernels run in test_cupy_gpu.py.)
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from cpu_build import RAW, build, ptr
from kernel_reference import GEOMETRIES, im2col_reference

from zerograd_cupy import kernels

_SIG = kernels._GEOMETRY.replace("int32 ", "int ")

_HARNESS = (
    RAW
    + f"""
typedef double T;

extern "C" void im2col(const T* img_p, {_SIG}, T pad_value, T* out, ptrdiff_t size) {{
    const Raw<T> img{{img_p}};
    for (ptrdiff_t i = 0; i < size; ++i) {{
        T& col = out[i];
        {kernels._IM2COL_BODY}
    }}
}}

extern "C" void col2im(const T* col_p, {_SIG}, T* out, ptrdiff_t size) {{
    const Raw<T> col{{col_p}};
    for (ptrdiff_t i = 0; i < size; ++i) {{
        T& img = out[i];
        {kernels._COL2IM_BODY}
    }}
}}
"""
)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build(_HARNESS, tmp_path_factory.mktemp("kernels"))


def _geo(shape, k, s, p):
    return kernels._geometry("test", shape, k, s, p)  # h, w, oh, ow, kh, kw, sy, sx, ph, pw


def run_im2col(lib, img, k, s, p, pad_value=0.0):
    geo = _geo(img.shape, k, s, p)
    h, w, oh, ow, kh, kw = geo[:6]
    out = np.empty((*img.shape[:2], kh, kw, oh, ow))
    img = np.ascontiguousarray(img, dtype=np.float64)
    args = [ctypes.c_int(v) for v in geo]
    lib.im2col(ptr(img), *args, ctypes.c_double(pad_value), ptr(out), ctypes.c_ssize_t(out.size))
    return out


def run_col2im(lib, col, shape, k, s, p):
    geo = _geo(shape, k, s, p)
    out = np.empty(shape)
    col = np.ascontiguousarray(col, dtype=np.float64)
    args = [ctypes.c_int(v) for v in geo]
    lib.col2im(ptr(col), *args, ptr(out), ctypes.c_ssize_t(out.size))
    return out


@pytest.mark.parametrize("shape, k, s, p", GEOMETRIES)
def test_im2col_body_matches_the_definition(lib, shape, k, s, p):
    img = np.random.default_rng(0).standard_normal(shape)
    np.testing.assert_array_equal(run_im2col(lib, img, k, s, p), im2col_reference(img, k, s, p))


def test_im2col_body_fills_the_border_with_pad_value(lib):
    img = np.arange(16.0).reshape(1, 1, 4, 4)
    got = run_im2col(lib, img, 3, 2, 1, pad_value=-np.inf)
    np.testing.assert_array_equal(got, im2col_reference(img, 3, 2, 1, pad_value=-np.inf))
    assert np.isneginf(got[0, 0, 0, 0, 0, 0])


@pytest.mark.parametrize("shape, k, s, p", GEOMETRIES)
def test_col2im_body_is_the_adjoint_of_im2col(lib, shape, k, s, p):
    rng = np.random.default_rng(1)
    img = rng.standard_normal(shape)
    col = im2col_reference(img, k, s, p)
    c = rng.standard_normal(col.shape)
    folded = run_col2im(lib, c, shape, k, s, p)
    # <im2col(x), c> == <x, col2im(c)> for every x pins col2im down completely; check it on
    # the unit images too, which gives col2im's exact entries.
    np.testing.assert_allclose(np.vdot(col, c), np.vdot(img, folded), rtol=1e-12)
    n, c_, h, w = shape
    for idx in [(0, 0, 0, 0), (n - 1, 0, h - 1, w - 1), (0, c_ - 1, h // 2, w // 2)]:
        unit = np.zeros(shape)
        unit[idx] = 1.0
        expected = np.vdot(im2col_reference(unit, k, s, p), c)
        np.testing.assert_allclose(folded[idx], expected, rtol=1e-12, atol=1e-12)
