"""Fixtures for the example backend's tests: the backend, and a clean registry per test."""

from __future__ import annotations

import pytest

from zerograd.backends import get_backend, refresh, set_strict


@pytest.fixture
def backend():
    """The array-api-strict backend, found through its entry point."""
    return get_backend("arrayapi")


@pytest.fixture(autouse=True)
def _fresh_registry():
    """Tests change plugin switches: start and end each one with a freshly loaded registry."""
    refresh()
    yield
    set_strict(False)
    refresh()
