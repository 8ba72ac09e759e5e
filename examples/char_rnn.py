"""A character-level LSTM language model on a small local text, then sampled.

EmbedID -> LSTM -> Linear over the characters of ``examples/data/tiny_tales.txt`` (short
tales written for this project), trained with truncated BPTT through SeqDataLoader and
Adam. Prints the loss (nats per character) per epoch and a text sampled from the model.
Any text works: ``--text path/to/file.txt`` (with ``--encoding latin-1``, say, for one not
in UTF-8); DeZero's ``Shakespear`` dataset reads tiny-shakespeare the same way when you
place it locally.

Each window of 25 characters is one call of a function (examples/_bptt.py: forward,
backward, the graph behind the LSTM's state cut, the update).

    python examples/char_rnn.py [--epochs 20] [--text FILE] [--encoding utf-8] [--gpu] [--static]

``--gpu`` trains on the GPU backend (zerograd-cupy): the loader and the model are moved
with ``to_gpu()``. ``--static`` runs that function under ``zerograd.static_graph``: recorded
on its first calls, then replayed with no graph objects, giving the same losses to the
last bit.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _args import positive_int  # examples/_args.py
from _bptt import window_step, windows  # examples/_bptt.py
from _interrupt import run_main  # examples/_interrupt.py
from _progress import progress  # examples/_progress.py

import zerograd
import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd import no_grad, static_graph
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


BATCH_SIZE = 16


def train(
    text_path: Path = TEXT,
    epochs: int = 20,
    batch_size: int = BATCH_SIZE,
    bptt_length: int = 25,
    seed: int = 0,
    verbose: bool = True,
    gpu: bool = False,
    static: bool = False,
    encoding: str = "utf-8",
) -> dict:
    """Train; returns the model, the dataset, the loss per epoch (nats per character) and
    each epoch's CPU seconds.

    ``static`` replays the window step with ``zerograd.static_graph`` (same results);
    ``encoding`` is the text file's.
    """
    zerograd.seed(seed)  # numpy's global state and the GPU's (--gpu): the same run every time
    dataset = TextCharDataset(path=text_path, encoding=encoding)
    loader = SeqDataLoader(dataset, batch_size=batch_size)
    model = CharLSTM(dataset.vocab_size)
    if gpu:
        loader.to_gpu()
        model.to_gpu()
    optimizer = Adam(alpha=0.005).setup(model)
    step = window_step(model, optimizer, F.softmax_cross_entropy)
    if static:
        step = static_graph(step)
    losses, epoch_times = [], []
    for epoch in range(1, epochs + 1):
        started = time.process_time()
        model.reset_state()
        total = 0.0
        for xs, ts in windows(progress(loader, verbose, f"epoch {epoch}"), bptt_length):
            total += float(step(xs, ts).data)
        losses.append(total / len(loader))
        epoch_times.append(time.process_time() - started)  # CPU seconds
        if verbose:
            print(f"epoch {epoch:3d}  loss {losses[-1]:.3f} nats/char")
    if gpu:
        model.to_cpu()  # sampling below runs on the CPU
    return {"model": model, "dataset": dataset, "losses": losses, "epoch_times": epoch_times}


def sample(model: CharLSTM, dataset: TextCharDataset, prime: str | None = None,
           length: int = 300, temperature: float = 0.7, seed: int = 0) -> str:  # fmt: skip
    """Generate ``length`` characters after ``prime``, sampling at ``temperature``.

    ``prime=None`` starts from ``"The "``, or from the text's first 4 characters where
    the text lacks one of those (a text of another language, or in lower case).
    """
    if prime is None:
        prime = "The " if set("The ") <= dataset.char_to_id.keys() else dataset.text[:4]
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
    parser.add_argument(
        "--epochs", type=positive_int, default=20, help="passes over the text (default: 20)"
    )
    parser.add_argument(
        "--text",
        type=Path,
        default=TEXT,
        help="a text file to learn (default: examples/data/tiny_tales.txt)",
    )
    parser.add_argument(
        "--encoding", default="utf-8", help="the text file's: latin-1, cp1252, ... (default: utf-8)"
    )
    parser.add_argument("--gpu", action="store_true", help="train on the GPU (zerograd-cupy)")
    parser.add_argument("--static", action="store_true", help="replay each window (static_graph)")
    args = parser.parse_args()
    try:  # read here too, so that a bad file is one line before training, not a traceback
        text = TextCharDataset(path=args.text, encoding=args.encoding).text
    except LookupError as exc:  # an encoding Python does not know
        parser.error(f"argument --encoding: {exc}")
    except (OSError, ValueError) as exc:
        parser.error(f"argument --text: {exc}")
    if len(text) <= BATCH_SIZE:
        parser.error(
            f"argument --text: {str(args.text)!r} holds {len(text)} characters; char_rnn.py "
            f"needs {BATCH_SIZE + 1} or more (each of a batch's {BATCH_SIZE} rows reads its "
            "own stretch of the text)"
        )
    t0 = time.perf_counter()
    try:
        result = train(
            args.text, args.epochs, gpu=args.gpu, static=args.static, encoding=args.encoding
        )
    except NoBackendError as exc:  # --gpu on a machine without a usable GPU
        raise SystemExit(f"char_rnn.py --gpu: {exc}") from None
    took = time.perf_counter() - t0
    print(f"trained in {took:.1f} s; sample:\n")
    print(sample(result["model"], result["dataset"]))


if __name__ == "__main__":
    run_main(main)
