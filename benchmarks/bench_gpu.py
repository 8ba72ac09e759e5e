"""zerograd on the GPU (zerograd-cupy) next to PyTorch CUDA, on one GPU, in one process.

    python benchmarks/bench_gpu.py [--out DIR] [--repeat N]    # prints and writes the table
    python benchmarks/bench_gpu.py --splice DIR/bench_gpu.md   # puts a table into the docs

Rows: the per-op cost of a 1,000-op elementwise chain (forward and backward), the MLP
784-1000-1000-10 SGD step at batch 100 and 4,096, the benchmark CNN step at batch 32 and
512, the im2col/col2im kernels against the same work in generic array calls, the peak
GPU memory of a step above what the weights hold, and a replayed elementwise chain run as
one fused kernel against one kernel per op. The chain and the steps are measured
twice for zerograd: eager, as the book writes them, and replayed by
``zerograd.static_graph`` (after one eager and two recorded calls, as ``fw_static.py``).
Every time is the median of ``repeat`` runs after warm-up, the frameworks interleaved,
with the device synchronized before the clock is read (each step ends by reading its
loss, as ``float(loss.data)`` and ``loss.item()`` do). TF32 is off in both: CuPy's
default, and PyTorch's matmul default, set explicitly for PyTorch's convolutions too
(cuDNN's default is on).

``benchmarks/run.py`` (``nox -s bench``) adds this section to results.md where a GPU is
usable and keeps the last one measured elsewhere; ``--splice`` puts a section measured on
another machine into results.md and the docs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from workloads import (  # noqa: E402
    CHAIN,
    LR,
    OPS,
    chain,
    chain_inputs,
    cnn_data,
    cnn_weights,
    mlp_data,
    mlp_weights,
)

GROUP = "GPU: zerograd-cupy vs PyTorch CUDA"
BEGIN, END = "<!-- bench_gpu: begin -->", "<!-- bench_gpu: end -->"


def _sync(cp, torch) -> None:
    if cp is not None:
        cp.cuda.get_current_stream().synchronize()
    if torch is not None:
        torch.cuda.synchronize()


def timed(fns: dict, cp, torch, repeat: int, warmup: int = 3) -> dict[str, float]:
    """Median seconds per call of each function, interleaved, the device synchronized."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            _sync(cp, torch)
            t0 = time.perf_counter()
            fn()
            _sync(cp, torch)
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


# -- the frameworks' pieces -----------------------------------------------------------------


def zerograd_side(backend):
    """The chain's pieces and the nets of fw_zerograd, on ``backend``'s device."""
    import fw_static as zs
    import fw_zerograd as zg

    import zerograd.functions as ZF
    from zerograd import Variable

    def net(make):
        model = make()
        for p in model.params:
            p.to(backend)
        return model

    pieces = SimpleNamespace(
        leaf=lambda a: Variable(backend.from_numpy(a)),
        const=backend.from_numpy,
        tanh=ZF.tanh,
        sin=ZF.sin,
        backward=lambda y: y.backward(),
        grad=lambda x: backend.to_numpy(x.grad.data),
    )
    return SimpleNamespace(
        chain=pieces,
        mlp=lambda: net(lambda: zg.MLP(mlp_weights(), "relu")),
        cnn=lambda: net(lambda: zg.CNN(cnn_weights())),
        mlp_static=lambda: net(lambda: zs.MLP(mlp_weights(), "relu")),
        cnn_static=lambda: net(lambda: zs.CNN(cnn_weights())),
        inputs=lambda x, t: (backend.from_numpy(x), backend.from_numpy(t)),
    )


def static_chain(backend, x0, c, ops, n):
    """The chain recorded once by ``zerograd.static_graph`` and replayed: a function of
    no arguments that runs it on a fresh leaf and returns the leaf's gradient."""
    from workloads import chain_of

    import zerograd.functions as ZF
    from zerograd import Variable, static_graph

    pieces = SimpleNamespace(tanh=ZF.tanh, sin=ZF.sin, backward=lambda y: y.backward())
    c = backend.from_numpy(c)  # made once: a constant of every recording
    step = static_graph(lambda x: chain_of(pieces, x, c, ops, n), warmup=1)

    def run():
        x = Variable(backend.from_numpy(x0))
        step(x)
        return backend.to_numpy(x.grad.data)

    return run


