"""A small CNN on scikit-learn's 8x8 handwritten digits (1,797 images, shipped in its wheel).

conv 3x3 (16 channels, pad 1) -> relu -> max pool 2 -> linear 64 -> relu -> linear 10,
trained with Adam by zerograd_nn.training.Trainer; prints the loss and the test accuracy per
epoch, then the final test accuracy (above 95%). Needs scikit-learn for the data only:
pip install scikit-learn.

    python examples/cnn_digits.py [--epochs 15] [--gpu] [--out DIR] [--resume SNAPSHOT]

``--gpu`` trains on the GPU backend (zerograd-cupy), as the book does: the model and the
data loaders are moved with ``to_gpu()``. ``--out DIR`` writes the log (``log.jsonl``), live
plots of the losses (``loss.png``) and the accuracies (``accuracy.png``; both need
matplotlib) and a snapshot per epoch; ``--resume DIR`` continues from the newest snapshot in
DIR (or ``--resume`` a file), with the ``--seed`` of the run that wrote it (the seed draws the
train/test split).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _args import out_folder, positive_int, seed  # examples/_args.py
from _interrupt import run_main  # examples/_interrupt.py

import zerograd
import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd import no_grad, test_mode
from zerograd.backends import NoBackendError, as_cupy
from zerograd_nn import DataLoader, Model
from zerograd_nn.datasets import Dataset
from zerograd_nn.optimizers import Adam
from zerograd_nn.training import (
    Evaluator,
    Extension,
    LogReport,
    PlotReport,
    PrintReport,
    ProgressBar,
    Snapshot,
    Trainer,
)


def load_digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """Images (N, 1, 8, 8) float32 in [0, 1] and labels (N,) int64."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise SystemExit(
            "cnn_digits.py needs scikit-learn for the digits data: pip install scikit-learn"
        ) from None
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    return x, digits.target.astype(np.int64)


class Digits(Dataset):
    """One split of the digits: a seeded 80/20 shuffle split."""

    def __init__(self, train: bool = True, seed: int = 0) -> None:
        self.seed = seed
        super().__init__(train)

    def prepare(self) -> None:
        x, t = load_digits_arrays()
        order = np.random.RandomState(self.seed).permutation(len(x))
        cut = int(len(x) * 0.8)
        idx = order[:cut] if self.train else order[cut:]
        self.data, self.label = x[idx], t[idx]


class SplitSeed(Extension):
    """Keeps the seed of the 80/20 split in the snapshots: a run resumed with another
    ``--seed`` would train on images its first epochs tested on (and test on ones they
    trained on), so such a resume is refused."""

    trigger = (1, "epoch")  # nothing to do at any point: its state is its work

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def __call__(self, trainer) -> None:
        pass

    def state_dict(self) -> dict:
        return {"seed": self.seed}

    def load_state_dict(self, d: dict) -> None:
        if int(d["seed"]) != self.seed:
            raise ValueError(
                f"the snapshot was trained on the split of --seed {int(d['seed'])}, this "
                f"run's is that of --seed {self.seed}; resume with --seed {int(d['seed'])}"
            )


class CannotResume(Exception):
    """``Trainer.resume`` refused the snapshot given (its message says why): nothing was
    trained."""


class SmallCNN(Model):
    def __init__(self) -> None:
        super().__init__()
        self.conv = L.Conv2d(16, kernel_size=3, stride=1, pad=1)
        self.fc1 = L.Linear(64)
        self.fc2 = L.Linear(10)

    def forward(self, x):
        h = F.pooling(F.relu(self.conv(x)), 2, 2)  # (N, 16, 4, 4)
        h = F.relu(self.fc1(F.reshape(h, (h.shape[0], -1))))
        return self.fc2(h)


def evaluate(model: Model, dataset: Dataset, gpu: bool = False) -> float:
    """Accuracy on the whole dataset (test mode, no graph)."""
    x, t = dataset.data, dataset.label
    if gpu:
        x, t = as_cupy(x), as_cupy(t)
    with no_grad(), test_mode():
        return float(F.accuracy(model(x), t).data)


def train(
    epochs: int = 15,
    batch_size: int = 32,
    seed: int = 0,
    verbose: bool = True,
    gpu: bool = False,
    out: str | None = None,
    resume: str | None = None,
) -> dict:
    """Train and return the model, the per-epoch log and loss, and the test accuracy."""
    zerograd.seed(seed)  # numpy's global state and the GPU's (--gpu): the same run every time
    train_set, test_set = Digits(True, seed), Digits(False, seed)
    loader = DataLoader(train_set, batch_size)
    test_loader = DataLoader(test_set, 128, shuffle=False)
    model = SmallCNN()
    if gpu:
        loader.to_gpu()
        test_loader.to_gpu()
        model.to_gpu()
    optimizer = Adam(alpha=0.003).setup(model)
    trainer = Trainer(
        model,
        optimizer,
        loader,
        F.softmax_cross_entropy,
        max_epochs=epochs,
        metrics={"accuracy": F.accuracy},
        out=out or ".",
    )
    trainer.extend(Evaluator(test_loader))
    trainer.extend(SplitSeed(seed))
    log = trainer.extend(LogReport(filename="log.jsonl" if out else None))
    if verbose:
        trainer.extend(PrintReport(["epoch", "loss", "accuracy", "val/loss", "val/accuracy"]))
        trainer.extend(ProgressBar())
    if out:
        try:
            trainer.extend(PlotReport(["loss", "val/loss"], filename="loss.png"))
            trainer.extend(PlotReport(["accuracy", "val/accuracy"], filename="accuracy.png"))
        except ImportError as exc:
            print(f"plot skipped: {exc}")
        trainer.extend(Snapshot())
    if resume:
        try:
            trainer.resume(resume)
        except (OSError, ValueError) as exc:  # no snapshot there, damaged, another model's
            raise CannotResume(str(exc)) from exc
    trainer.run()
    return {
        "model": model,
        "log": log.log,
        "losses": [entry["loss"] for entry in log.log],
        "test_accuracy": evaluate(model, test_set, gpu),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=positive_int, default=15, help="(default: 15)")
    parser.add_argument(
        "--seed", type=seed, default=0, help="draws the split and the weights (default: 0)"
    )
    parser.add_argument("--gpu", action="store_true", help="train on the GPU (zerograd-cupy)")
    parser.add_argument(
        "--out", type=out_folder, help="folder for the log, the plots and the snapshots"
    )
    parser.add_argument("--resume", help="a snapshot, or a folder: its newest snapshot")
    args = parser.parse_args()
    out = str(args.out) if args.out is not None else None
    t0 = time.perf_counter()
    try:
        result = train(args.epochs, seed=args.seed, gpu=args.gpu, out=out, resume=args.resume)
    except NoBackendError as exc:  # --gpu on a machine without a usable GPU
        raise SystemExit(f"cnn_digits.py --gpu: {exc}") from None
    except CannotResume as exc:
        parser.error(f"argument --resume: {exc}")
    took = time.perf_counter() - t0
    print(f"test accuracy: {result['test_accuracy']:.1%} ({took:.1f} s)")


if __name__ == "__main__":
    run_main(main)
