"""The cupy backend's random numbers: a counter-based generator whose state is two integers.

CuPy's own generator (cuRAND behind ``cupy.random``) cannot report its state, so a checkpoint
could not resume it. This one is Philox4x32-10 (Salmon et al., SC'11), the generator cuRAND
and PyTorch's CUDA backend also use: element ``i`` of a draw is a pure function of the key
(the seed), the counter ``offset + i``, and nothing else. The state is ``(seed, offset)``;
each draw of ``n`` values advances ``offset`` by ``n``, so a draw is repeatable from the
state alone and consecutive draws never share counters.

Per element, one Philox block (four 32-bit words) gives:

- ``uniform``: float32 from the top 24 bits of word 0 (``[0, 1)``, exact in float32);
  float64 from 53 bits of words 0 and 1;
- ``normal``: Box-Muller on two 53-bit uniforms (words 0-1 and 2-3), computed in double;
- ``keys``: a 64-bit integer from words 0 and 1 (``permutation`` sorts by them).

The kernel body is plain C++ as well as CUDA C, so the tests compile it for the CPU and
check it against a numpy reference where there is no GPU.
"""

from __future__ import annotations

import importlib
import os
import threading
from typing import Any

from zerograd.checks import integer

from .compiled import elementwise

UNIFORM, NORMAL, KEYS = 0, 1, 2

PHILOX = """
__device__ inline unsigned int zg_mulhi(unsigned int a, unsigned int b, unsigned int* lo) {
    const unsigned long long p = (unsigned long long)a * b;
    *lo = (unsigned int)p;
    return (unsigned int)(p >> 32);
}

// Philox4x32-10 of counter c under key (k0, k1), written into r.
__device__ inline void zg_philox(const unsigned int* c, unsigned int k0, unsigned int k1,
                                 unsigned int* r) {
    unsigned int x0 = c[0], x1 = c[1], x2 = c[2], x3 = c[3];
    for (int round = 0; round < 10; ++round) {
        if (round) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        unsigned int lo0, lo1;
        const unsigned int hi0 = zg_mulhi(0xD2511F53u, x0, &lo0);
        const unsigned int hi1 = zg_mulhi(0xCD9E8D57u, x2, &lo1);
        x0 = hi1 ^ x1 ^ k0;
        x1 = lo1;
        x2 = hi0 ^ x3 ^ k1;
        x3 = lo0;
    }
    r[0] = x0; r[1] = x1; r[2] = x2; r[3] = x3;
}

// 53 random bits from two words, as a double in [0, 1).
__device__ inline double zg_unit53(unsigned int a, unsigned int b) {
    return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6)) * (1.0 / 9007199254740992.0);
}
"""

BODY = """
    const unsigned long long n = offset + (unsigned long long)i;
    const unsigned int c[4] = {(unsigned int)n, (unsigned int)(n >> 32), 0u, 0u};
    unsigned int r[4];
    zg_philox(c, k0, k1, r);
    if (mode == 0) {
        if (sizeof(T) == 4) {
            y = (T)((double)(r[0] >> 8) * (1.0 / 16777216.0));
        } else {
            y = (T)zg_unit53(r[0], r[1]);
        }
    } else if (mode == 1) {
        const double u1 = 1.0 - zg_unit53(r[0], r[1]);  // (0, 1]: log(u1) is finite
        const double u2 = zg_unit53(r[2], r[3]);
        y = (T)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    } else {
        y = (T)(((unsigned long long)r[0] << 32) | r[1]);
    }
"""


_KERNEL = (
    "uint32 k0, uint32 k1, uint64 offset, int32 mode",
    "T y",
    BODY,
    "zerograd_philox",
    PHILOX,
)


def _word(name: str, v: Any) -> int:
    """``v`` as an int in ``[0, 2**64)``, the range of a seed and of an offset."""
    n = integer("zerograd-cupy", name, v, low=0)
    if n >= 2**64:
        raise ValueError(f"zerograd-cupy: {name} must be below 2**64, got {n}")
    return n


class PhiloxGenerator:
    """Draws on the current CUDA device; the state is ``(seed, offset)``.

    Thread-safe: each draw reserves its counters under a lock, so two threads never draw
    the same numbers. Unseeded, it seeds itself from ``os.urandom`` on the first draw.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seed: int | None = None
        self._offset = 0

    def seed(self, seed: int) -> None:
        """Restart the stream of ``seed`` (an int in ``[0, 2**64)``) at its beginning."""
        seed = _word("a seed", seed)
        with self._lock:
            self._seed, self._offset = seed, 0

    def get_state(self) -> tuple[int, int]:
        """``(seed, offset)``: what :meth:`set_state` takes to repeat the draws from here."""
        with self._lock:
            return self._seeded(), self._offset

    def set_state(self, state: tuple[int, int]) -> None:
        """Continue from a state :meth:`get_state` returned (checked before anything changes)."""
        if not isinstance(state, (tuple, list)) or len(state) != 2:
            raise ValueError(
                f"zerograd-cupy: a random state is a (seed, offset) pair, got {state!r}"
            )
        seed, offset = _word("a seed", state[0]), _word("an offset", state[1])
        with self._lock:
            self._seed, self._offset = seed, offset

    def _reserve(self, n: int) -> tuple[int, int, int]:
        with self._lock:
            seed, offset = self._seeded(), self._offset
            self._offset = (offset + n) % 2**64
            return seed & 0xFFFFFFFF, seed >> 32, offset

    def _seeded(self) -> int:
        """The seed, drawn from ``os.urandom`` the first time when none was given (lock held)."""
        if self._seed is None:
            self._seed = int.from_bytes(os.urandom(8), "little")
        return self._seed

    def draw(self, shape: tuple[int, ...], dtype: Any, mode: int) -> Any:
        """A new array of ``shape`` and ``dtype`` filled by ``mode`` (UNIFORM, NORMAL, KEYS)."""
        cp = importlib.import_module("cupy")
        out = cp.empty(shape, dtype=dtype)
        k0, k1, offset = self._reserve(out.size)
        if out.size:
            elementwise(*_KERNEL)(k0, k1, offset, mode, out)
        return out
