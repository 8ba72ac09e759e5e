"""Backend fixtures from zerograd.testing, plus Graphviz's ``dot``."""

import shutil

import pytest

from zerograd.testing.fixtures import arr, backend, rand, to_np  # noqa: F401


@pytest.fixture
def dot():
    """Path of Graphviz's dot; the test is skipped, reason printed, where it is missing."""
    path = shutil.which("dot")
    if path is None:
        pytest.skip("Graphviz's `dot` is not on PATH (apt-get install graphviz; .ci/run does)")
    return path
