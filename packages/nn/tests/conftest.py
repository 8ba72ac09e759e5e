"""The shared backend fixtures (backend, arr, rand, to_np) come from zerograd.testing."""

from zerograd.testing.fixtures import arr, backend, rand, to_np  # noqa: F401
