"""Array calls per training step (zerograd.testing.calls) and the flat-parameter update.

1. numpy calls of one eager MLP 784-1000-1000-10 step (sigmoid and relu, batch 100,
   SGD), counted with ``CallCounter``: on a GPU each is a kernel launch.
2. Calls of one Adam update as the number of parameters grows 4 → 64 (flat parameters),
   beside what the per-parameter update makes.
3. Time of one Adam update of the char_rnn example's model (examples/char_rnn.py) with
   flat parameters against the per-parameter update it replaced ("today": the same code
   with packing switched off) and against numpy-hand, the same steps written as bare numpy
   calls on flat buffers (the floor of the array work), interleaved in one process.
"""

from __future__ import annotations

import statistics
import sys
from contextlib import nullcontext
from pathlib import Path
from unittest import mock

import numpy as np
from common import row, side_by_side
from fw_numpy import adam_into

HERE = Path(__file__).parent
GROUP = "array calls and flat parameters (CPU, 1 process)"


def _per_parameter():
    """The update as it was before flat parameters: no backend packed."""
    from zerograd_nn.optimizers import flat

    return mock.patch.object(flat, "PACKED_BACKENDS", frozenset())


def _pack_every_size():
    """Parameters of any size packed, as the CuPy backend packs them (see flat.PACK_LIMITS)."""
    from zerograd_nn.optimizers import flat

    return mock.patch.object(flat, "PACK_LIMITS", {})


def mlp_step_calls(activation: str) -> tuple[int, dict]:
    """numpy calls of the second eager step (the first packs the parameters)."""
    from workloads import mlp_data

    import zerograd_nn.functional as F
    from zerograd.testing.calls import CallCounter
    from zerograd_nn.models import MLP
    from zerograd_nn.optimizers import SGD

    counter = CallCounter()
    model = MLP((1000, 1000, 10), activation=getattr(F, activation))
    x, t = mlp_data(100, seed=0)
    x = counter.array(x)
    model(x)
    counter.track(model)
    opt = SGD(lr=0.1).setup(model)
    for _ in range(2):
        with counter:
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            opt.update()
    return counter.count, dict(counter.calls)


def adam_calls(n_params: int) -> int:
    """Calls of a steady Adam update of ``n_params`` parameters (8×8 weights, 8 biases)."""
    from zerograd import Parameter, Variable
    from zerograd.testing.calls import CallCounter
    from zerograd_nn.optimizers import Adam

    counter = CallCounter()
    rng = np.random.default_rng(0)
    shapes = [(8, 8) if i % 2 == 0 else (8,) for i in range(n_params)]
    ps = [Parameter(counter.array(rng.standard_normal(s).astype(np.float32))) for s in shapes]
    opt = Adam(0.01).setup(ps)
    for _ in range(2):
        for p in ps:
            p.grad = Variable(counter.array(rng.standard_normal(p.shape).astype(np.float32)))
        with counter:
            opt.update()
    return counter.count


def char_rnn_adam(repeat: int = 30) -> dict[str, float]:
    """Seconds per Adam update of the char_rnn model: flat, and per parameter."""
    sys.path.insert(0, str(HERE.parent / "examples"))
    try:
        from char_rnn import TEXT, CharLSTM
    finally:
        sys.path.pop(0)
    from zerograd import Variable
    from zerograd_nn.datasets import TextCharDataset
    from zerograd_nn.optimizers import Adam

    vocab = TextCharDataset(path=TEXT).vocab_size
    rng = np.random.default_rng(0)
    ids = rng.integers(0, vocab, 16)
    models, opts = [], []
    for _ in range(2):
        model = CharLSTM(vocab)
        model(ids)  # sizes the lazy layers
        models.append(model)
        opts.append(Adam(alpha=0.005).setup(model))
    grads = [rng.standard_normal(p.shape).astype(np.float32) for p in models[0].params()]

    def step(i: int) -> None:
        for p, g in zip(models[i].params(), grads):
            p.grad = Variable(g)
        opts[i].update()

    def per_parameter() -> None:
        with _per_parameter():
            step(1)

    params = list(models[1].params())
    size = sum(g.size for g in grads)
    flat_g, m, v, s = (np.zeros(size, np.float32) for _ in range(4))
    data = np.concatenate([p.data.ravel() for p in params])

    def numpy_hand() -> None:
        """The flat update's array work alone: gradients set as the other arms set them,
        gathered with one copy, then Adam's 12 in-place calls (fw_numpy.adam_into)."""
        for p, g in zip(params, grads):
            p.grad = Variable(g)
        np.concatenate([p.grad.data.ravel() for p in params], out=flat_g)
        adam_into(data, flat_g, m, v, s, 0.005)

    secs = side_by_side(
        {"flat": lambda: step(0), "today": per_parameter, "numpy-hand": numpy_hand},
        repeat,
        statistics.median,
    )
    secs["params"] = len(grads)
    secs["floats"] = sum(g.size for g in grads)
    return secs


