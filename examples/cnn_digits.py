"""A small CNN on scikit-learn's 8x8 handwritten digits (1,797 images, shipped in its wheel).

conv 3x3 (16 channels, pad 1) -> relu -> max pool 2 -> linear 64 -> relu -> linear 10,
trained with Adam; prints the loss per epoch and the test accuracy (above 95%). Needs
scikit-learn for the data only: pip install scikit-learn.

    python examples/cnn_digits.py [--epochs 15] [--gpu]

``--gpu`` trains on the GPU backend (zerograd-cupy), as the book does: the model and the
data loader are moved with ``to_gpu()``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _progress import progress  # examples/_progress.py

import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd import no_grad, test_mode
from zerograd.backends import NoBackendError, as_cupy
from zerograd_nn import DataLoader, Model
from zerograd_nn.datasets import Dataset
from zerograd_nn.optimizers import Adam


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
    epochs: int = 15, batch_size: int = 32, seed: int = 0, verbose: bool = True, gpu: bool = False
) -> dict:
    """Train and return the model, the per-epoch loss and the test accuracy."""
    np.random.seed(seed)
    train_set, test_set = Digits(True, seed), Digits(False, seed)
    loader = DataLoader(train_set, batch_size)
    model = SmallCNN()
    if gpu:
        loader.to_gpu()
        model.to_gpu()
    optimizer = Adam(alpha=0.003).setup(model)
    losses = []
    for epoch in range(1, epochs + 1):
        total = 0.0
        for x, t in progress(loader, verbose, f"epoch {epoch}"):
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            total += float(loss.data) * len(t)
        losses.append(total / len(train_set))
        if verbose:
            print(
                f"epoch {epoch:3d}  loss {losses[-1]:.4f}  "
                f"test acc {evaluate(model, test_set, gpu):.3f}"
            )
    return {"model": model, "losses": losses, "test_accuracy": evaluate(model, test_set, gpu)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gpu", action="store_true", help="train on the GPU (zerograd-cupy)")
    args = parser.parse_args()
    t0 = time.perf_counter()
    try:
        result = train(args.epochs, seed=args.seed, gpu=args.gpu)
    except NoBackendError as exc:  # --gpu on a machine without a usable GPU
        raise SystemExit(f"cnn_digits.py --gpu: {exc}") from None
    took = time.perf_counter() - t0
    print(f"test accuracy: {result['test_accuracy']:.1%} ({took:.1f} s)")


if __name__ == "__main__":
    main()
