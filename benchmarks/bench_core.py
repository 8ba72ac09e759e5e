"""Engine rows: per-op overhead, wide-graph backward, memory of a 100,000-op chain.

Each framework runs in fresh processes (see ``common``); the workloads themselves are in
``child.py`` and the ``fw_*.py`` modules.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

from common import (
    COLUMNS,
    GRAPHS,
    HERE,
    NAMES,
    REFERENCES,
    absent_note,
    available,
    errors,
    join,
    median_of,
    rounds,
    row,
    spread,
    static_row,
)
from workloads import CHAIN, CHAIN_CASES, DEEP_N, WIDE_K, threads_env

_COUNTED = ("zerograd", "static", "numpy")  # the columns the instruction row counts
_CHAIN_RUN = """
import importlib, sys
from workloads import CHAIN, OPS, chain, chain_inputs
fw = importlib.import_module("fw_" + sys.argv[1])
x0, c = chain_inputs()
for _ in range(2 + int(sys.argv[2])):  # two warm-up chains (a replay records first)
    chain(fw, x0, c, OPS, CHAIN)
"""


def _instructions(fw: str, chains: int) -> int:
    """Instructions (cachegrind's "I refs") of a process running ``chains`` chains of ``fw``."""
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    cmd += [sys.executable, "-c", _CHAIN_RUN, fw, str(chains)]
    env = {**threads_env(1), "PYTHONHASHSEED": "0", "PYTHONPATH": str(HERE)}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=HERE, check=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise RuntimeError(f"cachegrind printed no instruction count: {done.stderr[-300:]}")
    return int(found.group(1).replace(",", ""))


def instruction_row(few: int = 2, many: int = 12) -> dict:
    """The mixed chain's cost in CPU instructions per op, fwd+bwd: the per-op row without
    the host's noise. Each framework runs ``few`` and ``many`` chains under valgrind's
    cachegrind; the difference over ``(many - few) * CHAIN`` ops is the cost of one op.
    """
    values: dict[str, float | None] = dict.fromkeys(_COUNTED)
    why = ""
    if shutil.which("valgrind") is None:
        why = "not measured: valgrind is not installed (apt install valgrind)"
    else:
        for fw in available(*_COUNTED):
            a, b = _instructions(fw, few), _instructions(fw, many)
            values[fw] = (b - a) / ((many - few) * CHAIN)
    r = row(
        "per-op overhead, µs/op (fwd+bwd, 1 thread)",
        f"{CHAIN:,}-op chain: add,mul,tanh,sin, CPU instructions per op (cachegrind)",
        values,
        ref="numpy",
        target="≤ 3× numpy-hand",
    )
    if r["ratio"] is not None:
        r["met"] = r["ratio"] <= 3
    s, base = values.get("static"), values.get("numpy")
    r["note"] = why or join(
        s and base and f"zerograd static {s / base:.2f}× numpy-hand",
        f"one process each of {few} and {many} chains (after 2 warm-up chains), the "
        f"difference per op",
    )
    return r


def per_op_rows(n: int = 5, reps: int = 15) -> list[dict]:
    """The 1,000-op chain cycling add, mul, tanh, sin, then each op alone; µs per op.

    Two reference engines run beside the frameworks (``fw_tape.py``: a first-order tape;
    ``fw_graph.py``: the book's graph and nothing more); their ratios go in the note, to
    show what any Python engine, and the book's graph itself, cost on the chain.
    """
    fws = available(*COLUMNS) + list(REFERENCES)
    res = rounds(fws, {"per_op": ("per_op", 1, lambda fw: {"reps": reps})}, n)["per_op"]
    rows = []
    for case in CHAIN_CASES:
        values = {fw: median_of(res[fw], lambda r, c=case: r["us_per_op"][c]) for fw in fws}
        mixed = case == "add,mul,tanh,sin"
        r = row(
            "per-op overhead, µs/op (fwd+bwd, 1 thread)",
            f"{CHAIN:,}-op chain: {case}, 1 element" + ("" if mixed else " (breakdown)"),
            values,
            ref="numpy",
            target="≤ 3× numpy-hand" if mixed else "(breakdown)",
        )
        if mixed and r["ratio"] is not None:
            r["met"] = r["ratio"] <= 3
        base = values.get("numpy")
        others = ", ".join(
            f"{NAMES[fw]} {v / base:.1f}×"
            for fw, v in values.items()
            if fw not in ("zerograd", "numpy") and v is not None and base
        )
        r["note"] = join(
            others and f"vs numpy-hand: {others}",
            _same_gradient(res, case),
            f"CPU time, median of {n} processes × {reps} chains" if mixed else "",
            spread(res, lambda r, c=case: r["us_per_op"][c]) if mixed else "",
            errors(res) if mixed else "",
            absent_note(COLUMNS) if mixed else "",
        )
        rows.append(r)
        if mixed:
            static = static_row(f"{CHAIN:,}-op chain fwd+bwd, µs/op", values, "numpy", 1.5)
            static["note"] = join(static["note"], "from the row above")
            replay_row = static
    return rows + [replay_row, instruction_row()]


def _same_gradient(res: dict[str, list[dict]], case: str, rtol: float = 1e-9) -> str:
    """✓ when every framework's gradient of the chain's input equals numpy-hand's."""
    grads = {fw: r["grad"][case] for fw, rs in res.items() for r in rs if "grad" in r}
    ref = grads.get("numpy")
    if ref is None:
        return ""
    off = [NAMES[fw] for fw, g in grads.items() if abs(g - ref) > rtol * abs(ref)]
    if off:
        return f"input gradient differs from numpy-hand's: {', '.join(off)}"
    return "same gradient ✓"


def wide_rows(n: int = 3, reps: int = 3) -> list[dict]:
    """Backward of ``y = sum_i x_i * w`` (graph built untimed) for K leaves; ms."""
    fws = available(*GRAPHS)
    # DeZero sorts its whole list of pending functions on every insert: one run at
    # K = 16,000 takes over 10 s, so it runs once per round
    params = {"wide": ("wide", 1, lambda fw: {"reps": 1 if fw == "dezero" else reps})}
    res = rounds(fws, params, n)["wide"]
    ms = {k: {fw: median_of(res[fw], lambda r, k=k: r["ms"][str(k)]) for fw in fws} for k in WIDE_K}
    small, big = WIDE_K[0], WIDE_K[-1]
    growth = {fw: ms[big][fw] / ms[small][fw] for fw in fws if ms[big][fw] and ms[small][fw]}
    rows = []
    for k in WIDE_K:
        r = row(
            "wide-graph backward, ms (1 thread)",
            f"K = {k:,} leaves of 10 elements, y = Σ x_i * w",
            ms[k],
            ref="torch",
        )
        if k == big:
            lin = growth.get("zerograd")
            r["target"] = f"≤ 0.5× torch, and {big // small}× K ≤ 20× time"
            if r["ratio"] is not None and lin is not None:
                r["met"] = r["ratio"] <= 0.5 and lin <= 20
            times = ", ".join(f"{NAMES[fw]} {g:.1f}×" for fw, g in growth.items())
            r["note"] = join(
                f"time K={big:,} / K={small:,}: {times}",
                f"backward only, CPU time; median of {n} processes",
                errors(res),
                absent_note(GRAPHS),
            )
        else:
            r["target"] = "(linearity base)" if k == small else ""
        rows.append(r)
    return rows


def deep_rows(n: int = 3) -> list[dict]:
    """Peak memory per op while a 100,000-op tanh chain is built and differentiated."""
    fws = available(*GRAPHS)
    res = rounds(fws, {"deep": ("deep", 1, lambda fw: {})}, n)["deep"]

    def med(key: str) -> dict[str, float | None]:
        return {fw: median_of(res[fw], lambda r: r[key]) for fw in fws}

    peak, kept = med("peak_b_per_op"), med("retained_b_per_op")
    fwd, bwd = med("fwd_s"), med("bwd_s")
    lifetime = any(not r.get("peak_reset", True) for rs in res.values() for r in rs)
    how = (
        "peak RSS (VmHWM; lifetime peak: /proc/self/clear_refs unavailable)"
        if lifetime
        else "peak RSS (VmHWM, reset by /proc/self/clear_refs before the forward)"
    )
    mem = row(
        f"{DEEP_N:,}-op tanh chain (1 element, float64)",
        "peak memory during forward+backward, B/op",
        peak,
        target="≤ 600 B/op",
    )
    if peak.get("zerograd") is not None:
        mem["met"] = peak["zerograd"] <= 600
    kept_s = ", ".join(f"{NAMES[fw]} {v:.0f}" for fw, v in kept.items() if v is not None)
    mem["note"] = join(
        f"{how} minus RSS before it, ÷ {DEEP_N:,}; same probe in every framework's own "
        f"process; retained after forward (B/op): {kept_s}",
        errors(res),
        absent_note(GRAPHS),
    )
    total = {fw: fwd[fw] + bwd[fw] for fw in fws if fwd[fw] is not None}
    t = row(
        f"{DEEP_N:,}-op tanh chain (1 element, float64)",
        "forward + backward, s",
        total,
        ref="torch",
        target="no RecursionError (report)",
    )
    t["note"] = "CPU time; backward alone: " + ", ".join(
        f"{NAMES[fw]} {v:.2f} s" for fw, v in bwd.items() if v is not None
    )
    return [mem, t]


def run() -> list[dict]:
    """Every engine row."""
    return per_op_rows() + wide_rows() + deep_rows()
