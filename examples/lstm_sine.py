"""An LSTM learns to predict the next point of a noisy sine wave (the book's step 60).

SinCurve (999 points of sin x + noise) through SeqDataLoader (30 parallel cursors),
truncated backpropagation every 30 steps, Adam. Prints the average loss of the first epoch,
of every 10th and of the last, then predicts the noise-free cos curve one step ahead and
prints its mean squared error. With zerograd-viz installed it writes ``lstm_sine_loss.png``.

Each window of 30 steps is one call of a function (examples/_bptt.py): the forward of
every step, backward, the graph behind the LSTM's state cut, the update.

    python examples/lstm_sine.py [--epochs 100] [--out .] [--gpu] [--static]

``--gpu`` trains on the GPU backend (zerograd-cupy), moving the loader with ``to_gpu()``.
``--static`` runs that function under ``zerograd.static_graph``: recorded on its first calls,
then replayed with no graph objects, giving the same losses to the last bit.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _args import out_folder, positive_int  # examples/_args.py
from _bptt import window_step, windows  # examples/_bptt.py
from _interrupt import run_main  # examples/_interrupt.py
from _progress import progress, say  # examples/_progress.py

import zerograd
import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd import no_grad, static_graph
from zerograd.backends import NoBackendError, as_cupy
from zerograd_nn import Model, SeqDataLoader
from zerograd_nn.datasets import SinCurve
from zerograd_nn.optimizers import Adam


class BetterRNN(Model):
    """LSTM(hidden) -> Linear(out): one prediction per time step."""

    def __init__(self, hidden_size: int, out_size: int) -> None:
        super().__init__()
        self.rnn = L.LSTM(hidden_size)
        self.fc = L.Linear(out_size)

    def reset_state(self) -> None:
        self.rnn.reset_state()

    def forward(self, x):
        return self.fc(self.rnn(x))


def train(
    epochs: int = 100,
    batch_size: int = 30,
    hidden_size: int = 100,
    bptt_length: int = 30,
    seed: int = 0,
    verbose: bool = True,
    gpu: bool = False,
    static: bool = False,
) -> dict:
    """Train; returns the model, the loss per epoch, the one-step MSE on the cos curve and
    each epoch's CPU seconds.

    ``static`` replays the window step with ``zerograd.static_graph`` (same results).
    """
    zerograd.seed(seed)  # numpy's global state and the GPU's (--gpu): the same run every time
    train_set = SinCurve(train=True)
    loader = SeqDataLoader(train_set, batch_size=batch_size)
    seqlen = len(loader)
    model = BetterRNN(hidden_size, 1)
    if gpu:
        loader.to_gpu()
        model.to_gpu()  # the LSTM's hidden-to-gate weights exist already; the rest follow x
    optimizer = Adam().setup(model)
    step = window_step(model, optimizer, F.mean_squared_error)
    if static:
        step = static_graph(step)
    losses, epoch_times = [], []
    for epoch in progress(range(1, epochs + 1), verbose, "lstm"):
        started = time.process_time()
        model.reset_state()
        total = 0.0
        for xs, ts in windows(loader, bptt_length, lambda a: a.astype(np.float32)):
            total += float(step(xs, ts).data)
        losses.append(total / seqlen)
        epoch_times.append(time.process_time() - started)  # CPU seconds
        if verbose and (epoch % 10 == 0 or epoch in (1, epochs)):
            say(f"epoch {epoch:4d}  loss {losses[-1]:.6f}")
    return {
        "model": model,
        "losses": losses,
        "test_mse": cos_mse(model, gpu),
        "epoch_times": epoch_times,
    }


def cos_mse(model: BetterRNN, gpu: bool = False) -> float:
    """Feed the noise-free cos curve point by point; MSE of the next-point predictions."""
    xs = np.cos(np.linspace(0, 4 * np.pi, 1000)).astype(np.float32)
    inputs = as_cupy(xs) if gpu else xs
    model.reset_state()
    preds = []
    with no_grad():
        for x in inputs[:-1]:
            preds.append(float(model(x.reshape(1, 1)).data[0, 0]))
    return float(np.mean((np.array(preds) - xs[1:]) ** 2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=positive_int, default=100, help="(default: 100)")
    parser.add_argument(
        "--out", type=out_folder, default=".", help="folder for the PNG (default: .)"
    )
    parser.add_argument("--gpu", action="store_true", help="train on the GPU (zerograd-cupy)")
    parser.add_argument("--static", action="store_true", help="replay each window (static_graph)")
    args = parser.parse_args()
    t0 = time.perf_counter()
    try:
        result = train(args.epochs, gpu=args.gpu, static=args.static)
    except NoBackendError as exc:  # --gpu on a machine without a usable GPU
        raise SystemExit(f"lstm_sine.py --gpu: {exc}") from None
    took = time.perf_counter() - t0
    print(f"final loss {result['losses'][-1]:.6f}; one-step MSE on cos: {result['test_mse']:.6f}")
    print(f"({took:.1f} s)")
    try:
        from zerograd_viz import plot_history
    except ImportError:
        print(
            "(plot skipped: zerograd-viz is not installed; from the repository's root: "
            "pip install './packages/viz[plot]')"
        )
        return
    try:
        written = plot_history({"loss": result["losses"]}, args.out / "lstm_sine_loss.png")
    except ImportError as exc:  # matplotlib missing behind zerograd-viz
        print(f"(plot skipped: {exc})")
        return
    print("wrote", written)


if __name__ == "__main__":
    run_main(main)
