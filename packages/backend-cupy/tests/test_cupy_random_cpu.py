"""zerograd-cupy's Philox generator without a GPU: the numpy reference against the published
known-answer vectors, the CUDA kernel body compiled as C++ against the reference, and the
generator's state handling (which needs no GPU)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from cpu_build import build
from philox_reference import blocks, keys, normal, philox4x32_10, uniform

from zerograd_cupy import CupyBackend
from zerograd_cupy import random as zr

# Random123's known-answer vectors for philox4x32_10: (counter, key) -> block
KAT = [
    ([0, 0, 0, 0], (0, 0), [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 4, (0xFFFFFFFF, 0xFFFFFFFF), [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    (
        [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344],
        (0xA4093822, 0x299F31D0),
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1],
    ),
]


@pytest.mark.parametrize("counter, key, expected", KAT)
def test_reference_gives_the_known_answers(counter, key, expected):
    got = philox4x32_10(np.array([counter], np.uint32), key)
    assert got.tolist() == [expected]


_HARNESS = f"""
#include <cmath>
#include <cstddef>
#define __device__
{zr.PHILOX}
template <typename T>
static void run(unsigned int k0, unsigned int k1, unsigned long long offset, int mode,
                T* out, ptrdiff_t size) {{
    for (ptrdiff_t i = 0; i < size; ++i) {{
        T& y = out[i];
        {zr.BODY}
    }}
}}
extern "C" void draw_f64(unsigned int k0, unsigned int k1, unsigned long long offset, int mode,
                         double* out, ptrdiff_t size) {{ run(k0, k1, offset, mode, out, size); }}
extern "C" void draw_f32(unsigned int k0, unsigned int k1, unsigned long long offset, int mode,
                         float* out, ptrdiff_t size) {{ run(k0, k1, offset, mode, out, size); }}
extern "C" void draw_u64(unsigned int k0, unsigned int k1, unsigned long long offset, int mode,
                         unsigned long long* out, ptrdiff_t size) {{
    run(k0, k1, offset, mode, out, size);
}}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build(_HARNESS, tmp_path_factory.mktemp("philox"))


def body_draw(lib, seed, offset, n, dtype, mode):
    out = np.empty(n, dtype)
    fn = {"float64": lib.draw_f64, "float32": lib.draw_f32, "uint64": lib.draw_u64}[dtype]
    fn(
        ctypes.c_uint(seed & 0xFFFFFFFF),
        ctypes.c_uint(seed >> 32),
        ctypes.c_ulonglong(offset),
        ctypes.c_int(mode),
        out.ctypes.data_as(ctypes.c_void_p),
        ctypes.c_ssize_t(n),
    )
    return out


# a seed above 2**32 (both key words used) and an offset whose counter crosses 2**32
CASES = [(0, 0), (11, 5), (2**40 + 7, 2**32 - 3)]


@pytest.mark.parametrize("seed, offset", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kernel_body_draws_what_the_reference_says(lib, seed, offset, dtype):
    n = 1000
    u = body_draw(lib, seed, offset, n, dtype, zr.UNIFORM)
    np.testing.assert_array_equal(u, uniform(seed, offset, n, dtype))
    assert u.min() >= 0.0 and u.max() < 1.0
    z = body_draw(lib, seed, offset, n, dtype, zr.NORMAL)
    tol = 1e-6 if dtype == "float32" else 1e-13  # libm's log/cos against numpy's
    np.testing.assert_allclose(z, normal(seed, offset, n, dtype), rtol=tol, atol=tol)
    k = body_draw(lib, seed, offset, n, "uint64", zr.KEYS)
    np.testing.assert_array_equal(k, keys(seed, offset, n))


def test_draws_have_the_moments_of_their_distributions(lib):
    n = 200_000
    u = body_draw(lib, 3, 0, n, "float64", zr.UNIFORM)
    z = body_draw(lib, 3, n, n, "float64", zr.NORMAL)
    # 5 standard errors: a fixed seed, so this either always passes or never does
    assert abs(u.mean() - 0.5) < 5 * np.sqrt(1 / 12 / n)
    assert abs(z.mean()) < 5 / np.sqrt(n) and abs(z.std() - 1) < 5 / np.sqrt(2 * n)
    assert np.isfinite(z).all()


def test_consecutive_blocks_are_distinct_and_offsets_continue_a_stream():
    whole = blocks(9, 0, 64)
    np.testing.assert_array_equal(np.concatenate([blocks(9, 0, 40), blocks(9, 40, 24)]), whole)
    assert len({tuple(b) for b in whole}) == 64


def test_generator_state_is_seed_and_offset_without_a_gpu():
    g = zr.PhiloxGenerator()
    g.seed(5)
    assert g.get_state() == (5, 0)
    assert g._reserve(10) == (5, 0, 0) and g._reserve(3) == (5, 0, 10)
    assert g.get_state() == (5, 13)
    g.set_state((2**33 + 1, 7))
    assert g._reserve(1) == (1, 2, 7)


@pytest.mark.parametrize(
    "state, error, match",
    [
        ((1,), ValueError, r"a \(seed, offset\) pair"),
        ("ab", ValueError, r"a \(seed, offset\) pair"),
        ((1.5, 0), TypeError, r"a seed must be an int >= 0, got 1.5 \(float\)"),
        ((-1, 0), ValueError, r"a seed must be an int >= 0, got -1"),
        ((0, 2**64), ValueError, r"an offset must be below 2\*\*64"),
    ],
)
def test_a_bad_state_is_refused_and_changes_nothing(state, error, match):
    g = zr.PhiloxGenerator()
    g.seed(4)
    g._reserve(6)
    with pytest.raises(error, match=match):
        g.set_state(state)
    assert g.get_state() == (4, 6)


def test_backend_random_state_round_trip_needs_no_gpu():
    b = CupyBackend()
    b.seed(12)
    b.generator._reserve(100)
    state = b.random_state()
    assert state.dtype == np.uint64 and state.tolist() == [12, 100]
    other = CupyBackend()
    other.set_random_state(state)
    assert other.generator.get_state() == (12, 100)
    with pytest.raises(ValueError, match=r"\[seed, offset\] \(2 integers\), got shape \(3,\)"):
        other.set_random_state(np.zeros(3, np.uint64))
    assert other.generator.get_state() == (12, 100)