def torch_side(torch):
    """The chain's pieces and the nets of fw_torch, on ``cuda``."""
    import fw_torch as tc

    def net(make):
        model = make()
        model.w = [w.detach().cuda().requires_grad_() for w in model.w]
        model.opt = torch.optim.SGD(model.w, lr=LR)
        return model

    pieces = SimpleNamespace(
        leaf=lambda a: torch.tensor(a, device="cuda", requires_grad=True),
        const=lambda c: torch.tensor(c, device="cuda"),
        tanh=torch.tanh,
        sin=torch.sin,
        backward=lambda y: y.backward(torch.ones_like(y)),
        grad=lambda x: x.grad.cpu().numpy(),
    )
    return SimpleNamespace(
        chain=pieces,
        mlp=lambda: net(lambda: tc.MLP(mlp_weights(), "relu")),
        cnn=lambda: net(lambda: tc.CNN(cnn_weights())),
        inputs=lambda x, t: (torch.from_numpy(x).cuda(), torch.from_numpy(t).cuda()),
    )


def peak_hook(cp):
    """A CuPy MemoryHook whose ``peak`` is the most bytes its pool allocations held at once."""

    class Hook(cp.cuda.MemoryHook):
        name = "zerograd_bench_peak"

        def __init__(self):
            self.used = self.peak = 0

        def malloc_postprocess(self, **kw):
            self.used += kw["mem_size"]
            self.peak = max(self.peak, self.used)

        def free_postprocess(self, **kw):
            self.used -= kw["mem_size"]

    return Hook()


def peak_step_bytes(step, cp=None, torch=None) -> int:
    """Peak bytes a step allocates above what was allocated before it (after a warm step)."""
    step()
    _sync(cp, torch)
    if torch is not None:
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        step()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before
    hook = peak_hook(cp)
    with hook:
        step()
        _sync(cp, None)
    return hook.peak


# -- the rows ---------------------------------------------------------------------------------


def _row(case, z, t, unit, target, met, note=""):
    return {
        "group": GROUP,
        "case": case,
        "ref": "torch",
        "zerograd": z,
        "numpy": None,
        "torch": t,
        "dezero": None,
        "ratio": z / t if z and t else None,
        "target": target,
        "met": met,
        "note": note,
        "unit": unit,
    }


