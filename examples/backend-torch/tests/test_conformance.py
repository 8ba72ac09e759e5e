"""zerograd's backend conformance suite on PyTorch CPU tensors."""

from __future__ import annotations

import pytest

from zerograd.backends import get_backend
from zerograd.testing.conformance import *  # noqa: F403


@pytest.fixture(scope="module")
def backend():  # the suite's own fixture reads an environment variable: name torch here
    """The PyTorch backend."""
    return get_backend("torch")
