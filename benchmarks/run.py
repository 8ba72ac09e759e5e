"""Run every benchmark module and write benchmarks/results.md (a markdown table).

Run through nox (`nox -s bench`), which pins BLAS to one thread. Ratios, not absolute
times, are the targets: every row is measured side by side in the same run.
"""

from __future__ import annotations

import importlib
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
MODULES = ["bench_core", "bench_nn", "bench_gpu", "bench_distributed"]


def fmt(v: object) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def main() -> None:
    only = sys.argv[1:]
    rows = []
    for name in MODULES:
        if only and name not in only:
            continue
        if not (HERE / f"{name}.py").exists():
            continue
        t0 = time.perf_counter()
        rows += importlib.import_module(name).run()
        print(f"{name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    import numpy

    torch = "not installed"
    try:
        import torch as _t

        torch = _t.__version__
    except Exception:
        pass
    lines = [
        "# Benchmark results",
        "",
        f"Python {platform.python_version()}, numpy {numpy.__version__}, torch {torch}, "
        f"{platform.machine()}, BLAS threads pinned to 1. Written by `nox -s bench` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        "| group | case | zerograd | hand-written numpy | PyTorch CPU | ratio | target | note |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        ratio = "–" if r.get("ratio") is None else f"{r['ratio']:.2f}×"
        cells = [
            r["group"],
            r["case"],
            fmt(r.get("zerograd")),
            fmt(r.get("numpy")),
            fmt(r.get("torch")),
            ratio,
            r.get("target", ""),
            r.get("note", ""),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    (HERE / "results.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
