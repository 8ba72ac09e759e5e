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


def _same(g: np.ndarray) -> np.ndarray:
    """The identity: add's derivative."""
    return g


def add(x: Node, c: np.ndarray) -> Node:
    """``x + c``, recorded with its derivative."""
    y = Node(x.data + c)
    TAPE.append((y, x, _same))
    return y


def mul(x: Node, c: np.ndarray) -> Node:
    """``x * c``, recorded with its derivative."""
    y = Node(x.data * c)
    TAPE.append((y, x, lambda g: g * c))
    return y


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


def setup(threads: int) -> None:
    """Nothing to do: numpy threads through BLAS (set by environment)."""


def chain(x0: np.ndarray, c: np.ndarray, ops: tuple[str, ...], n: int) -> float:
    """Forward and backward through ``n`` elementwise ops cycling through ``ops``; returns
    the gradient of the input (one element), which every framework must agree on."""
    x = y = Node(x0)
    for i in range(n):
        op = ops[i % len(ops)]
        if op == "add":
            y = add(y, c)
        elif op == "mul":
            y = mul(y, c)
        elif op == "tanh":
            y = tanh(y)
        else:
            y = sin(y)
    backward(y)
    return float(x.grad[0])