def mlp_sgd_update(repeat: int = 30) -> dict[str, float]:
    """Seconds per SGD update of an MLP 784-1000-1000-10 (1.8 M float32): numpy's default
    (parameters over ``flat.PACK_LIMITS`` left out of the flat buffer), every parameter
    packed (as on CuPy), and the per-parameter update, interleaved in one process."""
    from zerograd import Variable
    from zerograd_nn.models import MLP
    from zerograd_nn.optimizers import SGD

    arms = {}
    for name in ("numpy default", "every size packed", "per parameter"):
        model = MLP((1000, 1000, 10))
        model(np.zeros((1, 784), np.float32))  # sizes the lazy layers
        arms[name] = (model, SGD(lr=0.01).setup(model))
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(p.shape).astype(np.float32) for p in model.params()]
    modes = {
        "numpy default": nullcontext,
        "every size packed": _pack_every_size,
        "per parameter": _per_parameter,
    }

    def arm(name: str):
        model, opt = arms[name]

        def update() -> None:
            for p, g in zip(model.params(), grads):
                p.grad = Variable(g)  # what backward hands over: a gradient array per parameter
            with modes[name]():
                opt.update()

        return update

    return side_by_side({name: arm(name) for name in arms}, repeat, statistics.median)


def run() -> list[dict]:
    """Rows for benchmarks/run.py."""
    rows = []
    for act in ("sigmoid", "relu"):
        with _pack_every_size():
            n, calls = mlp_step_calls(act)
        own, _ = mlp_step_calls(act)
        r = row(
            GROUP,
            f"numpy calls per eager MLP 784-1000-1000-10 {act} SGD step (batch 100), every "
            "parameter packed as on CuPy",
            {"zerograd": n},
            target="≤ 25" if act == "relu" else "report",
        )
        r["met"] = n <= 25 if act == "relu" else None
        top = sorted(calls.items(), key=lambda kv: -kv[1])[:6]
        r["note"] = (
            "most called: "
            + ", ".join(f"{k} {v}" for k, v in top)
            + f"; numpy's own default, which leaves the two weight matrices (over 65,536 "
            f"elements) out of the flat buffer: {own} calls"
        )
        rows.append(r)
    few, many = adam_calls(4), adam_calls(64)
    with _per_parameter():
        few_pp, many_pp = adam_calls(4), adam_calls(64)
    r = row(GROUP, "calls of one Adam update, 64 parameters vs 4", {"zerograd": many}, target="")
    r["ratio"] = many / few
    r["target"] = "constant (ratio 1)"
    r["met"] = many == few
    r["note"] = f"4 parameters: {few} calls; per-parameter update: {few_pp} → {many_pp}"
    rows.append(r)
    secs = char_rnn_adam()
    r = row(
        GROUP,
        f"Adam update of the char_rnn model ({secs['params']} parameters, "
        f"{secs['floats'] / 1e3:.0f} k float32), ms, flat vs the per-parameter update",
        {"zerograd": secs["flat"] * 1e3},
        target="≤ 0.5× today",
    )
    r["ratio"] = secs["flat"] / secs["today"]
    r["met"] = r["ratio"] <= 0.5
    r["note"] = (
        f"per-parameter update (today): {secs['today'] * 1e3:.3f} ms; numpy-hand (the same "
        f"array calls on flat buffers, no framework): {secs['numpy-hand'] * 1e3:.3f} ms = "
        f"{secs['numpy-hand'] / secs['today']:.2f}× today, the floor of this row; flat = "
        f"{secs['flat'] / secs['numpy-hand']:.2f}× numpy-hand; medians"
    )
    rows.append(r)
    secs = mlp_sgd_update()
    r = row(
        GROUP,
        "SGD update of an MLP 784-1000-1000-10 (6 parameters, 1.8 M float32), ms: numpy's "
        "default vs every parameter packed",
        {"zerograd": secs["numpy default"] * 1e3},
        target="< 1 (leaving large parameters out pays)",
    )
    r["ratio"] = secs["numpy default"] / secs["every size packed"]
    r["met"] = r["ratio"] < 1
    r["note"] = (
        f"numpy's default leaves the two weight matrices (over 65,536 elements) out of the "
        f"flat buffer; every parameter packed (as on CuPy): "
        f"{secs['every size packed'] * 1e3:.2f} ms; per-parameter update: "
        f"{secs['per parameter'] * 1e3:.2f} ms; medians, interleaved in one process"
    )
    rows.append(r)
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
