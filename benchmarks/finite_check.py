"""What the opt-in gradient check costs per training step (``Trainer(check_grads=True)``).

Runs the Trainer's step (forward, loss, cleargrads, backward, update) on two MLPs with
and without ``zerograd_nn.finite.check_finite_grads`` between backward and update, and
prints the milliseconds per step and the check's share. 1 thread, CPU time of the process
(see README.md, "Clocks"); each figure is the median of ``--rounds`` rounds, the two
variants alternating so that noise hits both alike.

    python benchmarks/finite_check.py [--rounds 7] [--steps 30]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import zerograd_nn.functional as F  # noqa: E402
from zerograd_nn.finite import check_finite_grads  # noqa: E402
from zerograd_nn.models import MLP  # noqa: E402
from zerograd_nn.optimizers import SGD  # noqa: E402

CASES = [  # name, layer sizes, input size, batch
    ("spiral MLP 2-10-3, batch 30", (10, 3), 2, 30),
    ("MLP 784-1000-1000-10 relu, batch 100", (1000, 1000, 10), 784, 100),
]


def _ms_per_step(model, optimizer, x, t, steps: int, check: bool) -> float:
    t0 = time.process_time()
    for _ in range(steps):
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        if check:
            check_finite_grads(model)
        optimizer.update()
    return (time.process_time() - t0) / steps * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    print("| model | step (ms) | step + check (ms) | check (ms) | share |")
    print("| --- | --- | --- | --- | --- |")
    for name, sizes, n_in, batch in CASES:
        rng = np.random.default_rng(0)
        x = rng.standard_normal((batch, n_in)).astype(np.float32)
        t = rng.integers(0, sizes[-1], batch)
        np.random.seed(0)
        model = MLP(sizes, activation=F.relu)
        optimizer = SGD(1e-3).setup(model)
        _ms_per_step(model, optimizer, x, t, 3, True)  # warm up
        plain, checked = [], []
        for _ in range(args.rounds):
            plain.append(_ms_per_step(model, optimizer, x, t, args.steps, False))
            checked.append(_ms_per_step(model, optimizer, x, t, args.steps, True))
        a, b = statistics.median(plain), statistics.median(checked)
        print(f"| {name} | {a:.3f} | {b:.3f} | {b - a:.3f} | {(b - a) / a:.1%} |")


if __name__ == "__main__":
    main()
