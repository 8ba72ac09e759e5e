"""Graphs far deeper and wider than a model's: each surface stays linear and recursion-free.

Costs are asserted as operation counts (Python lines run, counted by a tracer), never as
wall time: a cost that grows as the square of the depth shows as a count that quadruples
when the depth doubles.
"""

import numpy as np

import zerograd.functions as F
from zerograd import Variable, static_graph
from zerograd.static import fusion
from zerograd.testing.lines import lines_run

_PLAN = fusion.plan


def _fusion_plan_lines(monkeypatch, depth):
    """Lines fusion.plan runs for a traced training step ``depth`` operations deep."""
    counts = []

    def counted(*args):
        result, n = lines_run(_PLAN, *args, counted=lambda code: code is _PLAN.__code__)
        counts.append(n)
        return result

    monkeypatch.setattr(fusion, "plan", counted)

    def step(x):
        y = x
        for _ in range(depth):
            y = F.tanh(y) * 1.01 + 0.001
        y = F.sum(y)
        y.backward()
        return y

    replayed = static_graph(step)
    for i in range(4):  # eager, traced twice, replayed
        x = Variable(np.full(3, 0.1 * (i + 1)))
        y = replayed(x)
        want = Variable(x.data.copy())
        assert np.array_equal(y.data, step(want).data)
        assert np.array_equal(x.grad.data, want.grad.data)
    assert replayed.counts["replayed"] == 1
    return counts[-1]


def test_fusion_planning_of_a_deep_backward_is_linear(monkeypatch):
    # the backward of a deep chain is one long chain of gradient forwards, each read once by
    # the next: planning followed every forward's links to its chain's root (depth**2 / 2
    # steps; seconds for 10,000 operations)
    short = _fusion_plan_lines(monkeypatch, 150)
    long = _fusion_plan_lines(monkeypatch, 300)
    assert long < 2.3 * short, (short, long)
