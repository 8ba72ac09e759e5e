"""zerograd-nn training-step benchmarks: an MLP and a small CNN next to the same step
written by hand in numpy (and PyTorch CPU where importable), plus RSS over 1,000 steps.

Each zerograd step and its hand-written twin are first checked to compute the same loss
and the same updated weights from the same data; timings are medians of interleaved runs.
Everything is float32.
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time

import numpy as np
from common import side_by_side, try_torch

import zerograd_nn.functional as F
from zerograd import Parameter
from zerograd_nn.optimizers import SGD

LR = 0.1
F32 = np.float32


# -- MLP 784 -> 1000 -> 1000 -> 10 -------------------------------------------------------------


def mlp_weights(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = [784, 1000, 1000, 10]
    ws = []
    for i, o in zip(sizes, sizes[1:]):
        ws += [(rng.standard_normal((i, o)) * np.sqrt(1 / i)).astype(F32), np.zeros(o, F32)]
    return ws


def mlp_data(n: int = 100, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random((n, 784), dtype=F32), rng.integers(0, 10, n)


class ZerogradMLP:
    """The step as a zerograd user writes it: functional layers, cleargrads, backward, SGD."""

    def __init__(self, weights: list[np.ndarray], act: str) -> None:
        self.params = [Parameter(w.copy()) for w in weights]
        self.act = F.sigmoid if act == "sigmoid" else F.relu
        self.opt = SGD(lr=LR).setup(self.params)

    def step(self, x: np.ndarray, t: np.ndarray) -> float:
        W1, b1, W2, b2, W3, b3 = self.params
        h = self.act(F.linear(x, W1, b1))
        h = self.act(F.linear(h, W2, b2))
        loss = F.softmax_cross_entropy(F.linear(h, W3, b3), t)
        for p in self.params:
            p.cleargrad()
        loss.backward()
        self.opt.update()
        return float(loss.data)


def _softmax_ce(y: np.ndarray, t: np.ndarray) -> tuple[float, np.ndarray]:
    """Loss and its gradient with respect to the logits (mean over the batch)."""
    n = len(y)
    z = y - y.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    loss = -(z[np.arange(n), t] - np.log(s[:, 0])).mean()
    gy = e / s
    gy[np.arange(n), t] -= 1
    gy *= F32(1 / n)
    return float(loss), gy


class NumpyMLP:
    """The same step by hand: forward keeps what backward needs, float32 throughout."""

    def __init__(self, weights: list[np.ndarray], act: str) -> None:
        self.w = [w.copy() for w in weights]
        self.sigmoid = act == "sigmoid"

    def _act(self, a: np.ndarray) -> np.ndarray:
        if self.sigmoid:
            return np.tanh(a * F32(0.5)) * F32(0.5) + F32(0.5)
        return np.maximum(a, F32(0))

    def _dact(self, h: np.ndarray, g: np.ndarray) -> np.ndarray:
        if self.sigmoid:
            return g * h * (F32(1) - h)
        return g * (h > 0)

    def step(self, x: np.ndarray, t: np.ndarray) -> float:
        W1, b1, W2, b2, W3, b3 = self.w
        h1 = self._act(x @ W1 + b1)
        h2 = self._act(h1 @ W2 + b2)
        loss, gy = _softmax_ce(h2 @ W3 + b3, t)
        gW3, gb3 = h2.T @ gy, gy.sum(axis=0)
        g2 = self._dact(h2, gy @ W3.T)
        gW2, gb2 = h1.T @ g2, g2.sum(axis=0)
        g1 = self._dact(h1, g2 @ W2.T)
        gW1, gb1 = x.T @ g1, g1.sum(axis=0)
        for w, g in zip(self.w, (gW1, gb1, gW2, gb2, gW3, gb3)):
            w -= F32(LR) * g
        return loss


class TorchMLP:
    def __init__(self, torch, weights: list[np.ndarray], act: str) -> None:
        self.torch = torch
        self.w = [torch.tensor(w.copy(), requires_grad=True) for w in weights]
        self.act = torch.sigmoid if act == "sigmoid" else torch.relu
        self.opt = torch.optim.SGD(self.w, lr=LR)

    def step(self, x, t) -> float:
        W1, b1, W2, b2, W3, b3 = self.w
        h = self.act(x @ W1 + b1)
        h = self.act(h @ W2 + b2)
        loss = self.torch.nn.functional.cross_entropy(h @ W3 + b3, t)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()


def _check_same(group: str, z: float, h: float, zw: list, hw: list, rtol: float) -> None:
    if not np.isclose(z, h, rtol=rtol):
        raise AssertionError(f"{group}: zerograd loss {z} != hand-written numpy loss {h}")
    for a, b in zip(zw, hw):
        if a.dtype != F32:
            raise AssertionError(f"{group}: zerograd parameter became {a.dtype}, not float32")
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-6, err_msg=f"{group}: weights differ")


def _mlp_row(torch, act: str) -> dict:
    x, t = mlp_data()
    w = mlp_weights()
    z, h = ZerogradMLP(w, act), NumpyMLP(w, act)
    _check_same(f"MLP {act}", z.step(x, t), h.step(x, t), [p.data for p in z.params], h.w, 1e-4)
    fns = {"z": lambda: z.step(x, t), "h": lambda: h.step(x, t)}
    if torch is not None:
        tm = TorchMLP(torch, w, act)
        xt, tt = torch.tensor(x), torch.tensor(t)
        fns["t"] = lambda: tm.step(xt, tt)
    ms = {k: v * 1e3 for k, v in side_by_side(fns, 15, statistics.median).items()}
    case = f"784-1000-1000-10 {act}, batch 100"
    return _row("MLP training step (ms)", case, ms, "≤ 1.10× numpy")


def mlp_rows() -> list[dict]:
    torch = try_torch()
    return [_mlp_row(torch, act) for act in ("sigmoid", "relu")]


def _row(group: str, case: str, ms: dict[str, float], target: str, note: str = "") -> dict:
    z, h, t = ms["z"], ms["h"], ms.get("t")
    if t is not None:
        note = (note + "; " if note else "") + f"torch {t / h:.2f}× numpy"
    return {
        "group": group, "case": case,
        "zerograd": z, "numpy": h, "torch": t, "ratio": z / h,
        "zerograd_ms": z, "numpy_ms": h, "torch_ms": t,
        "target": target, "note": note,
    }  # fmt: skip


# -- CNN: conv 3x3 1->16 pad 1, relu, max pool 2, linear to 10; batch 32 of 28x28 -------------


def cnn_weights(seed: int = 2) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    W = (rng.standard_normal((16, 1, 3, 3)) * np.sqrt(1 / 9)).astype(F32)
    Wl = (rng.standard_normal((16 * 14 * 14, 10)) * np.sqrt(1 / 3136)).astype(F32)
    return [W, np.zeros(16, F32), Wl, np.zeros(10, F32)]


def cnn_data(n: int = 32, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random((n, 1, 28, 28), dtype=F32), rng.integers(0, 10, n)


class ZerogradCNN:
    def __init__(self, weights: list[np.ndarray]) -> None:
        self.params = [Parameter(w.copy()) for w in weights]
        self.opt = SGD(lr=LR).setup(self.params)

    def step(self, x: np.ndarray, t: np.ndarray) -> float:
        W, b, Wl, bl = self.params
        h = F.relu(F.conv2d(x, W, b, stride=1, pad=1))
        h = F.pooling(h, 2, 2)
        y = F.linear(F.reshape(h, (len(x), -1)), Wl, bl)
        loss = F.softmax_cross_entropy(y, t)
        for p in self.params:
            p.cleargrad()
        loss.backward()
        self.opt.update()
        return float(loss.data)


class NumpyCNN:
    """By hand: im2col (9 shifted views) + one batched matmul for the conv; the 2x2 pooling
    as the maximum of 4 strided views, its gradient routed to each window's first maximum."""

    def __init__(self, weights: list[np.ndarray]) -> None:
        self.w = [w.copy() for w in weights]

    def step(self, x: np.ndarray, t: np.ndarray) -> float:
        W, b, Wl, bl = self.w
        n, _, H, Wd = x.shape
        xpad = np.pad(x[:, 0], ((0, 0), (1, 1), (1, 1)))
        shifts = [(i, j) for i in range(3) for j in range(3)]
        col = np.stack([xpad[:, i : i + H, j : j + Wd] for i, j in shifts], axis=1)
        col = col.reshape(n, 9, H * Wd)
        a = np.matmul(W.reshape(16, 9), col) + b[:, None]  # (n, 16, H*W)
        h = np.maximum(a, F32(0)).reshape(n, 16, H, Wd)
        offsets = [(0, 0), (0, 1), (1, 0), (1, 1)]
        views = [h[:, :, i::2, j::2] for i, j in offsets]
        p = np.maximum(np.maximum(views[0], views[1]), np.maximum(views[2], views[3]))
        flat = p.reshape(n, -1)
        loss, gy = _softmax_ce(flat @ Wl + bl, t)
        gWl, gbl = flat.T @ gy, gy.sum(axis=0)
        gp = (gy @ Wl.T).reshape(p.shape)
        gh = np.zeros_like(h)
        taken = np.zeros(p.shape, dtype=bool)
        for (i, j), v in zip(offsets, views):
            hit = (v == p) & ~taken
            taken |= hit
            gh[:, :, i::2, j::2] = gp * hit
        ga = (gh * (h > 0)).reshape(n, 16, H * Wd)
        gW = np.tensordot(ga, col, axes=([0, 2], [0, 2])).reshape(W.shape)
        gb = ga.sum(axis=(0, 2))
        for w, g in zip(self.w, (gW, gb, gWl, gbl)):
            w -= F32(LR) * g
        return loss


