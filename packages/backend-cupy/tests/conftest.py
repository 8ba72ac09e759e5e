"""Fixtures: the cupy plugin registered through its entry point, and the real GPU backend.

The tests work whether or not zerograd-cupy is pip-installed: when its entry point is
missing (a source checkout), :func:`cupy_plugin_installed` adds the same entry point
(``cupy = zerograd_cupy``) to what ``importlib.metadata`` reports, so the registry loads
the plugin exactly as it would from an installed distribution. Without the distribution,
``src/`` is put on ``sys.path`` so the dev venv needs no install (which would register the
plugin for every other package's tests too).
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

import zerograd.backends as B

if importlib.util.find_spec("zerograd_cupy") is None:  # a source checkout, not pip-installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

_ENV = ("ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD", "ZEROGRAD_BLOCK_PLUGINS", "ZEROGRAD_STRICT_PLUGINS")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a usable CUDA GPU (skipped with the reason)")


@contextlib.contextmanager
def cupy_plugin_installed() -> Iterator[None]:
    """Make the ``cupy`` entry point visible (if it is not already) and reload the plugins."""
    real = metadata.entry_points

    def entry_points(**kw):
        found = real(**kw)
        if kw.get("group") != B.ENTRY_POINT_GROUP or any(ep.name == "cupy" for ep in found):
            return found
        return [*found, metadata.EntryPoint("cupy", "zerograd_cupy", B.ENTRY_POINT_GROUP)]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(metadata, "entry_points", entry_points)
        for var in _ENV:
            mp.delenv(var, raising=False)
        B.refresh()
        try:
            yield
        finally:
            mp.undo()
            B.refresh()


@pytest.fixture
def with_plugin() -> Iterator[None]:
    """The cupy plugin registered for one test (a fresh backend, probed anew)."""
    with cupy_plugin_installed():
        yield


@pytest.fixture(scope="module")
def gpu_backend():
    """The real cupy backend; the test is skipped, with the reason, where it cannot run."""
    with cupy_plugin_installed():
        backend = B.get_backend("cupy")
        if not backend.is_available():
            pytest.skip(f"no usable GPU for the cupy backend: {backend.unavailable_reason()}")
        yield backend
