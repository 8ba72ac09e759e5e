"""benchmarks/bench_gpu.py's fused-chain row, run on numpy with the step-by-step reference
as the backend's ``fuse``: the row comes out whole, and it times the chain it says."""

from __future__ import annotations

import numpy as np

from zerograd.backends import backend_of
from zerograd.testing.chains import fuse_step_by_step


def test_the_fused_chain_row_replays_one_chain_of_six_ops_with_the_unfused_bits(
    bench_module, monkeypatch
):
    bench = bench_module("bench_gpu")
    fused = fuse_step_by_step(monkeypatch, backend_of(np.zeros(1)))
    (row,) = bench.fusion_rows(backend_of(np.zeros(1)), None, repeat=2)
    assert [r.ops for r in fused] == [["mul", "add", "tanh", "mul", "div", "sub"]]
    # warm-up, timed and checked calls, less one eager and two recorded calls
    assert fused[0].runs == 3 + 2 + 1 - 3
    assert row["note"].endswith("same bits ✓")
    assert row["zerograd"] > 0 and row["ratio"] > 0 and row["unit"] == "ms"
