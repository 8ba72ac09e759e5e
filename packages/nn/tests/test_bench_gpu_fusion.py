"""benchmarks/bench_gpu.py's fused-chain rows, run on numpy with the step-by-step reference
as the backend's ``fuse``: the rows come out whole, and they time the chains they say."""

from __future__ import annotations

import numpy as np

from zerograd.backends import backend_of
from zerograd.testing.chains import fuse_step_by_step


def test_the_fused_chain_rows_replay_their_chains_with_the_unfused_bits(bench_module, monkeypatch):
    bench = bench_module("bench_gpu")
    fused = fuse_step_by_step(monkeypatch, backend_of(np.zeros(1)))
    rows = bench.fusion_rows(backend_of(np.zeros(1)), None, repeat=2)
    assert [r.ops for r in fused] == [
        ["mul", "add", "tanh", "mul", "div", "sub"],  # the no_grad chain
        ["mul", "add", "tanh"],  # the step's forward
        ["mul", "mul", "sub", "mul", "mul"],  # its backward: * 0.5, tanh's vjp, then * x
    ]
    # warm-up, timed and checked calls, less one eager and two recorded calls
    assert all(r.runs == 3 + 2 + 1 - 3 for r in fused)
    assert rows[0]["note"].endswith("same bits ✓")
    assert rows[1]["note"].endswith("same bits of w.grad ✓")
    for row in rows:
        assert row["zerograd"] > 0 and row["ratio"] > 0 and row["unit"] == "ms"