class TorchCNN:
    def __init__(self, torch, weights: list[np.ndarray]) -> None:
        self.torch = torch
        self.w = [torch.tensor(w.copy(), requires_grad=True) for w in weights]
        self.opt = torch.optim.SGD(self.w, lr=LR)

    def step(self, x, t) -> float:
        fn = self.torch.nn.functional
        W, b, Wl, bl = self.w
        h = fn.max_pool2d(fn.relu(fn.conv2d(x, W, b, padding=1)), 2)
        loss = fn.cross_entropy(h.reshape(len(x), -1) @ Wl + bl, t)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()


def cnn_rows() -> list[dict]:
    torch = try_torch()
    x, t = cnn_data()
    w = cnn_weights()
    z, h = ZerogradCNN(w), NumpyCNN(w)
    _check_same("CNN", z.step(x, t), h.step(x, t), [p.data for p in z.params], h.w, 1e-4)
    fns = {"z": lambda: z.step(x, t), "h": lambda: h.step(x, t)}
    if torch is not None:
        tc = TorchCNN(torch, w)
        xt, tt = torch.tensor(x), torch.tensor(t)
        fns["t"] = lambda: tc.step(xt, tt)
    ms = {k: v * 1e3 for k, v in side_by_side(fns, 21, statistics.median).items()}
    case = "conv3x3 1→16 pad 1, relu, pool 2, linear 10; batch 32×28×28"
    return [_row("CNN training step (ms)", case, ms, "≤ 1.15× numpy")]


