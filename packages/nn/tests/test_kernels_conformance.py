"""The nn conformance suite, on the backend these tests run on (ZEROGRAD_TEST_BACKEND)."""

from zerograd_nn.testing.conformance import *  # noqa: F403
