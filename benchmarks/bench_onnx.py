"""Inference rows: ONNX Runtime on the files zerograd-onnx exports from the MLP and the CNN,
beside zerograd's own forward and PyTorch's (a report: no target).

Every column runs the same seeded float32 network on the same batch, each framework in its
own fresh processes on 1 thread; the note gives ONNX Runtime's time and checks that its
outputs are zerograd's within rtol = atol = 1e-5.
"""

from __future__ import annotations

import importlib.metadata

import numpy as np
from common import NAMES, available, errors, join, median_of, missing, rounds, row, spread

CASES = {
    "MLP": ("mlp", "relu", "MLP 784-1000-1000-10 relu forward, batch 100"),
    "CNN": ("cnn", "relu", "CNN conv3x3 1→16 pad 1, relu, max-pool 2, linear 10 forward; batch 32"),
}
GROUP = "inference (forward only), ms (1 thread)"


def _agreement(results: dict[str, list[dict]]) -> str:
    """Whether ONNX Runtime's first output is zerograd's within rtol = atol = 1e-5."""
    firsts = {
        fw: next((np.asarray(r["out"]) for r in results.get(fw, []) if "error" not in r), None)
        for fw in ("zerograd", "onnx")
    }
    ours, theirs = firsts["zerograd"], firsts["onnx"]
    if ours is None or theirs is None:
        return ""
    worst = float(np.max(np.abs(theirs - ours)))
    if np.allclose(theirs, ours, rtol=1e-5, atol=1e-5):
        return f"outputs agree with zerograd's (max abs error {worst:.2g}) ✓"
    return f"⚠ ONNX Runtime's outputs differ from zerograd's by up to {worst:.3g}"


def run(n: int = 3, reps: int = 20) -> list[dict]:
    """One row per network: zerograd's and PyTorch's forward in the columns, ONNX Runtime's
    in the note."""
    fws = available("zerograd", "torch", "onnx")
    configs = {
        name: ("infer", 1, lambda fw, p={"model": m, "act": a, "reps": reps}: p)
        for name, (m, a, _) in CASES.items()
    }
    res = rounds(fws, configs, n)
    rows = []
    for name, results in res.items():
        values = {fw: median_of(results[fw], lambda r: r["ms"]) for fw in fws}
        r = row(GROUP, CASES[name][2], values, ref="torch", target="(report)")
        ort, ours = values.get("onnx"), values.get("zerograd")
        if ort is not None:
            version = importlib.metadata.version("onnxruntime")
            versus = f" = {ort / ours:.2f}× zerograd" if ours else ""
            if values.get("torch"):
                versus += f", {ort / values['torch']:.2f}× PyTorch"
            ort_note = f"{NAMES['onnx']} {version} on the exported file: {ort:.3g} ms{versus}"
        else:
            ort_note = f"{NAMES['onnx']} not measured: {missing('onnx')}"
        r["note"] = join(
            ort_note,
            _agreement(results),
            f"median of {n} processes × {reps} forwards, CPU time",
            spread(results, lambda r: r["ms"]),
            errors(results),
            "; ".join(f"{fw} column empty: {why}" for fw in ("torch",) if (why := missing(fw))),
        )
        rows.append(r)
    return rows
