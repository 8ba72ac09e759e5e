"""zerograd-distributed benchmarks on MPI (the mpich wheel), launched with mpiexec.

1. Gradient averaging per step for the MLP 784-1000-1000-10 (1.8 M float32 parameters) on
   2 ranks: DataParallelOptimizer.average_grads() (agreement message, the scaled gather
   into the optimizer's flat gradient buffer, one allreduce in place) against mpi4py's raw
   ``Allreduce`` of the same bytes in one buffer; and what the averaging adds to a step's
   update (its update minus one rank's update of the same gradients, which gathers them
   itself) against the same raw ``Allreduce``.
2. Training steps per second (relu MLP, batch 100 per rank) on 1 and on 2 ranks: the
   weak-scaling efficiency, steps/s on 2 ranks over steps/s on 1. Blocks on rank 0 alone
   (rank 1 asleep) alternate with blocks on both, so both see the same machine load.

``run()`` launches this file under ``mpiexec -n 2``; rank 0 prints one JSON line. Runs are
interleaved (ABBA), each after a barrier; the table shows medians, on the slowest rank (what
a step waits for), and the note the least disturbed runs.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
GROUP = "data-parallel training (MPI)"


def _worker(repeat: int) -> None:
    import numpy as np
    from fw_zerograd import MLP
    from workloads import mlp_data, mlp_weights

    from zerograd import Parameter
    from zerograd_distributed import DataParallelOptimizer, broadcast_params, create_communicator
    from zerograd_nn.optimizers import SGD

    comm = create_communicator("mpi")
    mpi = comm.mpi_comm
    model = MLP(mlp_weights(), "relu")
    broadcast_params(model.params, comm)
    model.opt = DataParallelOptimizer(SGD(lr=0.1), comm).setup(model.params)
    x, t = mlp_data(100, seed=1 + comm.rank)  # each rank its own batch
    out: dict = {"size": comm.size, "params": sum(p.data.size for p in model.params)}

    def timed(fn) -> float:
        mpi.Barrier()
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    if comm.size > 1:
        rng = np.random.default_rng(comm.rank)
        grads = [rng.standard_normal(p.data.shape).astype(np.float32) for p in model.params]
        send = np.concatenate([g.ravel() for g in grads])
        recv = np.empty_like(send)

        def average() -> float:  # as in training: the backward pass made new gradients
            for p, g in zip(model.params, grads):
                p.grad = Parameter(g)
            return timed(model.opt.average_grads)

        def raw() -> float:
            return timed(lambda: mpi.Allreduce(send, recv))

        # a step's update with the averaging (which gathers the gradients into the
        # optimizer's flat buffer, so its update does not) against the same update on one
        # rank (which gathers them itself): their difference is what the averaging costs
        solo_params = [Parameter(p.data.copy()) for p in model.params]
        solo_opt = SGD(lr=0.1).setup(solo_params)

        def dp_step() -> float:
            for p, g in zip(model.params, grads):
                p.grad = Parameter(g)
            return timed(model.opt.update)

        def solo_step() -> float:
            for p, g in zip(solo_params, grads):
                p.grad = Parameter(g)
            return timed(solo_opt.update)

        ours, raws, steps, solos = [], [], [], []
        for _ in range(3):  # warm-up
            average(), raw(), dp_step(), solo_step()
        runs = ((ours, average), (raws, raw), (steps, dp_step), (solos, solo_step))
        for i in range(repeat):  # rotating order: drift in the machine's load hits all alike
            for k in range(len(runs)):
                got, fn = runs[(i + k) % len(runs)]
                got.append(fn())
        # the slowest rank is what a step waits for
        for name, runs in (("average", ours), ("raw", raws), ("step", steps), ("solo", solos)):
            out[f"{name}_ms"] = max(mpi.allgather(statistics.median(runs) * 1e3))
            out[f"{name}_min_ms"] = max(mpi.allgather(min(runs) * 1e3))
        out["bytes"] = int(send.nbytes)

    # weak scaling, one launch: blocks of steps alone on rank 0 (rank 1 sleeping, as if it
    # were not there) alternate with blocks on both ranks, so both see the same machine load
    solo = SGD(lr=0.1).setup(model.params)
    k = max(1, repeat // 4)

    def solo_block() -> float:
        mpi.Barrier()
        dt = 0.0
        if comm.rank == 0:
            distributed, model.opt = model.opt, solo
            t0 = time.perf_counter()
            for _ in range(k):
                model.step(x, t)
            dt = time.perf_counter() - t0
            model.opt = distributed
        done = mpi.Ibarrier()
        while not done.Test():  # the idle rank sleeps instead of polling a core away
            time.sleep(0.0005)
        return mpi.bcast(dt)

    def both_block() -> float:
        return max(mpi.allgather(timed(lambda: [model.step(x, t) for _ in range(k)])))

    both_block()
    alone, both = [], []
    for _ in range(6):
        alone.append(solo_block())
        both.append(both_block())
    out["steps_per_s_1"] = k / statistics.median(alone)
    out["steps_per_s"] = k / statistics.median(both)
    if comm.rank == 0:
        print("RESULT " + json.dumps(out), flush=True)


def _launch(n: int, repeat: int) -> dict:
    mpiexec = Path(sys.executable).parent / "mpiexec"
    cmd = [str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec") or "mpiexec"]
    cmd += ["-n", str(n), sys.executable, str(Path(__file__).resolve()), "--worker", str(repeat)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "HYDRA_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    if done.returncode or not lines:
        raise RuntimeError(f"mpiexec -n {n} failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(lines[0][len("RESULT ") :])


def run(repeat: int = 40) -> list[dict]:
    """Rows for benchmarks/run.py (one launch on 2 ranks)."""
    try:
        import mpi4py  # noqa: F401

        import zerograd_distributed  # noqa: F401
    except ImportError as e:
        note = f"not run: {e}; pip install zerograd-distributed mpich"
        return [{"group": GROUP, "case": "skipped", "target": "", "note": note}]
    two = _launch(2, repeat)
    mb = two["bytes"] / 2**20
    efficiency = two["steps_per_s"] / two["steps_per_s_1"]
    cores = os.cpu_count()
    return [
        {
            "group": f"{GROUP}, 2 ranks (ms/step)",
            "case": f"gradient averaging, MLP 784-1000-1000-10 ({two['params'] / 1e6:.2f} M "
            f"float32, {mb:.1f} MiB) vs raw Allreduce of one buffer",
            "zerograd": two["average_ms"],
            "numpy": two["raw_ms"],
            "ratio": two["average_ms"] / two["raw_ms"],
            "target": "≤ 1.10× raw Allreduce",
            "met": two["average_ms"] / two["raw_ms"] <= 1.10,
            "note": "hand-written column: mpi4py Allreduce(send, recv) of the same bytes; "
            f"fastest runs {two['average_min_ms']:.2f} vs {two['raw_min_ms']:.2f} ms",
        },
        {
            "group": f"{GROUP}, 2 ranks (ms/step)",
            "case": "the averaging's cost in a step: update() with averaging minus one rank's "
            "update() of the same gradients, vs raw Allreduce",
            "zerograd": two["step_ms"] - two["solo_ms"],
            "numpy": two["raw_ms"],
            "ratio": (two["step_ms"] - two["solo_ms"]) / two["raw_ms"],
            "target": "≤ 1.05× raw Allreduce",
            "met": (two["step_ms"] - two["solo_ms"]) / two["raw_ms"] <= 1.05,
            "note": f"DataParallelOptimizer(SGD).update() {two['step_ms']:.2f} ms, SGD.update() "
            f"alone {two['solo_ms']:.2f} ms: the averaging gathers the gradients into the "
            "optimizer's flat buffer, which the update then reads without gathering again",
        },
        {
            "group": f"{GROUP} (steps/s)",
            "case": "MLP 784-1000-1000-10 relu, batch 100 per rank: 1 rank → 2 ranks",
            "zerograd": two["steps_per_s"],
            "numpy": None,
            "ratio": efficiency,
            "target": "report",
            "note": f"1 rank {two['steps_per_s_1']:.1f} steps/s, 2 ranks {two['steps_per_s']:.1f} "
            f"steps/s each: weak-scaling efficiency {efficiency:.0%} on {cores} cores (the ranks "
            f"share the cores and the memory bandwidth)",
        },
    ]


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        _worker(int(sys.argv[2]))
    else:
        for row in run():
            print(row)
