"""Training-step rows: an MLP and a small CNN on 1 and 2 threads, and RSS over 200 steps.

Every framework runs the same step (forward, loss, backward, SGD update) from the same
float32 weights and data, each in its own fresh processes. The first step's loss and the
size of each parameter's update are compared across frameworks before any time is shown.
"""

from __future__ import annotations

import os
import statistics

import numpy as np
from common import (
    COLUMNS,
    GRAPHS,
    NAMES,
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

CASES = {
    "MLP sigmoid": ("mlp", "sigmoid", "MLP 784-1000-1000-10 sigmoid, batch 100"),
    "MLP relu": ("mlp", "relu", "MLP 784-1000-1000-10 relu, batch 100"),
    "CNN": ("cnn", "relu", "CNN conv3x3 1→16 pad 1, relu, max-pool 2, linear 10; batch 32×1×28×28"),
}


def _disagreement(results: dict[str, list[dict]]) -> str:
    """A note when some framework's first step differs from numpy-hand's (or the first
    framework's): loss, update sizes (rtol 1e-3), or parameters no longer float32."""
    firsts = {fw: next((r for r in rs if "error" not in r), None) for fw, rs in results.items()}
    firsts = {fw: r for fw, r in firsts.items() if r is not None}
    if not firsts:
        return ""
    ref_fw = "numpy" if "numpy" in firsts else next(iter(firsts))
    ref = firsts[ref_fw]
    bad = []
    for fw, r in firsts.items():
        if r["dtypes"] != ["float32"]:
            bad.append(f"{NAMES[fw]} parameters became {r['dtypes']}")
        same = np.isclose(r["loss"], ref["loss"], rtol=1e-3) and np.allclose(
            r["update"], ref["update"], rtol=1e-3
        )
        if not same:
            bad.append(f"{NAMES[fw]} step differs from {NAMES[ref_fw]} (loss {r['loss']:.6g})")
    return "⚠ " + ", ".join(bad) if bad else f"same loss and updates as {NAMES[ref_fw]} ✓"


# glibc returns freed blocks above these sizes to the kernel, so a fresh process pays page
# faults for every large temporary; pinning them high shows the time without that cost
PINNED = {"MALLOC_MMAP_THRESHOLD_": str(2**30), "MALLOC_TRIM_THRESHOLD_": str(2**30)}


def _wall_ratio(walls: dict[str, float | None]) -> str:
    z, t = walls.get("zerograd"), walls.get("torch")
    return f" (wall clock: zerograd {z / t:.2f}× torch)" if z and t else ""


def _load(results: dict[str, list[dict]]) -> str:
    loads = [r["load"] for rs in results.values() for r in rs if "load" in r]
    if not loads:
        return ""
    load = statistics.median(loads)
    return f"; load average {load:.1f} on {os.cpu_count()} CPUs during these runs" + (
        " (other users hold cores: wall times measure contention)"
        if load > (os.cpu_count() or 1)
        else ""
    )


def train_rows(n: int = 4, reps: int = 10, pinned_rounds: int = 3) -> list[dict]:
    """MLP (sigmoid, relu) and CNN steps on 1 and 2 threads, then the sigmoid MLP and the
    CNN on 1 thread with glibc's malloc pinned; median ms per step."""
    fws = available(*COLUMNS)
    configs, pinned = {}, {}
    for name, (model, act, _) in CASES.items():
        params = {"model": model, "act": act, "reps": reps}
        for threads in (1, 2):
            configs[(name, threads, False)] = ("train", threads, lambda fw, p=params: p)
        if name != "MLP relu":
            pinned[(name, 1, True)] = ("train", 1, lambda fw, p=params: p, PINNED)
    res = rounds(fws, configs, n)
    res.update(rounds(fws, pinned, pinned_rounds))
    rows = []
    for (name, threads, pin), results in res.items():
        values = {fw: median_of(results[fw], lambda r: r["ms"]) for fw in fws}
        walls = {fw: median_of(results[fw], lambda r: r["wall_ms"]) for fw in fws}
        limit = 1.00 if threads == 1 else 1.15
        group = f"training step, ms ({threads} thread{'s' if threads > 1 else ''}"
        r = row(
            group + (", glibc malloc pinned)" if pin else ")"),
            CASES[name][2],
            values,
            ref="torch",
            target="(report)" if pin else f"≤ {limit:.2f}× torch",
        )
        if r["ratio"] is not None and not pin:
            r["met"] = r["ratio"] <= limit
        rounds_n = pinned_rounds if pin else n
        r["note"] = join(
            _disagreement(results),
            f"median of {rounds_n} processes × {reps} steps, "
            + (
                "wall clock; BLAS and torch at 2 threads" + _load(results)
                if threads > 1
                else "CPU time" + _wall_ratio(walls)
            ),
            spread(results, lambda r: r["ms"]),
            "MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ = 1 GiB in every column's "
            "process: no page faults from returned temporaries"
            if pin
            else "",
            errors(results),
            absent_note(COLUMNS),
        )
        rows.append(r)
    return rows


def memory_rows(steps: int = 200) -> list[dict]:
    """RSS over ``steps`` relu-MLP steps, sampled 20 times, one fresh process per framework."""
    fws = available(*GRAPHS)
    every = steps // 20
    params = {"steps": steps, "every": every}
    res = rounds(fws, {"mem": ("memory", 1, lambda fw: params)}, 1)["mem"]
    growth, notes = {}, []
    for fw in fws:
        r = res[fw][0]
        if "error" in r:
            continue
        rss = np.array(r["rss"]) / 2**20
        half = len(rss) // 2
        # max vs max: allocators breathe by a few MiB, a leak keeps climbing
        growth[fw] = float(rss[half:].max() - rss[1:half].max())
        notes.append(f"{NAMES[fw]} {rss[1]:.0f} → {rss[-1]:.0f} MiB")
    r = row(
        f"memory over {steps} MLP steps (relu, 1 thread)",
        f"RSS growth, MiB: max over steps {steps // 2 + every}–{steps} minus max over "
        f"steps {2 * every}–{steps // 2}",
        growth,
        target="flat (< 8 MiB)",
    )
    if growth.get("zerograd") is not None:
        r["met"] = abs(growth["zerograd"]) < 8
    r["note"] = join(
        f"RSS from /proc/self/status every {every} steps; a leak of one 100×1000 float32 "
        f"activation per step would add {steps // 2 * 0.4:.0f} MB",
        f"RSS step {2 * every} → {steps}: " + ", ".join(notes),
        errors(res),
        absent_note(GRAPHS),
    )
    return [r]


def replay_rows(trained: list[dict], n: int = 5) -> list[dict]:
    """The replay's targets: the 1-thread steps (from ``trained``), the RNN examples' epochs
    (examples/lstm_sine.py and char_rnn.py, eager and ``--static``), and the MLP step's
    peak memory (tracemalloc), eager and replayed."""
    fws = ["zerograd", "static"]
    by_case = {(r["group"], r["case"]): r for r in trained}
    rows = []
    for name, limit in (("MLP sigmoid", 0.85), ("MLP relu", 0.85), ("CNN", 0.45)):
        r = by_case.get(("training step, ms (1 thread)", CASES[name][2]))
        if r is not None:
            values = {k: r.get(k) for k in ("zerograd", "static", "torch", "numpy")}
            step = static_row(f"{CASES[name][2]}, ms", values, "torch", limit)
            hand, torch = values["numpy"], values["torch"]
            if hand and torch:  # numpy-hand's step: the least time numpy takes
                floor = f"numpy-hand {hand / torch:.2f}× torch: the floor"
                step["note"] = join(step.get("note", ""), floor)
            rows.append(step)
    # numpy-hand trains each example by hand (fw_numpy.HandLSTM: its arithmetic with no
    # framework, the floor); (epochs, first ones not timed)
    epochs = {"lstm_sine": (24, 3), "char_rnn": (8, 3)}
    for ex, (e, k) in epochs.items():
        config = ("rnn", 1, lambda fw, e=e, k=k, x=ex: {"example": x, "epochs": e, "skip": k})
        results = rounds([*fws, "numpy"], {ex: config}, n)[ex]
        values = {fw: median_of(results[fw], lambda r: r["ms"]) for fw in results}
        r = static_row(f"examples/{ex}.py epoch, CPU ms", values, "zerograd", 0.4)
        same = {r2["loss"] for fw in fws for r2 in results[fw] if "error" not in r2}
        hand, eager = values.get("numpy"), values.get("zerograd")
        r["note"] = join(
            f"median epoch after the first {k} of {e}, {n} processes each; ratio: --static / eager",
            "same final loss ✓" if len(same) == 1 else f"⚠ final losses differ: {same}",
            (
                f"numpy-hand (fw_numpy.HandLSTM: the example's loss and gradients, checked by "
                f"test_examples.py) takes {hand / eager:.2f}× eager: the floor of the array work"
                if hand and eager
                else ""  # numpy-hand's process failed: errors() below says how
            ),
            spread(results, lambda r: r["ms"]),
            errors(results),
        )
        rows.append(r)
    res = rounds(fws, {"peak": ("peak", 1, lambda fw: {})}, 1)["peak"]
    values = {fw: median_of(res[fw], lambda r: r["peak_mib"]) for fw in fws}
    r = static_row("MLP 784-1000-1000-10 relu step: peak memory, MiB", values, "zerograd", 1.0)
    r["note"] = join(
        "tracemalloc's peak during one step after 5 (numpy's allocations: the weights, "
        "gradients, activations and temporaries); ratio: replayed / eager",
        errors(res),
    )
    rows.append(r)
    return rows


STEP_PEAKS = {"mlp": ("MLP 784-1000-1000-10 relu step", 4096), "cnn": ("CNN step", 512)}


def step_peak_rows(n: int = 2) -> list[dict]:
    """Peak memory of one eager step, against the replay (tracemalloc, numpy's allocations)
    and against PyTorch on the CPU (VmHWM of fresh processes): what the graph keeps."""
    rows = []
    for probe, fws, ref in (
        ("tracemalloc", ["zerograd", "static"], "static"),
        ("rss", available("zerograd", "static", "torch"), "torch"),
    ):
        configs = {
            model: ("step_peak", 1, lambda fw, p={"model": model, "n": b, "probe": probe}: p)
            for model, (_, b) in STEP_PEAKS.items()
        }
        for model, results in rounds(fws, configs, n).items():
            name, batch = STEP_PEAKS[model]
            values = {fw: median_of(results[fw], lambda r: r["peak_mib"]) for fw in fws}
            r = row(
                "eager step peak memory, MiB (1 thread)",
                f"{name}, batch {batch:,}, float32: {'VmHWM' if probe == 'rss' else probe}",
                values,
                ref=ref,
                target=f"≤ 1.1× {'the replay' if ref == 'static' else 'torch'}",
            )
            if r["ratio"] is not None:
                r["met"] = r["ratio"] <= 1.1
            r["note"] = join(
                "tracemalloc's peak during the 6th step (numpy's allocations: weights, "
                "gradients, activations, temporaries); ratio: eager / replayed"
                if probe == "tracemalloc"
                else "peak RSS (VmHWM, reset when the network is made) minus the RSS then, "
                "over 6 steps in a fresh process; ratio: zerograd / PyTorch CPU",
                f"median of {n} processes",
                errors(results),
                absent_note(("torch",)) if probe == "rss" else "",
            )
            rows.append(r)
    return rows


def run() -> list[dict]:
    """Every training row."""
    trained = train_rows()
    return trained + memory_rows() + replay_rows(trained) + step_peak_rows()
