"""Reference engine 1 of 2 for the per-op row: the least a define-by-run engine records.

A first-order-only tape in plain Python: every op makes one output node and appends one
entry (output, input, backward closure) to a list; backward runs the list in reverse.
There is no Function object, no weak reference, no generation, no check and no higher
order. It is not a framework (only the per-op row runs it): it shows how close to
numpy-hand any engine written in Python gets on the chain. ``fw_graph.py`` is the next
step up, the book's graph.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

TAPE: list[tuple[Node, Node, Callable]] = []


class Node:
    """A recorded value: its array and, during backward, its gradient."""

    __slots__ = ("data", "grad")

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        self.grad = None

    def __add__(self, c: np.ndarray) -> Node:
        """``self + c`` for a constant array ``c``, recorded with its derivative."""
        y = Node(self.data + c)
        TAPE.append((y, self, _same))
        return y

    def __mul__(self, c: np.ndarray) -> Node:
        """``self * c`` for a constant array ``c``, recorded with its derivative."""
        y = Node(self.data * c)
        TAPE.append((y, self, lambda g: g * c))
        return y


def _same(g: np.ndarray) -> np.ndarray:
    """The identity: add's derivative."""
    return g


def tanh(x: Node) -> Node:
    """``tanh(x)``, recorded with its derivative."""
    t = np.tanh(x.data)
    y = Node(t)
    TAPE.append((y, x, lambda g: g * (1 - t * t)))
    return y


def sin(x: Node) -> Node:
    """``sin(x)``, recorded with its derivative."""
    a = x.data
    y = Node(np.sin(a))
    TAPE.append((y, x, lambda g: g * np.cos(a)))
    return y


def backward(y: Node) -> None:
    """Run the tape in reverse from ``y``, accumulating gradients; then clear the tape."""
    y.grad = np.ones_like(y.data)
    for out, inp, back in reversed(TAPE):
        g = back(out.grad)
        inp.grad = g if inp.grad is None else inp.grad + g
        out.grad = None
    TAPE.clear()


leaf = Node  # the graph workloads' pieces: leaf, tanh, sin, backward, grad


def grad(x: Node) -> np.ndarray:
    """The gradient of leaf ``x``."""
    return x.grad


def setup(threads: int) -> None:
    """Nothing to do: numpy threads through BLAS (set by environment)."""
