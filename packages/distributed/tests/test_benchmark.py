"""benchmarks/bench_distributed.py (run by `nox -s bench`) runs end to end on 2 ranks."""

from __future__ import annotations

from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"


def test_benchmark_script_runs_end_to_end(monkeypatch):
    if not (BENCH / "bench_distributed.py").is_file():
        pytest.skip(f"no benchmarks/bench_distributed.py at {BENCH} (not a source checkout)")
    monkeypatch.syspath_prepend(str(BENCH))
    import bench_distributed

    averaging, in_step, scaling = bench_distributed.run(repeat=4)
    assert "MLP 784-1000-1000-10 (1.80 M float32, 6.9 MiB)" in averaging["case"]
    assert averaging["zerograd"] > 0 and averaging["numpy"] > 0
    assert averaging["ratio"] == pytest.approx(averaging["zerograd"] / averaging["numpy"])
    assert "update() with averaging minus one rank's update()" in in_step["case"]
    assert in_step["numpy"] == averaging["numpy"]  # the same raw Allreduce
    assert in_step["ratio"] == pytest.approx(in_step["zerograd"] / in_step["numpy"])
    assert "SGD.update() alone" in in_step["note"]
    assert scaling["zerograd"] > 0 and scaling["ratio"] > 0
    assert "weak-scaling efficiency" in scaling["note"]
