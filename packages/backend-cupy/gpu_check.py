"""Run everything that needs a real GPU, in one command, and say what passed.

    python packages/backend-cupy/gpu_check.py [--out DIR] [--only suites,examples,bench]

Prints the GPU, driver, CUDA, CuPy, numpy and PyTorch versions, then runs (each stage in
its own processes, with a time limit, its log kept under ``--out``):

- ``suites``: the backend-cupy tests (GPU checks, kernels, availability), the backend
  conformance suite on cupy, the core and nn suites with ``ZEROGRAD_TEST_BACKEND=cupy``, and
  zerograd-distributed's NCCL tests (one rank; MPI comes from the ``mpich`` wheel);
- ``examples``: the examples on the GPU next to the CPU (``gpu_examples.py``);
- ``bench``: ``benchmarks/bench_gpu.py``, zerograd-cupy next to PyTorch CUDA.

The zerograd packages must be installed (wheels or ``pip install -e``); pytest-xdist is
used when it is there. Exit status: 0 when every suite passed, 1 when a suite failed or
ran nothing (every test skipped: on a GPU machine that hides a missing piece), 3
when there is no usable GPU (nothing else runs then: a CPU machine cannot stand in).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.metadata
import importlib.util
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ROOT / "packages"
STAGES = ("suites", "examples", "bench")


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def describe_machine() -> tuple[list[str], str | None]:
    """Lines naming the GPU, driver and library versions, and why there is no GPU (or None)."""
    lines = [f"python {platform.python_version()} on {platform.machine()}"]
    smi = shutil.which("nvidia-smi")
    if smi:
        query = "--query-gpu=name,driver_version,memory.total"
        done = subprocess.run([smi, query, "--format=csv,noheader"], capture_output=True, text=True)
        lines.append(f"nvidia-smi: {done.stdout.strip() or done.stderr.strip()}")
    else:
        lines.append("nvidia-smi: not found")
    for dist in ("numpy", "cupy-cuda13x", "cupy-cuda12x", "torch", "array-api-compat", "mpi4py"):
        v = _version(dist)
        if v != "not installed" or dist in ("numpy", "torch"):
            lines.append(f"{dist} {v}")
    import zerograd.backends as B

    if "cupy" not in {row.name for row in B.list_backends()}:
        return lines, "the zerograd-cupy plugin is not installed"
    backend = B.get_backend("cupy")
    if not backend.is_available():
        return lines, backend.unavailable_reason()
    import cupy as cp

    rt = cp.cuda.runtime
    props = rt.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    lines.append(
        f"GPU 0: {name}, compute capability {props['major']}.{props['minor']}, "
        f"{props['totalGlobalMem'] / 2**30:.0f} GiB; CUDA runtime {rt.runtimeGetVersion()}, "
        f"driver supports CUDA {rt.driverGetVersion()}; CuPy {cp.__version__}"
    )
    return lines, None


def _xdist(workers: int) -> list[str]:
    if workers > 1 and importlib.util.find_spec("xdist") is not None:
        return ["-n", str(workers)]
    return []


def suites(workers: int) -> dict[str, tuple[list[str], dict[str, str]]]:
    """name -> (pytest arguments, extra environment)."""
    cupy_tests = PACKAGES / "backend-cupy" / "tests"
    on_cupy = {"ZEROGRAD_TEST_BACKEND": "cupy"}
    return {
        "backend-cupy": (
            [str(cupy_tests), "--ignore", str(cupy_tests / "test_cupy_conformance.py")],
            {},
        ),
        "conformance(cupy)": ([str(cupy_tests / "test_cupy_conformance.py")], {}),
        "core(cupy)": ([str(PACKAGES / "core" / "tests"), *_xdist(workers)], on_cupy),
        "nn(cupy)": ([str(PACKAGES / "nn" / "tests"), *_xdist(workers)], on_cupy),
        "distributed(nccl, 1 rank)": (
            [str(PACKAGES / "distributed" / "tests" / "mpi" / "test_nccl.py")],
            {},
        ),
    }


def counts(junit: Path) -> dict[str, int]:
    """passed/failed/errors/skipped from a junit XML file (all -1 when it is missing)."""
    if not junit.exists():
        return {"passed": -1, "failed": -1, "errors": -1, "skipped": -1}
    root = ET.parse(junit).getroot()
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in [root] if root.tag == "testsuite" else root.iter("testsuite"):
        for k in total:
            total[k] += int(suite.get(k, 0))
    passed = total["tests"] - total["failures"] - total["errors"] - total["skipped"]
    return {
        "passed": passed,
        "failed": total["failures"],
        "errors": total["errors"],
        "skipped": total["skipped"],
    }


def _finish(proc: subprocess.Popen, limit: float) -> int | str:
    """Wait for ``proc``; past ``limit``, interrupt it (pytest still writes its report)."""
    try:
        return proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        return "timeout"


def run_suite(name: str, args: list[str], env: dict[str, str], out: Path, limit: float) -> dict:
    """One pytest run; its counts, seconds and return code."""
    stem = "".join(c if c.isalnum() else "_" for c in name).strip("_")
    junit, log = out / f"{stem}.xml", out / f"{stem}.log"
    per_test = ["--timeout=120"] if importlib.util.find_spec("pytest_timeout") else []
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *args,
        "-q",
        "-rfEs",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        "--tb=short",
        *per_test,
    ]
    t0 = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.Popen(
            cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT, env={**os.environ, **env}
        )
        rc = _finish(proc, limit)
    return {"suite": name, "rc": rc, "seconds": time.perf_counter() - t0, **counts(junit)}


def _passed(row: dict) -> bool:
    """A suite passed: pytest's status 0 and at least one test passed (not all skipped)."""
    return row["rc"] == 0 and row["passed"] > 0


