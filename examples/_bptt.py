"""Truncated backpropagation through time, shared by the RNN examples (lstm_sine, char_rnn).

The book's loop feeds one time step at a time and, every ``bptt_length`` steps, runs
``backward()``, cuts the graph behind the RNN's state (``unchain_backward()``) and updates.
Here each such window is one call of a function, so that ``zerograd.static_graph`` can
record it once and replay it: the results are the same either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any


def window_step(model: Any, optimizer: Any, loss_fn: Callable) -> Callable:
    """``step(xs, ts) -> loss``: train on one window of time steps.

    Forward over every step of the window (the model keeps its state between calls),
    backward, cut the graph behind the state, update.
    """

    def window(xs: list, ts: list) -> Any:
        loss = 0
        for x, t in zip(xs, ts):
            loss += loss_fn(model(x), t)
        model.cleargrads()
        loss.backward()
        loss.unchain_backward()
        optimizer.update()
        return loss

    return window


def windows(
    batches: Iterable, length: int, prepare: Callable[[Any], Any] = lambda a: a
) -> Iterator[tuple[list, list]]:
    """The ``(x, t)`` batches grouped into lists ``(xs, ts)`` of ``length`` (the last may be
    shorter), each array passed through ``prepare``."""
    xs: list = []
    ts: list = []
    for x, t in batches:
        xs.append(prepare(x))
        ts.append(prepare(t))
        if len(xs) == length:
            yield xs, ts
            xs, ts = [], []
    if xs:
        yield xs, ts
