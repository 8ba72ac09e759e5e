"""One measurement in a fresh process: ``python child.py '<json spec>'``.

The spec names the framework (``fw_<name>.py``), the workload, the thread count and the
workload's parameters; the parent (``common.launch``) has already set the BLAS/OpenMP thread
variables in this process's environment. The result is printed as one ``RESULT {...}`` line
and the process ends without tearing the graphs down (``os._exit``).

Times are CPU time of the process (user + system, page faults included) on 1 thread, which
other users of a shared machine cannot inflate by preempting it, and wall clock on more
threads, where waiting for the slowest thread is part of the cost. Training steps report
both.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType

from workloads import (
    CHAIN,
    CHAIN_CASES,
    DEEP_N,
    WIDE_K,
    chain,
    chain_inputs,
    cnn_data,
    cnn_weights,
    digest,
    mlp_data,
    mlp_weights,
    peak_rss,
    reset_peak,
    rss_now,
    tanh_chain,
)
from workloads import wide as wide_graph

clock = time.perf_counter  # main() switches to time.process_time on 1 thread
HERE = Path(__file__).parent


def per_op(fw: ModuleType, reps: int, warmup: int = 2) -> dict:
    """Median µs per op of each 1,000-op chain, the chains interleaved within each rep."""
    x0, c = chain_inputs()
    grads = {}
    for _ in range(warmup):
        for k, ops in CHAIN_CASES.items():
            grads[k] = chain(fw, x0, c, ops, CHAIN)
    times: dict[str, list[float]] = {k: [] for k in CHAIN_CASES}
    for _ in range(reps):
        for k, ops in CHAIN_CASES.items():
            t0 = clock()
            chain(fw, x0, c, ops, CHAIN)
            times[k].append(clock() - t0)
    us = {k: statistics.median(v) / CHAIN * 1e6 for k, v in times.items()}
    return {"us_per_op": us, "grad": grads}


def train(fw: ModuleType, model: str, reps: int, act: str = "relu", warmup: int = 2) -> dict:
    """Median ms per training step, plus the first step's loss and update sizes (to check
    that every framework computes the same step)."""
    if model == "mlp":
        w, (x, t) = mlp_weights(), mlp_data()
        net = fw.MLP(w, act)
    else:
        w, (x, t) = cnn_weights(), cnn_data()
        net = fw.CNN(w)
    xi, ti = fw.inputs(x, t)
    loss = net.step(xi, ti)
    after = net.weights()
    out = {
        "loss": loss,
        "update": digest(w, after),
        "dtypes": sorted({str(a.dtype) for a in after}),
    }
    for _ in range(warmup):
        net.step(xi, ti)
    times, walls = [], []
    for _ in range(reps):
        t0, w0 = clock(), time.perf_counter()
        net.step(xi, ti)
        times.append(clock() - t0)
        walls.append(time.perf_counter() - w0)
    ms, wall_ms = statistics.median(times) * 1e3, statistics.median(walls) * 1e3
    return {**out, "ms": ms, "wall_ms": wall_ms, "load": os.getloadavg()[0]}


def infer(fw: ModuleType, model: str, reps: int, act: str = "relu", warmup: int = 3) -> dict:
    """Median ms of one forward pass for inference (no graph, test mode) of the MLP or the
    CNN, and its output (to check that every framework computes the same)."""
    if model == "mlp":
        w, (x, _) = mlp_weights(), mlp_data()
    else:
        w, (x, _) = cnn_weights(), cnn_data()
    run = fw.inference(model, w, act, x)
    y = run(x)
    for _ in range(warmup):
        run(x)
    times = []
    for _ in range(reps):
        t0 = clock()
        run(x)
        times.append(clock() - t0)
    return {"ms": statistics.median(times) * 1e3, "out": y.tolist()}


def wide(fw: ModuleType, reps: int) -> dict:
    """Median ms of the backward alone of ``y = sum_i x_i * w`` for each K in WIDE_K."""
    fw.backward(wide_graph(fw, 100))  # warm-up
    out = {}
    for k in WIDE_K:
        times = []
        for _ in range(reps):
            gc.collect()
            y = wide_graph(fw, k)
            t0 = clock()
            fw.backward(y)
            times.append(clock() - t0)
            del y
        out[str(k)] = statistics.median(times) * 1e3
    return {"ms": out}


def deep(fw: ModuleType) -> dict:
    """Peak RSS above the starting RSS while a DEEP_N-op tanh chain is built and
    differentiated, per op; also the RSS it retains after the forward pass, per op."""
    fw.backward(tanh_chain(fw, 1000))  # warm-up: lazy imports, caches, free lists
    gc.collect()
    base = rss_now()
    reset = reset_peak()
    t0 = clock()
    y = tanh_chain(fw, DEEP_N)
    t1 = clock()
    retained = rss_now() - base
    fw.backward(y)
    t2 = clock()
    peak = peak_rss() - base
    return {
        "peak_b_per_op": peak / DEEP_N,
        "retained_b_per_op": retained / DEEP_N,
        "fwd_s": t1 - t0,
        "bwd_s": t2 - t1,
        "peak_reset": reset,
    }


def memory(fw: ModuleType, steps: int = 200, every: int = 10) -> dict:
    """RSS every ``every`` steps of ``steps`` relu-MLP training steps."""
    net = fw.MLP(mlp_weights(), "relu")
    xi, ti = fw.inputs(*mlp_data())
    samples = []
    t0 = clock()
    for i in range(1, steps + 1):
        net.step(xi, ti)
        if i % every == 0:
            samples.append(rss_now())
    return {"rss": samples, "every": every, "ms": (clock() - t0) / steps * 1e3}


def peak(fw: ModuleType, steps: int = 5) -> dict:
    """tracemalloc's peak (numpy's allocations: zerograd columns only) during one relu-MLP
    step after ``steps`` steps, everything since the network's creation counted."""
    import tracemalloc

    tracemalloc.start()
    net = fw.MLP(mlp_weights(), "relu")
    xi, ti = fw.inputs(*mlp_data())
    for _ in range(steps):
        net.step(xi, ti)
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    net.step(xi, ti)
    top = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"peak_mib": top / 2**20, "before_mib": before / 2**20}


