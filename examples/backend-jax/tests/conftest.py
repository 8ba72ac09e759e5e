"""Fixtures for the JAX backend's tests.

These tests run in JAX's default 32-bit mode (float32): the conformance suite, which checks
float64 round trips, runs separately with ``JAX_ENABLE_X64=1`` (see the README).
"""

from __future__ import annotations

import pytest

from zerograd.backends import get_backend


@pytest.fixture
def backend():
    """The JAX backend, found through its entry point."""
    return get_backend("jax")
