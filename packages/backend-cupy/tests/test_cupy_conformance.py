"""The backend conformance suite from zerograd.testing, run on the GPU (skipped without one)."""

import pytest

from zerograd.testing.conformance import *  # noqa: F403

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def backend(gpu_backend):
    """The suite's backend under test: the real cupy backend (overrides the suite's fixture)."""
    return gpu_backend