def measure(backend, torch, repeat: int) -> list[dict]:
    """Every row, zerograd and PyTorch interleaved."""
    import cupy as cp

    zs = zerograd_side(backend)
    ts = torch_side(torch) if torch is not None else None
    rows = []

    x0, c = chain_inputs()
    fns = {
        "z": lambda: chain(zs.chain, x0, c, OPS, CHAIN),
        "zs": static_chain(backend, x0, c, OPS, CHAIN),
    }
    if ts:
        fns["t"] = lambda: chain(ts.chain, x0, c, OPS, CHAIN)
    grads = {k: float(np.asarray(fn()).ravel()[0]) for k, fn in fns.items()}
    values = set(np.round(list(grads.values()), 9))
    checked = "same gradient ✓" if len(values) == 1 else f"gradients differ: {grads}"
    got = timed(fns, cp, torch, repeat)
    us = {k: v / CHAIN * 1e6 for k, v in got.items()}
    case = "per-op, 1,000-op add/mul/tanh/sin chain, fwd+bwd"
    for k, how in (("z", ""), ("zs", ", static replay")):
        ratio = us[k] / us["t"] if ts else None
        rows.append(
            _row(
                f"{case}{how}, µs/op",
                us[k],
                us.get("t"),
                "µs/op",
                "≤ 1.5× PyTorch",
                None if ratio is None else ratio <= 1.5,
                checked if ts else "PyTorch CUDA not installed: no gradient to compare with",
            )
        )

    for name, make_z, make_zs, make_t, data, sizes, limit, at in (
        ("MLP 784-1000-1000-10 relu, SGD", zs.mlp, zs.mlp_static, ts and ts.mlp, mlp_data,
         (100, 4096), 1.2, 4096),
        ("CNN conv3x3 1→16, pool 2, linear, SGD", zs.cnn, zs.cnn_static, ts and ts.cnn,
         cnn_data, (32, 512), 1.5, 512),
    ):  # fmt: skip
        for n in sizes:
            x, t = data(n)
            zx = zs.inputs(x, t)
            zm, zsm = make_z(), make_zs()
            fns = {
                "z": lambda zm=zm, zx=zx: zm.step(*zx),
                "zs": lambda zsm=zsm, zx=zx: zsm.step(*zx),
            }
            if ts:
                tm, tx = make_t(), ts.inputs(x, t)
                fns["t"] = lambda tm=tm, tx=tx: tm.step(*tx)
            first = {k: fn() for k, fn in fns.items()}  # the same first loss in each
            got = timed(fns, cp, torch, repeat)  # the static step replays after its warm-up
            ms = {k: v * 1e3 for k, v in got.items()}
            note = "first loss " + ", ".join(f"{k}={v:.5f}" for k, v in first.items())
            tpeak = peak_step_bytes(fns["t"], torch=torch) if ts else None
            for k, how in (("z", ""), ("zs", ", static replay")):
                ratio = ms[k] / ms["t"] if ts else None
                gate = n == at and ratio is not None
                rows.append(
                    _row(
                        f"{name}, batch {n}{how}, ms/step",
                        ms[k],
                        ms.get("t"),
                        "ms",
                        f"≤ {limit}× PyTorch at {at}" if n == at else "report",
                        (ratio <= limit) if gate else None,
                        note,
                    )
                )
                zpeak = peak_step_bytes(fns[k], cp=cp)
                rows.append(
                    _row(
                        f"{name}, batch {n}{how}, peak step memory MiB",
                        zpeak / 2**20,
                        tpeak / 2**20 if tpeak else None,
                        "MiB",
                        "≤ 1.2× PyTorch",
                        None if not tpeak else zpeak <= 1.2 * tpeak,
                        "bytes allocated during a step above those held before it",
                    )
                )

    for geometry in (
        ("conv 3x3 pad 1 of (512, 1, 28, 28)", (512, 1, 28, 28), (3, 3), (1, 1), (1, 1), 0.0),
        ("pool 2x2 of (512, 16, 28, 28)", (512, 16, 28, 28), (2, 2), (2, 2), (0, 0), -np.inf),
    ):
        rows += kernel_rows(backend, repeat, *geometry)
    rows += fusion_rows(backend, cp, repeat)
    return rows


def fusion_rows(backend, cp, repeat: int) -> list[dict]:
    """Replayed elementwise chains run as the backend's fused kernels and as one kernel per
    op: a chain under no_grad, and a training step whose backward's chains are the vjps'."""
    import zerograd.functions as ZF
    from zerograd import Parameter, Variable, no_grad

    def chain(x):
        with no_grad():
            v = Variable(x)
            return ZF.tanh(v * 0.5 + 1.0) * v - v / 3.0  # six ops, one chain

    rng = np.random.default_rng(0)
    x = backend.from_numpy(rng.standard_normal((4096, 1000)).astype(np.float32))
    w0 = (rng.standard_normal((4096, 1000)) * 0.1).astype(np.float32)

    def training_step():
        w = Parameter(backend.from_numpy(w0))

        def step(x):
            w.cleargrad()
            ZF.sum(ZF.tanh(x * w + 1.0) * 0.5).backward()  # chains: 3 ops forward, 5 backward
            return w.grad

        return step

    return [
        _fused_row(
            backend,
            cp,
            repeat,
            lambda: chain,
            x,
            "replayed no_grad chain tanh(x·0.5+1)·x − x/3 (6 ops), 4,096×1,000 float32, ms: "
            "fused kernel vs a kernel per op",
            "",
        ),
        _fused_row(
            backend,
            cp,
            repeat,
            training_step,
            x,
            "replayed training step sum(tanh(x·w+1)·0.5), w 4,096×1,000 float32, ms: fused "
            "chains (the backward's from the vjps' operations) vs a kernel per op",
            " of w.grad",
        ),
    ]


