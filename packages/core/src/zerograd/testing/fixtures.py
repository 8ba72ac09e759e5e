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
    """Return the backend under test; skipped with the reason when it cannot run here.

    Returns:
        The backend named by ``ZEROGRAD_TEST_BACKEND`` (default ``numpy``).
    """
    name = os.environ.get("ZEROGRAD_TEST_BACKEND", "numpy")
    b = get_backend(name)
    if not b.is_available():
        pytest.skip(f"backend {name!r} unavailable: {b.unavailable_reason()}")
    return b


@pytest.fixture
def arr(backend):
    """A maker of arrays of the backend under test from anything numpy accepts.

    ``make(values, dtype="float64")``, used as ``arr([1, 2], 'float32')``.
    """

    def make(values, dtype="float64"):
        return as_array_of(np.asarray(values, dtype=dtype), backend)

    return make


@pytest.fixture
def rand(backend):
    """A maker of seeded standard-normal arrays of the backend under test.

    ``make(*shape, dtype="float64", seed=0)``, used as ``rand(2, 3, dtype='float32')``.
    """

    def make(*shape, dtype="float64", seed=0):
        data = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
        return as_array_of(data, backend)

    return make


@pytest.fixture
def to_np():
    """Return a converter of backend arrays and Variables to numpy.

    Returns:
        :func:`zerograd.backends.as_numpy`.
    """
    return as_numpy
