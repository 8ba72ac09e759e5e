"""zerograd-nn's kernel and layer conformance suite on PyTorch CPU tensors.

The backend brings no kernels of its own: this checks zerograd-nn's generic ones on torch.
"""

from __future__ import annotations

import pytest

from zerograd.backends import get_backend

pytest.importorskip("zerograd_nn", reason="zerograd-nn is not installed here")
from zerograd_nn.testing.conformance import *  # noqa: E402, F403


@pytest.fixture(scope="module")
def backend():  # the suite's own fixture reads an environment variable: name torch here
    """The PyTorch backend."""
    return get_backend("torch")