def _fused_row(backend, cp, repeat: int, make, x, case: str, what: str) -> dict:
    """``make()``'s function replayed with the backend's fused kernels, and replayed with a
    kernel per op (``Backend.fuse`` answering None while that replay is built)."""
    from unittest import mock

    from zerograd import static_graph

    fused, unfused = static_graph(make()), static_graph(make())
    with mock.patch.object(backend, "fuse", lambda chain, dtype: None):
        for _ in range(3):
            unfused(x)
    got = timed({"fused": lambda: fused(x), "unfused": lambda: unfused(x)}, cp, None, repeat)
    same = backend.to_numpy(fused(x).data).tobytes() == backend.to_numpy(unfused(x).data).tobytes()
    ms = {k: v * 1e3 for k, v in got.items()}
    ratio = ms["fused"] / ms["unfused"]
    return {
        **_row(
            case,
            ms["fused"],
            None,
            "ms",
            "report",
            None,
            f"a kernel per op: {ms['unfused']:.3g} ms (ratio {ratio:.2f}); "
            + (f"same bits{what} ✓" if same else "bits differ"),
        ),
        "ratio": ratio,
    }


def kernel_rows(backend, repeat, what, shape, k, s, p, pad_value) -> list[dict]:
    """The im2col and col2im kernels against the generic calls, on one geometry."""
    import cupy as cp

    from zerograd_cupy import col2im_gpu, im2col_gpu
    from zerograd_nn.kernels import Kernels

    generic = Kernels(backend)  # zerograd-nn's array-API kernels, on the same GPU arrays

    img = cp.random.rand(*shape, dtype=cp.float32)
    col = im2col_gpu(img, k, s, p, pad_value=pad_value)
    fns = {
        "kernel im2col": lambda: im2col_gpu(img, k, s, p, pad_value=pad_value),
        "generic im2col": lambda: generic.im2col(img, k, s, p, pad_value),
        "kernel col2im": lambda: col2im_gpu(col, shape, k, s, p),
        "generic col2im": lambda: generic.col2im(col, shape, k, s, p),
    }
    same = bool(cp.array_equal(fns["kernel im2col"](), fns["generic im2col"]())) and bool(
        cp.allclose(fns["kernel col2im"](), fns["generic col2im"](), rtol=1e-5, atol=1e-5)
    )
    got = timed(fns, cp, None, repeat)
    rows = []
    for op in ("im2col", "col2im"):
        kern, gen = got[f"kernel {op}"] * 1e6, got[f"generic {op}"] * 1e6
        note = f"generic {gen:,.0f} µs ({gen / kern:.1f}× the kernel); "
        note += "same result ✓" if same else "results DIFFER"
        row = _row(f"{op} of {what}, µs: one kernel vs generic CuPy calls", kern, None, "µs",
                   "report", None, note)  # fmt: skip
        row["ratio"] = kern / gen
        rows.append(row)
    return rows


def profile(backend, out: Path, steps: int = 30) -> None:
    """Where a step's time goes: host (cProfile) and device time (CUDA events), per case."""
    import cProfile
    import io
    import pstats

    import cupy as cp

    zs = zerograd_side(backend)
    text = []
    for name, make, data, n in (
        ("MLP", zs.mlp, mlp_data, 100),
        ("MLP", zs.mlp, mlp_data, 4096),
        ("CNN", zs.cnn, cnn_data, 512),
    ):
        model, (x, t) = make(), zs.inputs(*data(n))
        for _ in range(3):
            model.step(x, t)
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        _sync(cp, None)
        t0 = time.perf_counter()
        start.record()
        for _ in range(steps):
            model.step(x, t)
        stop.record()
        stop.synchronize()
        wall = (time.perf_counter() - t0) / steps * 1e3
        gpu = cp.cuda.get_elapsed_time(start, stop) / steps
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(steps):
            model.step(x, t)
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(25)
        text.append(f"== {name} batch {n}: wall {wall:.3f} ms/step, GPU events {gpu:.3f} ms/step")
        text.append(buf.getvalue())
    (out / "profile.txt").write_text("\n".join(text))
    print("\n".join(line for line in text if line.startswith("==")))


