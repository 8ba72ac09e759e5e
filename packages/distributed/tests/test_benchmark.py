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

    averaging, scaling = bench_distributed.run(repeat=4)
    assert "MLP 784-1000-1000-10 (1.80 M float32, 6.9 MiB)" in averaging["case"]
    assert averaging["zerograd"] > 0 and averaging["numpy"] > 0
    assert averaging["ratio"] == pytest.approx(averaging["zerograd"] / averaging["numpy"])
    assert scaling["zerograd"] > 0 and scaling["ratio"] > 0
    assert "weak-scaling efficiency" in scaling["note"]