def run_suites(out: Path, workers: int, limit: float) -> list[dict]:
    """Every suite, at once (the GPU is shared; each suite's own tests run in order)."""
    todo = suites(workers)
    with concurrent.futures.ThreadPoolExecutor(len(todo)) as pool:
        jobs = [pool.submit(run_suite, n, a, e, out, limit) for n, (a, e) in todo.items()]
        return [j.result() for j in jobs]


def run_script(name: str, cmd: list[str], out: Path, limit: float) -> int | str:
    """A script's output kept in ``out/name.log`` and printed when it ends; its return code."""
    log = out / f"{name}.log"
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
        rc = _finish(proc, limit)
    print(f"\n$ {' '.join(cmd)}  (exit {rc})\n{log.read_text()}", flush=True)
    return rc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu-run")))
    parser.add_argument("--only", default=",".join(STAGES), help="stages, comma-separated")
    parser.add_argument("--workers", type=int, default=4, help="pytest-xdist workers per suite")
    parser.add_argument("--limit", type=float, default=420, help="seconds per suite or script")
    parser.add_argument("--bench-limit", type=float, default=240, help="seconds for the bench")
    args = parser.parse_args(argv)
    stages = [s for s in args.only.split(",") if s]
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        parser.error(f"unknown stages {unknown}; choose from {list(STAGES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    lines, missing = describe_machine()
    print("\n".join(lines), flush=True)
    (args.out / "machine.txt").write_text("\n".join(lines) + "\n")
    if missing:
        print(f"\ngpu_check: no usable GPU here, nothing was run: {missing}", file=sys.stderr)
        return 3
    failed = False
    here = Path(__file__).parent
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # the examples beside the suites
        examples = None
        if "examples" in stages:
            script = [sys.executable, str(here / "gpu_examples.py")]
            examples = pool.submit(run_script, "examples", script, args.out, args.limit)
        if "suites" in stages:
            rows = run_suites(args.out, args.workers, args.limit)
            table = [
                f"{'suite':28} {'passed':>7} {'failed':>7} {'errors':>7} {'skipped':>8} {'s':>6}"
            ]
            for r in rows:
                rc = "" if _passed(r) else f"  rc={r['rc']}" if r["rc"] else "  ran nothing"
                table.append(
                    f"{r['suite']:28} {r['passed']:7} {r['failed']:7} {r['errors']:7} "
                    f"{r['skipped']:8} {r['seconds']:6.0f}{rc}"
                )
            print("\n" + "\n".join(table), flush=True)
            (args.out / "suites.txt").write_text("\n".join(lines + [""] + table) + "\n")
            failed = not all(map(_passed, rows))
        if examples is not None:
            failed |= examples.result() != 0
    if "bench" in stages:
        bench = [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_gpu.py"),
            "--out",
            str(args.out),
            "--profile",
        ]
        rc = run_script("bench", bench, args.out, args.bench_limit)
        failed |= rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
