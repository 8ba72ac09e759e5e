"""The numpy backend runs the same conformance suite any third-party backend runs."""

from zerograd.testing.conformance import *  # noqa: F403
