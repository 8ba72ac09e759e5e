"""Core engine benchmarks: per-op overhead, wide-graph backward, a 100,000-op chain."""

from __future__ import annotations

import gc
import time
import tracemalloc
from functools import partial

import numpy as np
from common import side_by_side, try_torch

import zerograd.functions as F
from zerograd import Variable

OPS = ("add", "mul", "tanh", "sin")
CHAIN = 1000


def _zerograd_chain(x0: np.ndarray, c: np.ndarray, ops: tuple[str, ...]) -> None:
    x = Variable(x0)
    y = x
    for i in range(CHAIN):
        op = ops[i % len(ops)]
        if op == "add":
            y = y + c
        elif op == "mul":
            y = y * c
        elif op == "tanh":
            y = F.tanh(y)
        else:
            y = F.sin(y)
    y.backward()


def _numpy_chain(x0: np.ndarray, c: np.ndarray, ops: tuple[str, ...]) -> None:
    """The same chain by hand: forward keeps what backward needs, backward applies the rules."""
    tape = []
    y = x0
    for i in range(CHAIN):
        op = ops[i % len(ops)]
        if op == "add":
            tape.append((op, None))
            y = y + c
        elif op == "mul":
            tape.append((op, None))
            y = y * c
        elif op == "tanh":
            y = np.tanh(y)
            tape.append((op, y))
        else:
            tape.append((op, y))
            y = np.sin(y)
    g = np.ones_like(y)
    for op, saved in reversed(tape):
        if op == "mul":
            g = g * c
        elif op == "tanh":
            g = g * (1 - saved * saved)
        elif op == "sin":
            g = g * np.cos(saved)


def _torch_chain(torch, x0: np.ndarray, c: np.ndarray, ops: tuple[str, ...]) -> None:
    x = torch.tensor(x0, requires_grad=True)
    ct = torch.tensor(c)
    y = x
    for i in range(CHAIN):
        op = ops[i % len(ops)]
        if op == "add":
            y = y + ct
        elif op == "mul":
            y = y * ct
        elif op == "tanh":
            y = torch.tanh(y)
        else:
            y = torch.sin(y)
    y.backward(torch.ones_like(y))


def per_op_rows() -> list[dict]:
    torch = try_torch()
    rows = []
    cases = [("add,mul,tanh,sin", OPS)] + [(op, (op,)) for op in OPS]
    for n in (1, 10):
        x0 = np.linspace(0.1, 0.5, n)
        c = np.full(n, 0.999)
        for label, ops in cases:
            fns = {
                "z": partial(_zerograd_chain, x0, c, ops),
                "h": partial(_numpy_chain, x0, c, ops),
            }
            if torch is not None:
                fns["t"] = partial(_torch_chain, torch, x0, c, ops)
            best = {k: v / CHAIN * 1e6 for k, v in side_by_side(fns).items()}
            z, h, t = best["z"], best["h"], best.get("t")
            rows.append(
                {
                    "group": "per-op overhead (µs/op, fwd+bwd)",
                    "case": f"{label}, {n} elem",
                    "zerograd": z,
                    "numpy": h,
                    "torch": t,
                    "ratio": z / h,
                    "target": "≤ 5× numpy (torch ≈ 7×)",
                    "note": f"torch {t / h:.1f}× numpy" if t else "",
                }
            )
    return rows


def _wide(k: int) -> float:
    w = Variable(np.full(10, 0.5))
    xs = [Variable(np.full(10, float(i % 7))) for i in range(k)]
    y = xs[0] * w
    for x in xs[1:]:
        y = y + x * w
    t0 = time.perf_counter()
    y.backward()
    return time.perf_counter() - t0


def wide_rows() -> list[dict]:
    rows, base = [], None
    for k in (1000, 4000, 16000):
        t = min(_wide(k) for _ in range(3))
        base = base or t
        rows.append(
            {
                "group": "wide-graph backward (ms)",
                "case": f"K = {k}",
                "zerograd": t * 1e3,
                "numpy": None,
                "torch": None,
                "ratio": t / base,
                "target": "16× K ≤ 20× time" if k == 16000 else "",
                "note": f"{t / k * 1e6:.2f} µs per variable",
            }
        )
    return rows


def chain_rows() -> list[dict]:
    n = 100_000
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    x = Variable(np.array([0.5]))
    y = x
    for _ in range(n):
        y = F.tanh(y)
    t_fwd = time.perf_counter() - t0
    retained, _ = tracemalloc.get_traced_memory()
    t0 = time.perf_counter()
    y.backward()
    t_bwd = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del x, y
    return [
        {
            "group": "100,000-op chain (tanh)",
            "case": "forward / backward (s)",
            "zerograd": t_fwd,
            "numpy": None,
            "torch": None,
            "ratio": None,
            "target": "no RecursionError",
            "note": f"backward {t_bwd:.2f} s",
        },
        {
            "group": "100,000-op chain (tanh)",
            "case": "memory per retained op (bytes)",
            "zerograd": retained / n,
            "numpy": None,
            "torch": None,
            "ratio": None,
            "target": "< 1024 B",
            "note": f"peak during backward {peak / n:.0f} B/op",
        },
    ]


def run() -> list[dict]:
    return per_op_rows() + wide_rows() + chain_rows()
