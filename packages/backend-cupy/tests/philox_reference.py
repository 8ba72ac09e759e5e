"""Philox4x32-10 and the draws of ``zerograd_cupy.random``, in numpy: the reference the kernel
body is checked against (on the CPU) and the GPU draws too (in test_cupy_gpu.py)."""

from __future__ import annotations

import numpy as np

_MASK = np.uint64(0xFFFFFFFF)


def philox4x32_10(counters: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """The Philox4x32-10 blocks of ``counters`` (shape (n, 4), uint32) under ``key``: (n, 4)."""
    x = [counters[:, j].astype(np.uint64) for j in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for r in range(10):
        if r:
            k0, k1 = (k0 + np.uint64(0x9E3779B9)) & _MASK, (k1 + np.uint64(0xBB67AE85)) & _MASK
        p0, p1 = np.uint64(0xD2511F53) * x[0], np.uint64(0xCD9E8D57) * x[2]
        x = [
            (p1 >> np.uint64(32)) ^ x[1] ^ k0,
            p1 & _MASK,
            (p0 >> np.uint64(32)) ^ x[3] ^ k1,
            p0 & _MASK,
        ]
    return np.stack(x, axis=1).astype(np.uint32)


def blocks(seed: int, offset: int, n: int) -> np.ndarray:
    """The block behind element i of a draw of n at ``offset`` under ``seed``: (n, 4) uint32."""
    counter = np.uint64(offset) + np.arange(n, dtype=np.uint64)
    counters = np.zeros((n, 4), np.uint32)
    counters[:, 0] = (counter & _MASK).astype(np.uint32)
    counters[:, 1] = (counter >> np.uint64(32)).astype(np.uint32)
    return philox4x32_10(counters, (seed & 0xFFFFFFFF, seed >> 32))


def _unit53(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return ((a >> 5).astype(np.float64) * 67108864.0 + (b >> 6)) / 9007199254740992.0


def uniform(seed: int, offset: int, n: int, dtype: str) -> np.ndarray:
    r = blocks(seed, offset, n)
    if np.dtype(dtype).itemsize == 4:
        return ((r[:, 0] >> 8).astype(np.float64) / 16777216.0).astype(dtype)
    return _unit53(r[:, 0], r[:, 1]).astype(dtype)


def normal(seed: int, offset: int, n: int, dtype: str) -> np.ndarray:
    r = blocks(seed, offset, n)
    u1, u2 = 1.0 - _unit53(r[:, 0], r[:, 1]), _unit53(r[:, 2], r[:, 3])
    return (np.sqrt(-2.0 * np.log(u1)) * np.cos(6.283185307179586 * u2)).astype(dtype)


def keys(seed: int, offset: int, n: int) -> np.ndarray:
    r = blocks(seed, offset, n).astype(np.uint64)
    return (r[:, 0] << np.uint64(32)) | r[:, 1]
