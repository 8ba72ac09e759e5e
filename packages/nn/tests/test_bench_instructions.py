"""benchmarks/bench_core.py's instruction row: what it says without valgrind, and its count."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture
def bench(bench_module):
    return bench_module("bench_core")


def test_without_valgrind_the_row_says_what_to_install_and_claims_nothing(bench, monkeypatch):
    monkeypatch.setattr(bench.shutil, "which", lambda name: None)
    r = bench.instruction_row()
    assert r["zerograd"] is None and r["ratio"] is None and r["met"] is None
    assert r["note"] == "not measured: valgrind is not installed (apt install valgrind)"


def test_the_count_per_op_is_the_difference_of_two_processes_over_their_ops(bench, monkeypatch):
    counts = {("numpy", 1): 5_000_000, ("numpy", 3): 7_000_000}
    monkeypatch.setattr(bench.shutil, "which", lambda name: "/usr/bin/valgrind")
    monkeypatch.setattr(bench, "_COUNTED", ("numpy",))
    monkeypatch.setattr(bench, "_instructions", lambda fw, chains: counts[(fw, chains)])
    r = bench.instruction_row(1, 3)
    assert r["numpy"] == 2_000_000 / (2 * bench.CHAIN) == 1000.0


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_cachegrind_counts_a_chain_of_numpy_hand(bench):
    one_more = bench._instructions("numpy", 1) - bench._instructions("numpy", 0)
    # a 1,000-op chain of numpy-hand, forward and backward: about 11 M instructions here
    assert 3e6 < one_more < 40e6
