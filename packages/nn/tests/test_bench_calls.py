"""benchmarks/bench_calls.py counts what tests/test_call_counts.py pins, and runs whole."""

from __future__ import annotations

import pytest
from test_call_counts import mlp_step_calls

from zerograd_nn.optimizers import SGD


@pytest.fixture
def bench(bench_module):
    return bench_module("bench_calls")


def test_the_full_size_mlp_makes_the_calls_of_the_small_one(bench):
    with bench._pack_every_size():  # as on CuPy: the row's count
        full, calls = bench.mlp_step_calls("relu")
    small, small_calls = mlp_step_calls(lambda: SGD(0.1))
    assert full == small[-1] and calls == small_calls  # calls do not depend on sizes
    # numpy's own default leaves the two weight matrices out of the flat buffer: each
    # takes SGD's two calls of its own, beside the packed rest's
    own, own_calls = bench.mlp_step_calls("relu")
    assert own == full + 4
    assert own_calls == {**calls, "multiply": calls["multiply"] + 2, "add": calls["add"] + 2}


def test_the_rows_come_out_whole(bench, monkeypatch):
    timed, updates = bench.char_rnn_adam, bench.mlp_sgd_update
    monkeypatch.setattr(bench, "char_rnn_adam", lambda repeat=30: timed(3))  # quick runs
    monkeypatch.setattr(bench, "mlp_sgd_update", lambda repeat=30: updates(3))
    rows = bench.run()
    assert [r["target"] for r in rows] == [
        "report",
        "≤ 25",
        "constant (ratio 1)",
        "≤ 0.5× today",
        "< 1 (leaving large parameters out pays)",
    ]
    sgd = rows[4]
    assert sgd["zerograd"] > 0 and sgd["ratio"] > 0 and "per-parameter update" in sgd["note"]
    adam = rows[2]
    assert adam["ratio"] == 1.0 and adam["met"] is True
    assert "per-parameter update: 48 → 768" in adam["note"]
    assert rows[3]["zerograd"] > 0 and rows[3]["ratio"] > 0
