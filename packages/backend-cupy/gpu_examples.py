"""The examples trained on the GPU next to the CPU: each must land in the CPU's band.

    python packages/backend-cupy/gpu_examples.py [--quick]

Runs ``examples/cnn_digits.py``, ``spiral.py``, ``lstm_sine.py`` and ``char_rnn.py`` through
their ``train()`` functions, once with ``gpu=False`` and once with ``gpu=True``, each in its
own process (all at once), and prints both results side by side. The GPU run draws its
initial weights and dropout from the GPU's generator, so its numbers are not the CPU's bit
for bit; each must be in the band the row names. Exit status 1 when a GPU run is outside
its band or fails, 3 when there is no usable GPU. The seconds columns are each run's own
wall clock while all twelve runs share the machine (and, under gpu_check.py, the GPU with
the test suites): a rough size, not a benchmark.

Each example trains on the GPU a second time, in another process: the RNN examples with
``static=True`` (their ``--gpu --static``), the others as before. Seeded alike, the second
run must give the first GPU run's loss of every epoch, bit for bit: the GPU runs repeat
themselves, and the replayed windows compute what the eager ones do.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import subprocess
import sys
import time
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# name -> (keyword arguments of train(), the metric, how the GPU's value must compare)
RUNS = {
    "cnn_digits": ({"epochs": 15, "verbose": False}, "test_accuracy", "at least 0.95"),
    "spiral": ({"epochs": 300, "verbose": False}, "train_accuracy", "at least 0.95"),
    "lstm_sine": ({"epochs": 15, "verbose": False}, "test_mse", "at most 0.05"),
    "char_rnn": ({"epochs": 6, "verbose": False}, "final_loss", "within 10% of the CPU's"),
}
QUICK = {"cnn_digits": 3, "spiral": 60, "lstm_sine": 3, "char_rnn": 2}
STATIC = ("lstm_sine", "char_rnn")  # their second GPU run replays under static_graph

_CHILD = """
import json, sys, time
sys.path.insert(0, {examples!r})
import importlib
mod = importlib.import_module({name!r})
t0 = time.perf_counter()
r = mod.train(gpu={gpu}, **{kwargs!r})  # kwargs may hold static=True
took = time.perf_counter() - t0
losses = r.get("losses") or r.get("history", {{}}).get("loss")
out = {{k: float(r[k]) for k in ("test_accuracy", "train_accuracy", "test_mse") if k in r}}
out.update(final_loss=float(losses[-1]), first_loss=float(losses[0]), seconds=took)
out["losses"] = [float(v) for v in losses]
print("RESULT " + json.dumps(out))
"""


def run(name: str, gpu: bool, kwargs: dict, timeout: float = 240) -> dict:
    """One training run in a fresh process; its metrics, or ``{"error": ...}``."""
    code = _CHILD.format(examples=str(EXAMPLES), name=name, gpu=gpu, kwargs=kwargs)
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s", "stderr": ""}
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    return {
        "error": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1],
        "stderr": done.stderr[-3000:],
    }


def in_band(rule: str, gpu: float, cpu: float) -> bool:
    """Whether the GPU's value meets ``rule`` (see RUNS)."""
    if rule.startswith("at least"):
        return gpu >= float(rule.split()[-1])
    if rule.startswith("at most"):
        return gpu <= float(rule.split()[-1])
    return abs(gpu - cpu) <= 0.10 * abs(cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few epochs: a smoke run only")
    args = parser.parse_args(argv)
    from zerograd.backends import NoBackendError, gpu_backend

    try:
        gpu_backend()
    except NoBackendError as exc:
        print(f"gpu_examples: no usable GPU here: {exc}", file=sys.stderr)
        return 3
    jobs = {}
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(3 * len(RUNS)) as pool:
        for name, (kwargs, _, _) in RUNS.items():
            if args.quick:
                kwargs = {**kwargs, "epochs": QUICK[name]}
            for gpu in (False, True):
                jobs[name, gpu] = pool.submit(run, name, gpu, kwargs)
            again = {**kwargs, "static": True} if name in STATIC else kwargs
            jobs[name, "again"] = pool.submit(run, name, True, again)
    results = {k: j.result() for k, j in jobs.items()}
    print(f"{'example':11} {'metric':15} {'CPU':>9} {'GPU':>9} {'CPU s':>7} {'GPU s':>7}  band")
    ok = True
    for name, (_, metric, rule) in RUNS.items():
        cpu, gpu = results[name, False], results[name, True]
        if "error" in cpu or "error" in gpu:
            bad = cpu if "error" in cpu else gpu
            print(f"{name:11} failed ({'CPU' if bad is cpu else 'GPU'}): {bad['error']}")
            print(bad.get("stderr", ""), file=sys.stderr)
            ok = False
            continue
        good = args.quick or in_band(rule, gpu[metric], cpu[metric])
        ok &= good
        print(
            f"{name:11} {metric:15} {cpu[metric]:9.4f} {gpu[metric]:9.4f} "
            f"{cpu['seconds']:7.1f} {gpu['seconds']:7.1f}  {rule}: "
            f"{'yes' if good else 'NO'}"
        )
        print(
            f"{'':11} {'loss first/last':15} CPU {cpu['first_loss']:.4f} -> "
            f"{cpu['final_loss']:.4f}, GPU {gpu['first_loss']:.4f} -> {gpu['final_loss']:.4f}"
        )
    for name in RUNS:
        what = "--gpu --static" if name in STATIC else "--gpu again"
        ok &= same_losses(name, what, results[name, True], results[name, "again"])
    print(f"({time.perf_counter() - t0:.0f} s in all)")
    return 0 if ok else 1


def same_losses(name: str, what: str, first: dict, second: dict) -> bool:
    """Print and return whether the ``second`` GPU run (``what``: how it ran) gave the
    ``first`` GPU run's losses, bit for bit (a failed run is not the same)."""
    if "error" in second:
        print(f"{name:11} {what} failed: {second['error']}")
        print(second.get("stderr", ""), file=sys.stderr)
        return False
    if "error" in first:
        print(f"{name:11} {what}: no first GPU run to compare with")
        return False
    differ = [i for i, (a, b) in enumerate(zip(first["losses"], second["losses"])) if a != b]
    same = not differ and len(first["losses"]) == len(second["losses"])
    where = f"; first differs at epoch {differ[0] + 1}" if differ else ""
    print(
        f"{name:11} {what}: the first GPU run's {len(first['losses'])} epoch losses bit for "
        f"bit: {'yes' if same else 'NO'} ({second['seconds']:.1f} s){where}"
    )
    return same


if __name__ == "__main__":
    sys.exit(main())
