"""Shared by the benchmark modules: fresh-process measurements, rounds, table rows.

Every measurement runs in a fresh process (``child.py``) per (framework, workload,
threads), so thread settings, allocator state and imports never leak from one framework
or one row to the next. Rounds rotate the order of the frameworks, so that noise from the
shared machine hits all of them alike; the table shows medians over rounds.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from workloads import threads_env

HERE = Path(__file__).parent
# every framework module (fw_<key>.py) and the name the table and the notes give it
NAMES = {
    "zerograd": "zerograd",
    "static": "zerograd static",  # the same steps under zerograd.static_graph, replayed
    "numpy": "numpy-hand",
    "torch": "PyTorch",
    "dezero": "DeZero",
    "tape": "tape engine",
    "graph": "book graph",
    "onnx": "ONNX Runtime",  # runs the file zerograd-onnx exports (bench_onnx: in the note)
}
REFERENCES = ("tape", "graph")  # reference engines: named in the per-op note, not columns
NOTED = (*REFERENCES, "onnx")  # measured, named in their rows' notes, not columns
COLUMNS = tuple(fw for fw in NAMES if fw not in NOTED)  # the table's columns, in order
# the columns that record a graph: the static column replays steps, it builds none
GRAPHS = tuple(fw for fw in COLUMNS if fw not in ("numpy", "static"))


def missing(fw: str) -> str | None:
    """Why framework ``fw`` cannot be measured here, or None when it can."""
    needs = {
        "torch": ("torch",),
        "dezero": ("dezero", "matplotlib"),
        "onnx": ("zerograd_onnx", "onnxruntime"),
    }.get(fw, ())
    for name in needs:
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed"
    return None


def available(*fws: str) -> list[str]:
    """The frameworks among ``fws`` that are installed."""
    return [fw for fw in fws if missing(fw) is None]


def launch(
    fw: str,
    workload: str,
    threads: int = 1,
    params: dict | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> dict:
    """Run one workload of one framework in a fresh process; its result, or ``{"error"}``.

    ``env`` adds variables to the child's environment (after the thread settings).
    """
    spec = json.dumps({"fw": fw, "workload": workload, "threads": threads, "params": params})
    cmd = [sys.executable, str(HERE / "child.py"), spec]
    full_env = {**threads_env(threads), **(env or {})}
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    tail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    print(f"{fw} {workload}: {done.stderr[-2000:]}", file=sys.stderr)
    return {"error": tail}


def rounds(
    fws: list[str],
    configs: dict,
    n: int,
) -> dict[str, dict[str, list[dict]]]:
    """``n`` rounds; each runs every config once per framework, one fresh process each.

    ``configs`` maps a name to ``(workload, threads, params)`` or ``(workload, threads,
    params, env)``: ``params(fw)`` gives the workload's keyword arguments, ``env`` extra
    environment variables. The order of the frameworks rotates every round.
    Returns ``{config: {framework: [result of each round]}}`` (a failure is ``{"error"}``).
    """
    out = {c: {fw: [] for fw in fws} for c in configs}
    for r in range(n):
        order = fws[r % len(fws) :] + fws[: r % len(fws)]
        for c, (workload, threads, params, *env) in configs.items():
            for fw in order:
                out[c][fw].append(launch(fw, workload, threads, params(fw), *env))
    return out


def median_of(results: list[dict], get: Callable[[dict], float]) -> float | None:
    """Median of ``get(result)`` over the rounds that succeeded; None if none did."""
    values = [get(r) for r in results if "error" not in r]
    return statistics.median(values) if values else None


def spread(results: dict[str, list[dict]], get: Callable[[dict], float]) -> str:
    """A note naming each framework whose processes disagreed by more than a quarter, with
    its lowest and highest value: where this machine moved a median, and by how much."""
    parts = []
    for fw, rs in results.items():
        values = [get(r) for r in rs if "error" not in r]
        if len(values) > 1 and min(values) > 0 and max(values) > 1.25 * min(values):
            parts.append(f"{NAMES.get(fw, fw)} {min(values):.3g}–{max(values):.3g}")
    return "processes ranged (host noise): " + ", ".join(parts) if parts else ""


def errors(results: dict[str, list[dict]]) -> str:
    """A note naming the frameworks whose processes failed, with their last error line."""
    notes = []
    for fw, rs in results.items():
        failed = [r["error"] for r in rs if "error" in r]
        if failed:
            notes.append(f"{fw} failed {len(failed)}/{len(rs)} rounds: {failed[-1]}")
    return "; ".join(notes)


def absent_note(fws: tuple[str, ...]) -> str:
    """A note saying which of ``fws`` could not be measured and why."""
    return "; ".join(f"{fw} column empty: {why}" for fw in fws if (why := missing(fw)))


def join(*notes: str) -> str:
    """The non-empty notes, joined."""
    return "; ".join(n for n in notes if n)


def row(
    group: str,
    case: str,
    values: dict[str, float | None],
    ref: str | None = None,
    target: str = "",
) -> dict:
    """One table row; ``ref`` names the column the ratios are taken against. The caller
    sets ``met`` (target met: True/False) and ``note`` once it knows them."""
    r = {"group": group, "case": case, "ref": ref, "target": target, "met": None, "note": ""}
    for col in COLUMNS:
        r[col] = values.get(col)
    z, base = r["zerograd"], r.get(ref) if ref else None
    r["ratio"] = z / base if z is not None and base else None
    return r


STATIC_GROUP = "static-graph replay (zerograd.static_graph), 1 thread"


def static_row(case: str, values: dict[str, float | None], ref: str, limit: float) -> dict:
    """A row of the replay's targets: its ratio is the static column's to ``ref``'s.

    ``values`` holds at least the ``static`` and ``ref`` columns (the caller copies them
    from the rows that measured them); the note gives eager zerograd's ratio beside it.
    """
    r = row(STATIC_GROUP, case, values, ref=ref, target=f"≤ {limit:g}× {NAMES[ref]}")
    s, base, eager = values.get("static"), values.get(ref), values.get("zerograd")
    r["ratio"] = s / base if s is not None and base else None
    r["met"] = None if r["ratio"] is None else r["ratio"] <= limit
    if ref != "zerograd" and eager is not None and base:
        r["note"] = f"ratio of zerograd static; eager zerograd {eager / base:.2f}×"
    return r


def side_by_side(
    fns: dict[str, Callable[[], object]],
    repeat: int = 9,
    stat: Callable[[list[float]], float] = min,
) -> dict[str, float]:
    """Seconds per call of each function in this process, runs interleaved (bench_gpu).

    ``stat`` summarizes the runs: ``min`` (the least disturbed run) for microbenchmarks,
    ``statistics.median`` for steps whose time legitimately varies (allocation, caches).
    """
    for fn in fns.values():  # warm-up
        fn()
        fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: stat(v) for k, v in times.items()}
