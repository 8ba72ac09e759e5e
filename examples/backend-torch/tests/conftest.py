"""Fixtures for the PyTorch backend's tests."""

from __future__ import annotations

import pytest

from zerograd.backends import get_backend


@pytest.fixture(scope="module")
def backend():
    """The PyTorch backend, found through its entry point (overrides the suite's fixture)."""
    return get_backend("torch")
