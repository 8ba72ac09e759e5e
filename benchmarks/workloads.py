"""The problems every framework solves: sizes, seeded weights and data, memory probes.

Each ``fw_*.py`` module builds these same problems with its own framework's API, starting
from the same numpy arrays, so that their results can be compared (see ``digest``).
"""

from __future__ import annotations

import os
from types import ModuleType

import numpy as np

F32 = np.float32
LR = 0.1

OPS = ("add", "mul", "tanh", "sin")  # the per-op chain cycles through these
CHAIN = 1000  # ops per per-op chain
CHAIN_CASES = {"add,mul,tanh,sin": OPS, **{op: (op,) for op in OPS}}
WIDE_K = (1000, 4000, 16000)  # leaves of the wide graph
DEEP_N = 100_000  # ops of the tanh chain whose memory is measured
MLP_SIZES = (784, 1000, 1000, 10)


def chain_inputs() -> tuple[np.ndarray, np.ndarray]:
    """The chain's input ``x0`` and its constant ``c`` (one float64 element each)."""
    return np.array([0.3]), np.array([0.999])


# -- the graph workloads, written once: each fw_*.py supplies leaf, tanh, sin, backward and
# grad (and const when its constants must be wrapped); ``+`` and ``*`` are its own operators


def chain(fw: ModuleType, x0: np.ndarray, c: np.ndarray, ops: tuple[str, ...], n: int) -> float:
    """Forward and backward through ``n`` elementwise ops cycling through ``ops``; returns
    the gradient of the input (one element), which every framework must agree on.

    A module with its own ``chain`` (numpy-hand: no graph to record) runs that instead. The
    loop is an ``if`` chain with the operators inline, so a per-op call adds nothing.
    """
    if hasattr(fw, "chain"):
        return fw.chain(x0, c, ops, n)
    x = fw.leaf(x0)
    chain_of(fw, x, c, ops, n)
    return float(fw.grad(x)[0])


def chain_of(fw: ModuleType, x: object, c: np.ndarray, ops: tuple[str, ...], n: int) -> object:
    """The ``n`` ops from the leaf ``x`` and the backward: the part of :func:`chain` that a
    static graph records (``fw_static.py``); returns the chain's output."""
    y = x
    c = fw.const(c) if hasattr(fw, "const") else c
    for i in range(n):
        op = ops[i % len(ops)]
        if op == "add":
            y = y + c
        elif op == "mul":
            y = y * c
        elif op == "tanh":
            y = fw.tanh(y)
        else:
            y = fw.sin(y)
    fw.backward(y)
    return y


def wide(fw: ModuleType, k: int) -> object:
    """``y = sum_i x_i * w`` over ``k`` float64 leaves ``x_i`` of 10 elements; backward
    not run."""
    w = fw.leaf(np.full(10, 0.5))
    xs = [fw.leaf(np.full(10, float(i % 7))) for i in range(k)]
    y = xs[0] * w
    for x in xs[1:]:
        y = y + x * w
    return y


def tanh_chain(fw: ModuleType, n: int) -> object:
    """``n`` nested tanh of one float64 leaf element; backward not run."""
    y = fw.leaf(np.array([0.5]))
    for _ in range(n):
        y = fw.tanh(y)
    return y


def mlp_weights(seed: int = 0) -> list[np.ndarray]:
    """``[W1, b1, W2, b2, W3, b3]`` in float32, ``W`` laid out (in, out) as ``x @ W``."""
    rng = np.random.default_rng(seed)
    ws = []
    for i, o in zip(MLP_SIZES, MLP_SIZES[1:]):
        ws += [(rng.standard_normal((i, o)) * np.sqrt(1 / i)).astype(F32), np.zeros(o, F32)]
    return ws


def mlp_data(n: int = 100, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """A float32 batch ``(n, 784)`` and its int64 labels in [0, 10)."""
    rng = np.random.default_rng(seed)
    return rng.random((n, 784), dtype=F32), rng.integers(0, 10, n)


def cnn_weights(seed: int = 2) -> list[np.ndarray]:
    """``[W, b, Wl, bl]``: conv 3x3 1->16 ``(16, 1, 3, 3)``, then linear ``(3136, 10)``."""
    rng = np.random.default_rng(seed)
    W = (rng.standard_normal((16, 1, 3, 3)) * np.sqrt(1 / 9)).astype(F32)
    Wl = (rng.standard_normal((16 * 14 * 14, 10)) * np.sqrt(1 / 3136)).astype(F32)
    return [W, np.zeros(16, F32), Wl, np.zeros(10, F32)]


def cnn_data(n: int = 32, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """A float32 batch ``(n, 1, 28, 28)`` and its int64 labels in [0, 10)."""
    rng = np.random.default_rng(seed)
    return rng.random((n, 1, 28, 28), dtype=F32), rng.integers(0, 10, n)


FUNC_SIZES = (784, 100, 10)  # the per-sample gradient rows' MLP
FUNC_BATCH = 64
HESSIAN_N = 100  # parameters of the Hessian row's function


def func_mlp(seed: int = 4) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """The per-sample gradient problem: float32 parameters ``{W1, b1, W2, b2}`` of an MLP
    784-100-10 (relu), a batch of 64 inputs and its int64 labels."""
    rng = np.random.default_rng(seed)
    (i, h, o) = FUNC_SIZES
    params = {
        "W1": (rng.standard_normal((i, h)) * np.sqrt(1 / i)).astype(F32),
        "b1": np.zeros(h, F32),
        "W2": (rng.standard_normal((h, o)) * np.sqrt(1 / h)).astype(F32),
        "b2": np.zeros(o, F32),
    }
    return params, rng.random((FUNC_BATCH, i), dtype=F32), rng.integers(0, o, FUNC_BATCH)


def hessian_problem(seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """The Hessian problem: ``f(x) = sum(tanh(A @ x) ** 2) + sum(x ** 4) / 4`` at ``x``, with
    ``A`` (50, 100) and ``x`` (100,) in float64: returns ``(A, x)``."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((50, HESSIAN_N)) / 10, rng.standard_normal(HESSIAN_N)


def digest(before: list[np.ndarray], after: list[np.ndarray]) -> list[float]:
    """The size of each parameter's update, ``||after - before||``: equal across frameworks
    only when their losses, gradients and SGD updates are the same computation."""
    return [float(np.linalg.norm(a.astype(np.float64) - b)) for b, a in zip(before, after)]


# -- memory: resident set size read from /proc (Linux), with getrusage as the fallback -------


def _rss(field: str) -> int:
    """``field`` (``VmRSS`` or ``VmHWM``) of /proc/self/status in bytes; without /proc, the
    process's lifetime peak from ``getrusage`` (``ru_maxrss``, KiB on Linux)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rss_now() -> int:
    """Resident set size of this process, in bytes."""
    return _rss("VmRSS")


def reset_peak() -> bool:
    """Restart the kernel's peak-RSS counter (``VmHWM``) from the current RSS.

    Returns False where that is impossible; the peak then is the process's lifetime peak,
    which in a fresh process running one workload is that workload's peak.
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss() -> int:
    """Peak resident set size since the last ``reset_peak`` (or since the start), bytes."""
    return _rss("VmHWM")


def threads_env(threads: int) -> dict[str, str]:
    """The environment that pins BLAS, OpenMP and numexpr pools to ``threads``."""
    names = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    names += ("NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
    return {**os.environ, **{n: str(threads) for n in names}}