# -- RSS over 1,000 MLP steps -------------------------------------------------------------------


def rss_bytes() -> int:
    """Resident set size of this process now."""
    try:
        import psutil

        return psutil.Process().memory_info().rss
    except ImportError:
        with open("/proc/self/statm") as f:  # Linux
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def rss_rows(steps: int = 1000, warmup: int = 100) -> list[dict]:
    x, t = mlp_data()
    z = ZerogradMLP(mlp_weights(), "relu")
    gc.collect()
    samples = []
    t0 = time.perf_counter()
    for i in range(steps):
        z.step(x, t)
        if i + 1 >= warmup and (i + 1) % 100 == 0:
            samples.append(rss_bytes())
    elapsed = time.perf_counter() - t0
    growth = (samples[-1] - samples[0]) / 2**20
    return [
        {
            "group": "memory over 1,000 MLP steps (relu)",
            "case": f"RSS after step {warmup} → {steps} (MiB)",
            "zerograd": samples[-1] / 2**20, "numpy": None, "torch": None, "ratio": None,
            "zerograd_ms": None, "numpy_ms": None, "torch_ms": None,
            "target": "flat after warm-up",
            "note": f"growth {growth:+.1f} MiB (start {samples[0] / 2**20:.1f} MiB; max "
            f"{max(samples) / 2**20:.1f}); {elapsed / steps * 1e3:.1f} ms/step",
        }
    ]  # fmt: skip


def pin_malloc() -> bool:
    """Stop glibc from mmap-ing and returning large blocks (no page faults per temporary).

    With glibc's defaults every temporary above the mmap threshold can be a fresh mapping
    that the kernel zero-fills, a cost of 1-2 ms per MLP step that moves with the order of
    allocations rather than with the work done. Pinning applies to all columns alike.
    Returns False where it cannot be done (not glibc).
    """
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        big = 1 << 30
        return bool(libc.mallopt(M_MMAP_THRESHOLD, big)) and bool(
            libc.mallopt(M_TRIM_THRESHOLD, big)
        )
    except (OSError, AttributeError):
        return False


def _pinned(rows: list[dict]) -> list[dict]:
    for r in rows:
        r["case"] += " (malloc pinned)"
        r["note"] = "glibc mmap/trim thresholds 1 GiB" + (f"; {r['note']}" if r["note"] else "")
    return rows


def run() -> list[dict]:
    """All rows: MLP (sigmoid, relu), CNN, RSS; then MLP and CNN again with malloc pinned."""
    rows = mlp_rows() + cnn_rows() + rss_rows()
    if pin_malloc():
        rows += _pinned(mlp_rows() + cnn_rows())
    return rows


if __name__ == "__main__":
    for r in run():
        print(r, file=sys.stdout)