def machine(torch) -> list[str]:
    """The GPU, driver and library versions."""
    import cupy as cp

    rt = cp.cuda.runtime
    props = rt.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    lines = [
        f"GPU: {name} ({props['totalGlobalMem'] / 2**30:.0f} GiB), driver supports CUDA "
        f"{rt.driverGetVersion()}, CUDA runtime {rt.runtimeGetVersion()}",
        f"CuPy {cp.__version__}, numpy {np.__version__}, "
        f"PyTorch {torch.__version__ if torch else 'not installed'}"
        + (
            f" (CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()})" if torch else ""
        ),
        "TF32: off in CuPy (CUPY_TF32 unset) and in PyTorch (matmul and cuDNN set off)",
    ]
    return lines


def _torch():
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def section(repeat: int = 15) -> str | None:
    """The GPU section of results.md, measured now; None where no GPU backend is usable."""
    from zerograd.backends import NoBackendError, gpu_backend

    try:
        backend = gpu_backend()
    except NoBackendError:
        return None
    torch = _torch()
    header = machine(torch)
    t0 = time.perf_counter()
    rows = measure(backend, torch, repeat)
    header.append(
        f"the run took {time.perf_counter() - t0:.0f} s; medians of {repeat} runs after 3 "
        f"warm-up runs"
    )
    return markdown(rows, header)


def markdown(rows: list[dict], header: list[str]) -> str:
    """The GPU table with its header lines (a section of results.md and the docs)."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [BEGIN, "## GPU", "", f"Measured by `python benchmarks/bench_gpu.py` on {when}.", ""]
    lines += [f"- {h}" for h in header] + [""]
    lines += [
        "| case | zerograd-cupy | PyTorch CUDA | ratio | target | met |",
        "| --- | ---: | ---: | ---: | --- | --- |",
    ]
    notes = []
    for r in rows:
        fmt = lambda v: "–" if v is None else f"{v:,.3g}" if v < 1000 else f"{v:,.0f}"
        ratio = "–" if r["ratio"] is None else f"{r['ratio']:.2f}×"
        met = {True: "yes", False: "**no**", None: "–"}[r["met"]]
        lines.append(
            f"| {r['case']} | {fmt(r['zerograd'])} | {fmt(r['torch'])} | {ratio} | "
            f"{r['target']} | {met} |"
        )
        if r.get("note"):
            notes.append(f"- {r['case']}: {r['note']}")
    return "\n".join(lines + [""] + notes + ["", END]) + "\n"


def splice(section: str, path: Path) -> None:
    """Replace the GPU section between the markers in ``path`` (or append it)."""
    text = path.read_text()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        text = head + section.strip() + ("\n\n" + tail if tail else "\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="folder for bench_gpu.md")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--splice", type=Path, help="a bench_gpu.md to put into the docs")
    parser.add_argument("--profile", action="store_true", help="also write OUT/profile.txt")
    args = parser.parse_args(argv)
    if args.splice:
        text = args.splice.read_text()
        for target in (HERE / "results.md", HERE.parent / "docs" / "benchmarks.md"):
            splice(text, target)
            print(f"wrote the GPU section into {target}")
        return 0
    from zerograd.backends import NoBackendError, gpu_backend

    try:
        backend = gpu_backend()
    except NoBackendError as exc:
        print(f"bench_gpu: no usable GPU here: {exc}", file=sys.stderr)
        return 3
    text = section(args.repeat)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench_gpu.md").write_text(text)
        if args.profile:
            profile(backend, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
