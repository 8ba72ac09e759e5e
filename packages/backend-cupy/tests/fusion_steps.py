"""A training step with forward, backward and no_grad chains, shared by the GPU test of the
fused kernels and its CPU twin (numpy with the step-by-step reference as ``fuse``), so the
chains and the calls saved that the GPU test expects are the ones the CPU twin finds."""

from __future__ import annotations

import re

import zerograd
import zerograd.functions as F

CHAINS = [
    ["mul", "sub", "div", "tanh"],  # b / 3 joins: Div's vjp, expanded, reads only the 3.0
    ["neg", "add"],  # tanh's vjp reads its value, so -(...) + x starts a chain
    ["neg", "mul", "sub", "mul", "div"],  # the backward: the vjps of neg, tanh and div
    ["mul", "add", "sub", "div", "exp"],  # the five ops under no_grad
]
"""The chains a replay of :func:`make` finds, in the order the planner meets them."""

SAVED = sum(len(c) for c in CHAINS) - len(CHAINS)
"""Kernel calls a fusing replay makes fewer than one with a kernel per op (16 ops, 4 calls)."""


def make(w):
    """The step on Parameter ``w``: its loss, ``w``'s gradient and a no_grad value."""

    def step(x):
        x = zerograd.Variable(x)
        w.cleargrad()
        b = x * w - 0.5
        d = -F.tanh(b / 3.0) + x
        y = F.sum(d * d)
        y.backward()
        with zerograd.no_grad():
            scaled = F.exp((x * 0.5 + w) / (x - 2.0))
        return y, w.grad, scaled

    return step


def kernel_calls(step) -> int:
    """The lines of a static_graph's replay that call a kernel or a fused chain."""
    return len(re.findall(r"^ +s\d+ = k\d+\(", step.sources()[0], re.MULTILINE))
