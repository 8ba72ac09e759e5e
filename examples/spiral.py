"""Spiral classification with a two-layer MLP (the book's steps 48-49).

Trains ``MLP((hidden, 3))`` with SGD (lr 1.0) on the 300-point spiral in mini-batches of
30, prints the loss falling and the accuracy rising (means over each epoch's batches,
taken while the weights change), then the final training accuracy (the trained model on
all 300 points). With zerograd-viz installed it also writes ``spiral_boundary.png``
(decision regions), ``spiral_history.png`` (loss and accuracy per epoch) and
``spiral_graph.svg`` (the computational graph of the loss; needs Graphviz's ``dot``).

    python examples/spiral.py [--epochs 300] [--hidden 10] [--out .] [--gpu]

``--gpu`` trains on the GPU backend (zerograd-cupy): the loader and the model are moved
with ``to_gpu()``, as the book's step 52 does.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from _args import out_folder, positive_float, positive_int, seed  # examples/_args.py
from _interrupt import run_main  # examples/_interrupt.py
from _progress import progress, say  # examples/_progress.py

import zerograd
import zerograd_nn.functional as F
from zerograd import no_grad
from zerograd.backends import NoBackendError, as_cupy
from zerograd_nn import DataLoader
from zerograd_nn.datasets import Spiral
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import SGD


def train(
    hidden: int = 10,
    epochs: int = 300,
    batch_size: int = 30,
    lr: float = 1.0,
    seed: int = 0,
    log_every: int = 30,
    verbose: bool = True,
    gpu: bool = False,
) -> dict:
    """Train on the spiral; returns the model, the history and the final training accuracy."""
    zerograd.seed(seed)  # numpy's global state and the GPU's (--gpu): the same run every time
    train_set = Spiral(train=True)
    loader = DataLoader(train_set, batch_size)
    model = MLP((hidden, 3))
    if gpu:
        loader.to_gpu()
        model.to_gpu()  # its weights are made on the GPU at the first batch
    optimizer = SGD(lr).setup(model)
    history: dict[str, list[float]] = {"loss": [], "accuracy": []}
    for epoch in progress(range(1, epochs + 1), verbose, "spiral"):
        sum_loss = sum_acc = 0.0
        for x, t in loader:
            y = model(x)
            loss = F.softmax_cross_entropy(y, t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            sum_loss += float(loss.data) * len(t)
            sum_acc += float(F.accuracy(y, t).data) * len(t)
        history["loss"].append(sum_loss / len(train_set))
        history["accuracy"].append(sum_acc / len(train_set))
        if verbose and (epoch % log_every == 0 or epoch in (1, epochs)):
            if epoch == 1:
                say("loss and acc: means over the epoch's batches, taken while training")
            avg_loss, avg_acc = history["loss"][-1], history["accuracy"][-1]
            say(f"epoch {epoch:4d}  loss {avg_loss:.4f}  acc {avg_acc:.3f}")
    x_all, t_all = train_set.data, train_set.label
    if gpu:
        x_all, t_all = as_cupy(x_all), as_cupy(t_all)
    with no_grad():
        accuracy = float(F.accuracy(model(x_all), t_all).data)
    if gpu:
        model.to_cpu()  # plots and the returned model are on the CPU
    return {
        "model": model,
        "history": history,
        "train_accuracy": accuracy,
        "x": train_set.data,
        "t": train_set.label,
    }


def plot(result: dict, out: Path) -> None:
    """Write the decision-boundary and history PNGs and the loss graph (zerograd-viz)."""
    try:
        from zerograd_viz import (
            GraphvizError,
            plot_decision_boundary,
            plot_dot_graph,
            plot_history,
        )
    except ImportError:
        print(
            "(plots skipped: zerograd-viz is not installed; from the repository's root: "
            "pip install './packages/viz[plot]')"
        )
        return
    out.mkdir(parents=True, exist_ok=True)
    model = result["model"]
    try:
        b = plot_decision_boundary(model, result["x"], result["t"], out / "spiral_boundary.png")
        h = plot_history(result["history"], out / "spiral_history.png")
    except ImportError as exc:  # e.g. matplotlib missing behind zerograd-viz
        print(f"(plots skipped: {exc})")
        return
    print(f"wrote {b} and {h}")
    loss = F.softmax_cross_entropy(model(result["x"]), result["t"])
    try:
        g = plot_dot_graph(loss, verbose=False, to_file=str(out / "spiral_graph.svg"))
    except GraphvizError as exc:  # dot missing or failing: say why, keep the rest
        print(f"(graph skipped: {exc})")
        return
    print(f"wrote {g if isinstance(g, (str, Path)) else out / 'spiral_graph.svg'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=positive_int, default=300, help="(default: 300)")
    parser.add_argument(
        "--hidden", type=positive_int, default=10, help="hidden layer width (default: 10)"
    )
    parser.add_argument(
        "--lr", type=positive_float, default=1.0, help="SGD's learning rate (default: 1.0)"
    )
    parser.add_argument(
        "--seed", type=seed, default=0, help="draws the weights and batches (default: 0)"
    )
    parser.add_argument(
        "--out", type=out_folder, default=".", help="folder for the PNGs (default: .)"
    )
    parser.add_argument("--gpu", action="store_true", help="train on the GPU (zerograd-cupy)")
    args = parser.parse_args()
    t0 = time.perf_counter()
    try:
        result = train(args.hidden, args.epochs, lr=args.lr, seed=args.seed, gpu=args.gpu)
    except NoBackendError as exc:  # --gpu on a machine without a usable GPU
        raise SystemExit(f"spiral.py --gpu: {exc}") from None
    took = time.perf_counter() - t0
    print(
        f"final training accuracy: {result['train_accuracy']:.1%} (the trained model on all "
        f"{len(result['t'])} training points; {took:.1f} s)"
    )
    losses = result["history"]["loss"]
    if not math.isfinite(losses[-1]):  # the plots of a nan model say nothing
        epoch = next(i for i, v in enumerate(losses, 1) if not math.isfinite(v))
        raise SystemExit(
            f"spiral.py: the training diverged (the loss was {losses[epoch - 1]} at epoch "
            f"{epoch}), so nothing was plotted; try an --lr smaller than {args.lr:g}"
        )
    plot(result, args.out)


if __name__ == "__main__":
    run_main(main)
