"""Run the benchmark modules and write benchmarks/results.md (a markdown table).

``nox -s bench`` runs all of them; ``python benchmarks/run.py bench_core`` runs one module.
Every row is measured side by side in the same run, each framework in its own fresh
processes (see common.py and README.md); the targets are ratios to the reference the
target names (numpy-hand or PyTorch), not absolute times.

A whole run takes 7 to 11 minutes on the shared 2-core development machine at load
average 4 to 4.5: the last took 7.4 minutes (bench_core 1.8, bench_nn 5.5,
bench_distributed 0.1; bench_gpu skips itself without a GPU), the one before 10.7.
bench_onnx (added since) took 0.8 minutes on its own at load average 7.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from common import COLUMNS, NAMES  # noqa: E402

# bench_gpu: a section of its own
MODULES = ["bench_core", "bench_nn", "bench_calls", "bench_func", "bench_onnx", "bench_distributed"]


def fmt(v: object) -> str:
    """A cell: 3 significant digits, thousands separated, ``–`` for nothing."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def cell(r: dict, col: str) -> str:
    """A framework's value, with its ratio to the row's reference when it is not zerograd
    (whose ratio has its own column) and not the reference itself."""
    v, ref = r.get(col), r.get("ref")
    base = r.get(ref) if ref else None
    if v is None or not base or col in ("zerograd", ref):
        return fmt(v)
    return f"{fmt(v)} ({v / base:.2f}×)"


def version(dist: str) -> str:
    """The installed version of ``dist``, or ``not installed``."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def table(rows: list[dict], minutes: float) -> str:
    """The markdown text of results.md."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    lines = [
        "# Benchmark results",
        "",
        f"Python {platform.python_version()}, numpy {version('numpy')}, torch "
        f"{version('torch')}, DeZero {version('dezero')}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs (load average at the end {load}). Written by `nox -s bench` "
        f"on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; the run took "
        f"{minutes:.1f} min.",
        "",
        "Each framework runs in a fresh process per (framework, workload, threads), 1 thread "
        "unless the row says 2; rounds rotate the frameworks; cells are medians over rounds "
        "(a note gives the range where one framework's processes differ by over a quarter). "
        "Times are the process's CPU time on 1 thread (preemption by other users of the "
        "machine does not count) and wall clock on 2 threads. "
        "`(n×)` after a value and the ratio column are against the row's reference: "
        "numpy-hand for per-op overhead, PyTorch for the training steps and the wide graph. "
        "See benchmarks/README.md.",
        "",
        "| group | case | " + " | ".join(NAMES[c] for c in COLUMNS) + " | zerograd ratio "
        "| target | met | note |",
        "|" + " --- |" * (len(COLUMNS) + 6),
    ]
    for r in rows:
        ratio = "–" if r.get("ratio") is None else f"{r['ratio']:.2f}×"
        met = {True: "yes", False: "**no**", None: "–"}[r.get("met")]
        cells = [r["group"], r["case"], *(cell(r, c) for c in COLUMNS), ratio]
        cells += [r.get("target", ""), met, r.get("note", "")]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    only = sys.argv[1:]
    rows = []
    start = time.perf_counter()
    for name in MODULES:
        if only and name not in only:
            continue
        if not (HERE / f"{name}.py").exists():
            continue
        t0 = time.perf_counter()
        rows += importlib.import_module(name).run()
        print(f"{name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    text = table(rows, (time.perf_counter() - start) / 60)
    results = HERE / "results.md"
    import bench_gpu

    gpu = bench_gpu.section() if not only or "bench_gpu" in only else None
    if gpu is None and results.exists():  # no GPU here: keep the section measured on one
        old = results.read_text()
        if bench_gpu.BEGIN in old and bench_gpu.END in old:
            kept = old.split(bench_gpu.BEGIN, 1)[1].split(bench_gpu.END, 1)[0]
            gpu = bench_gpu.BEGIN + kept + bench_gpu.END + "\n"
    results.write_text(text + ("\n" + gpu if gpu else ""))
    print(text)


if __name__ == "__main__":
    main()