def step_peak(fw: ModuleType, model: str, n: int, probe: str, steps: int = 5) -> dict:
    """Peak memory of one training step (the relu MLP or the CNN, batch ``n``) after
    ``steps`` steps. ``probe`` "rss": VmHWM, reset before the network is made, minus the
    RSS then (any framework; the weights, data, graph and temporaries, lifetime peak of a
    fresh process). ``probe`` "tracemalloc": tracemalloc's peak during the last step
    (numpy's allocations only: the zerograd columns), everything since the network's
    creation counted."""
    if model == "mlp":
        w, (x, t) = mlp_weights(), mlp_data(n)
    else:
        w, (x, t) = cnn_weights(), cnn_data(n)
    gc.collect()
    if probe == "tracemalloc":
        import tracemalloc

        tracemalloc.start()
    base = rss_now()
    reset = reset_peak()
    net = fw.MLP(w, "relu") if model == "mlp" else fw.CNN(w)
    xi, ti = fw.inputs(x, t)
    for _ in range(steps):
        net.step(xi, ti)
    if probe == "tracemalloc":
        tracemalloc.reset_peak()
        net.step(xi, ti)
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return {"peak_mib": top / 2**20}
    net.step(xi, ti)
    return {"peak_mib": (peak_rss() - base) / 2**20, "peak_reset": reset}


def rnn(fw: ModuleType, example: str, epochs: int, skip: int) -> dict:
    """Median CPU ms per epoch of an example's training (examples/<example>.py), after the
    first ``skip`` epochs; fw_static's process trains with ``static=True``. A module with
    its own ``rnn`` (numpy-hand: no framework) runs that instead."""
    examples = HERE.parent / "examples"
    sys.path.insert(0, str(examples))
    if hasattr(fw, "rnn"):
        return fw.rnn(example, epochs, skip)
    module = importlib.import_module(example)
    result = module.train(epochs=epochs, verbose=False, static=getattr(fw, "STATIC", False))
    ms = statistics.median(result["epoch_times"][skip:]) * 1e3
    return {"ms": ms, "loss": result["losses"][-1]}


def func(fw: ModuleType, case: str, reps: int, warmup: int = 2) -> dict:
    """Median ms of one function-transform case (``fw.FUNC_CASES[case]()``: the call to time
    and a function of its result giving numbers to compare frameworks by)."""
    call, summary = fw.FUNC_CASES[case]()
    for _ in range(warmup):
        out = call()
    times = []
    for _ in range(reps):
        t0 = clock()
        out = call()
        times.append(clock() - t0)
    return {"ms": statistics.median(times) * 1e3, "check": summary(out)}


WORKLOADS = {
    "func": func,
    "per_op": per_op,
    "train": train,
    "infer": infer,
    "wide": wide,
    "deep": deep,
    "memory": memory,
    "peak": peak,
    "step_peak": step_peak,
    "rnn": rnn,
}


def main() -> None:
    global clock
    spec = json.loads(sys.argv[1])
    if spec["threads"] == 1:
        clock = time.process_time
    fw = importlib.import_module(f"fw_{spec['fw']}")
    fw.setup(spec["threads"])
    result = WORKLOADS[spec["workload"]](fw, **(spec.get("params") or {}))
    sys.stdout.write("RESULT " + json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)  # skip tearing down graphs of 100,000 nodes: nothing is measured after this


if __name__ == "__main__":
    main()
