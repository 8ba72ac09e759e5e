"""The inference rows' ONNX Runtime column (benchmarks/fw_onnx.py) runs the network the
zerograd column runs: same outputs, within rtol = atol = 1e-5."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_onnx_runtime_runs_the_benchmarked_network(model, monkeypatch):
    if not (BENCHMARKS / "fw_onnx.py").is_file():
        pytest.skip(f"{BENCHMARKS} not found (tests run outside the repository checkout)")
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    for name in ("fw_onnx", "fw_zerograd", "workloads"):
        sys.modules.pop(name, None)
    import fw_onnx
    import fw_zerograd
    import workloads

    if model == "mlp":
        weights, (x, _) = workloads.mlp_weights(), workloads.mlp_data(n=7)
    else:
        weights, (x, _) = workloads.cnn_weights(), workloads.cnn_data(n=3)
    fw_onnx.setup(1)
    theirs = fw_onnx.inference(model, weights, "relu", x)
    ours = fw_zerograd.inference(model, weights, "relu", x)
    other = np.concatenate([x, x[:2]])  # another batch size than the exported example's
    for batch in (x, other):
        np.testing.assert_allclose(theirs(batch), ours(batch), rtol=1e-5, atol=1e-5)
