"""Function-transform rows: zerograd.func beside torch.func, 1 thread.

A Hessian of a 100-parameter function, and per-sample gradients of an MLP 784-100-10 over a
batch of 64 with ``vmap(grad(loss))`` and with a Python loop of ``grad`` (PyTorch's column:
``torch.func.vmap(torch.func.grad(loss))`` and a loop of ``torch.func.grad``). Each framework
runs in its own fresh processes (see ``common``); the workloads are in ``fw_zerograd.py`` and
``fw_torch.py`` (``FUNC_CASES``), from the same numpy arrays (``workloads.func_mlp``,
``workloads.hessian_problem``).
"""

from __future__ import annotations

import numpy as np
from common import absent_note, available, errors, join, median_of, rounds, row, spread

GROUP = "function transforms (zerograd.func vs torch.func), ms, 1 thread"
FWS = ("zerograd", "torch")
CASES = {
    "hessian": (
        "hessian of a 100-parameter function: Σ tanh(Ax)² + Σ x⁴/4, A 50×100, float64",
        21,
        1e-9,
    ),
    "per_sample_vmap": (
        "per-sample gradients, MLP 784-100-10 relu, batch 64, float32: vmap(grad(loss))",
        21,
        1e-4,
    ),
    "per_sample_loop": (
        "the same per-sample gradients by a Python loop of grad over the 64 samples",
        5,
        1e-4,
    ),
}


def _same(res: dict[str, list[dict]], rtol: float) -> str:
    """✓ when zerograd's results (sums of the gradients or Hessian) equal PyTorch's."""
    checks = {
        fw: next((r["check"] for r in rs if "error" not in r), None) for fw, rs in res.items()
    }
    z, t = checks.get("zerograd"), checks.get("torch")
    if z is None or t is None:
        return ""
    if np.allclose(z, t, rtol=rtol):
        return "same results as PyTorch ✓"
    return f"⚠ results differ from PyTorch's: {z} vs {t}"


def run(n: int = 5) -> list[dict]:
    """The rows: each case measured in ``n`` rounds of fresh processes per framework."""
    fws = available(*FWS)
    configs = {
        case: ("func", 1, lambda fw, c=case, reps=reps: {"case": c, "reps": reps})
        for case, (_, reps, _) in CASES.items()
    }
    res = rounds(fws, configs, n)
    ms = {c: {fw: median_of(res[c][fw], lambda r: r["ms"]) for fw in fws} for c in CASES}
    rows = []
    for case, (text, reps, rtol) in CASES.items():
        values = ms[case]
        if case == "per_sample_loop":
            r = row(GROUP, text, values, ref=None, target="vmap ≤ 0.2× the loop (≥ 5× faster)")
            loop, vmapped = values.get("zerograd"), ms["per_sample_vmap"].get("zerograd")
            r["ratio"] = vmapped / loop if loop and vmapped else None
            r["met"] = None if r["ratio"] is None else r["ratio"] <= 0.2
            torch_loop, torch_vmap = values.get("torch"), ms["per_sample_vmap"].get("torch")
            note = "ratio: zerograd's vmap row over this loop"
            if loop and vmapped:
                note += f" (vmap {loop / vmapped:.1f}× faster)"
            if torch_loop and torch_vmap:
                note += (
                    f"; torch.func's vmap is {torch_loop / torch_vmap:.1f}× faster than its loop"
                )
        else:
            r = row(GROUP, text, values, ref="torch", target="≤ 1.0× torch.func")
            r["met"] = None if r["ratio"] is None else r["ratio"] <= 1.0
            note = {
                "hessian": "PyTorch: torch.func.hessian",
                "per_sample_vmap": "PyTorch: torch.func.vmap(torch.func.grad(loss))",
            }[case]
        r["note"] = join(
            note,
            _same(res[case], rtol),
            f"CPU time, median of {n} processes × {reps} calls",
            spread(res[case], lambda x: x["ms"]),
            errors(res[case]),
            absent_note(tuple(f for f in FWS if f not in fws)),
        )
        rows.append(r)
    return rows
