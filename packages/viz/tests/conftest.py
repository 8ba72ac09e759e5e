"""Shared fixtures: backend under test (ZEROGRAD_TEST_BACKEND, default numpy), Graphviz."""

import os
import shutil

import numpy as np
import pytest

from zerograd.backends import as_array_of, get_backend

BACKEND = os.environ.get("ZEROGRAD_TEST_BACKEND", "numpy")


@pytest.fixture(scope="session")
def backend():
    """The backend under test; skipped with the reason when it cannot run here."""
    b = get_backend(BACKEND)
    if not b.is_available():
        pytest.skip(f"backend {BACKEND!r} unavailable: {b.unavailable_reason()}")
    return b


@pytest.fixture
def arr(backend):
    """Make a backend array from anything numpy accepts: arr([1, 2], 'float32')."""

    def make(values, dtype="float64"):
        return as_array_of(np.asarray(values, dtype=dtype), backend)

    return make


@pytest.fixture
def dot():
    """Path of Graphviz's dot; the test is skipped, reason printed, where it is missing."""
    path = shutil.which("dot")
    if path is None:
        pytest.skip("Graphviz's `dot` is not on PATH (apt-get install graphviz; .ci/run does)")
    return path
