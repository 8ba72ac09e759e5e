"""The shared backend fixtures (backend, arr, rand, to_np) come from zerograd.testing;
``bench_module`` imports a module of the repository's ``benchmarks/``; ``per_param`` runs
an optimizer without flat parameters (the reference of the flat-parameter tests)."""

import importlib
import sys
from pathlib import Path

import pytest

from zerograd.testing.fixtures import arr, backend, rand, to_np  # noqa: F401

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture
def bench_module(monkeypatch):
    """``bench_module("bench_calls")``: that module of ``benchmarks/``, freshly imported."""

    def load(name):
        if not (BENCHMARKS / f"{name}.py").is_file():
            pytest.skip(f"{BENCHMARKS} not found (tests run outside the repository checkout)")
        monkeypatch.syspath_prepend(str(BENCHMARKS))
        for cached in (name, "common", "workloads"):
            sys.modules.pop(cached, None)
        return importlib.import_module(name)

    return load


@pytest.fixture
def per_param(monkeypatch):
    """Call ``per_param(f)`` to run ``f()`` with packing switched off (the reference)."""
    from zerograd_nn.optimizers import flat

    def run(f):
        with monkeypatch.context() as m:
            m.setattr(flat, "PACKED_BACKENDS", frozenset())
            return f()

    return run
