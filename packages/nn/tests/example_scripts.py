"""The repository's ``examples/`` scripts, loaded as modules by the tests that run them."""

import importlib.util
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
BENCHMARKS = EXAMPLES.parent / "benchmarks"


def load(name):
    """``examples/<name>.py`` as a module; the test skips, saying why, outside the checkout."""
    if str(EXAMPLES) not in sys.path:  # the examples import their siblings (_progress.py)
        sys.path.insert(0, str(EXAMPLES))
    return load_file(EXAMPLES / f"{name}.py", f"example_{name}")


def load_file(path, module_name):
    """The script at ``path`` as a module named ``module_name``; the test skips, saying
    why, outside the checkout."""
    if not path.is_file():
        pytest.skip(f"{path} not found (tests run outside the repository checkout)")
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench_module(name, monkeypatch):
    """``benchmarks/<name>.py`` imported (its folder put on the path for the test); the
    test skips, saying why, outside the checkout."""
    if not (BENCHMARKS / f"{name}.py").is_file():
        pytest.skip(f"{BENCHMARKS} not found (tests run outside the repository checkout)")
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module(name)
