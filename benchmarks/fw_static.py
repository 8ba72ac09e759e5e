"""zerograd with ``zerograd.static_graph``: the same workloads, replayed after recording.

The step functions are fw_zerograd.py's, wrapped; each one is called until it replays
before anything is timed (one eager call and two recorded ones: child.py's first step and
two warm-up steps, or the chain's own warm-up), so the times are the replay's. The chain
is workloads.chain_of, recorded from its leaf to its backward.
"""

from __future__ import annotations

import fw_zerograd
import numpy as np
from fw_zerograd import CNN as _CNN
from fw_zerograd import MLP as _MLP
from fw_zerograd import inputs, setup  # noqa: F401 (the same inputs and set-up)
from workloads import chain_of

from zerograd import Variable, static_graph

STATIC = True  # child.py's rnn workload trains the examples with static=True
_CHAINS: dict = {}  # (ops, n) -> the static chain
WARM = 3  # calls before a static function replays: one eager, two recorded


def _warm(fn: object, *args: object) -> None:
    for _ in range(WARM):
        fn(*args)


def chain(x0: np.ndarray, c: np.ndarray, ops: tuple[str, ...], n: int) -> float:
    """workloads.chain, its ops and backward replayed; returns the input's gradient."""
    step = _CHAINS.get((ops, n))
    if step is None:
        step = _CHAINS[(ops, n)] = static_graph(
            lambda x: chain_of(fw_zerograd, x, c, ops, n), warmup=1
        )
        _warm(lambda: step(Variable(x0)))
    x = Variable(x0)
    step(x)
    return float(x.grad.data[0])


class _Static:
    """A network whose train_step is recorded, then replayed: its first step (the one
    compared across frameworks) is eager, the next two (child.py's warm-up steps) are
    recorded, and the timed ones are replays."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self.train_step = static_graph(self.train_step)


class MLP(_Static, _MLP):
    """fw_zerograd.MLP, its step replayed."""


class CNN(_Static, _CNN):
    """fw_zerograd.CNN, its step replayed."""
