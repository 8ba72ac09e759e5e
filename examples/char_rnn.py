"""A character-level LSTM language model on a small local text, then sampled.

EmbedID -> LSTM -> Linear over the characters of ``examples/data/tiny_tales.txt`` (short
tales written for this project), trained with truncated BPTT through SeqDataLoader and
Adam. Prints the loss (nats per character) per epoch and a text sampled from the model.
Any UTF-8 text works: ``--text path/to/file.txt``; DeZero's ``Shakespear`` dataset reads
tiny-shakespeare the same way when you place it locally.

    python examples/char_rnn.py [--epochs 20] [--text FILE] [--gpu]

``--gpu`` trains on the GPU backend (zerograd-cupy): the loader and the model are moved
with ``to_gpu()``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _progress import progress  # examples/_progress.py

import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd import no_grad
from zerograd.backends import NoBackendError
from zerograd_nn import Model, SeqDataLoader
from zerograd_nn.datasets import TextCharDataset
from zerograd_nn.optimizers import Adam

TEXT = Path(__file__).parent / "data" / "tiny_tales.txt"


class CharLSTM(Model):
    def __init__(self, vocab_size: int, embed_size: int = 32, hidden_size: int = 128) -> None:
        super().__init__()
        self.embed = L.EmbedID(vocab_size, embed_size)
        self.rnn = L.LSTM(hidden_size)
        self.fc = L.Linear(vocab_size)

    def reset_state(self) -> None:
        self.rnn.reset_state()

    def forward(self, ids):
        return self.fc(self.rnn(self.embed(ids)))


def train(
    text_path: Path = TEXT,
    epochs: int = 20,
    batch_size: int = 16,
    bptt_length: int = 25,
    seed: int = 0,
    verbose: bool = True,
    gpu: bool = False,
) -> dict:
    """Train; returns the model, the dataset and the loss per epoch (nats per character)."""
    np.random.seed(seed)
    dataset = TextCharDataset(path=text_path)
    loader = SeqDataLoader(dataset, batch_size=batch_size)
    model = CharLSTM(dataset.vocab_size)
    if gpu:
        loader.to_gpu()
        model.to_gpu()
    optimizer = Adam(alpha=0.005).setup(model)
    losses = []
    for epoch in range(1, epochs + 1):
        model.reset_state()
        loss, count, total = 0, 0, 0.0
        for x, t in progress(loader, verbose, f"epoch {epoch}"):
            loss += F.softmax_cross_entropy(model(x), t)
            count += 1
            if count % bptt_length == 0 or count == len(loader):
                model.cleargrads()
                loss.backward()
                loss.unchain_backward()
                optimizer.update()
                total += float(loss.data)
                loss = 0
        losses.append(total / count)
        if verbose:
            print(f"epoch {epoch:3d}  loss {losses[-1]:.3f} nats/char")
    if gpu:
        model.to_cpu()  # sampling below runs on the CPU
    return {"model": model, "dataset": dataset, "losses": losses}


def sample(model: CharLSTM, dataset: TextCharDataset, prime: str = "The ", length: int = 300,
           temperature: float = 0.7, seed: int = 0) -> str:  # fmt: skip
    """Generate ``length`` characters after ``prime``, sampling at ``temperature``."""
    rng = np.random.RandomState(seed)
    model.reset_state()
    out = list(prime)
    with no_grad():
        for c in prime[:-1]:
            model(dataset.encode(c))
        last = dataset.encode(prime[-1])
        for _ in range(length):
            logits = model(last).data[0].astype(np.float64) / temperature
            p = np.exp(logits - logits.max())
            i = int(rng.choice(len(p), p=p / p.sum()))
            out.append(dataset.id_to_char[i])
            last = np.array([i])
    return "".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--text", type=Path, default=TEXT)
    parser.add_argument("--gpu", action="store_true", help="train on the GPU (zerograd-cupy)")
    args = parser.parse_args()
    t0 = time.perf_counter()
    try:
        result = train(args.text, args.epochs, gpu=args.gpu)
    except NoBackendError as exc:  # --gpu on a machine without a usable GPU
        raise SystemExit(f"char_rnn.py --gpu: {exc}") from None
    took = time.perf_counter() - t0
    print(f"trained in {took:.1f} s; sample:\n")
    print(sample(result["model"], result["dataset"]))


if __name__ == "__main__":
    main()
