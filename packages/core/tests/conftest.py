"""The shared backend fixtures (backend, arr, rand, to_np) come from zerograd.testing."""

import pytest

from zerograd import Function
from zerograd.testing.fixtures import arr, backend, rand, to_np  # noqa: F401


@pytest.fixture
def function_calls(monkeypatch):
    """The names of the Functions called from now on, in order (Function.__call__ counted)."""
    calls = []
    call = Function.__call__

    def counting(self, *args):
        calls.append(type(self).__name__)
        return call(self, *args)

    monkeypatch.setattr(Function, "__call__", counting)
    return calls
