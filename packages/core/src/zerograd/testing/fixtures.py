"""pytest fixtures for testing code on the backend under test (a pytest plugin).

Import them into a ``conftest.py``:
``from zerograd.testing.fixtures import arr, backend, rand, to_np``.
The backend is named by the environment variable ``ZEROGRAD_TEST_BACKEND`` (default
``numpy``); nox's test sessions set it. Tests using these fixtures are skipped, with the
reason printed, when that backend cannot run on this machine.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from zerograd.backends import as_array_of, as_numpy, get_backend


@pytest.fixture(scope="session")
def backend():
    """The backend under test; skipped with the reason when it cannot run here."""
    name = os.environ.get("ZEROGRAD_TEST_BACKEND", "numpy")
    b = get_backend(name)
    if not b.is_available():
        pytest.skip(f"backend {name!r} unavailable: {b.unavailable_reason()}")
    return b


@pytest.fixture
def arr(backend):
    """Make a backend array from anything numpy accepts: ``arr([1, 2], 'float32')``."""

    def make(values, dtype="float64"):
        return as_array_of(np.asarray(values, dtype=dtype), backend)

    return make


@pytest.fixture
def rand(backend):
    """Seeded standard-normal backend arrays: ``rand(2, 3, dtype='float32', seed=0)``."""

    def make(*shape, dtype="float64", seed=0):
        data = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
        return as_array_of(data, backend)

    return make


@pytest.fixture
def to_np():
    """Convert a backend array or Variable to numpy."""
    return as_numpy
