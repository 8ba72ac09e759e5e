"""The real CuPy on a machine without a usable NVIDIA GPU (nox session ``cupy_without_gpu``).

CuPy imports fine without a GPU, so importing it proves nothing; these check, with the
CuPy wheel users install, that the backend still reports itself unusable, says why, and
that ``to_gpu()`` fails cleanly. Elsewhere (no CuPy, a real GPU) the
module is skipped with the reason.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import zerograd
import zerograd.backends as B
from zerograd import Variable
from zerograd_cupy import CupyBackend

# The nox session sets this: there, skipping would hide a broken setup, so it fails instead.
_EXPECTED = os.environ.get("ZEROGRAD_EXPECT_REAL_CUPY") == "1"


def _not_here(reason: str) -> None:
    if _EXPECTED:
        raise RuntimeError(f"ZEROGRAD_EXPECT_REAL_CUPY=1 but {reason}")
    pytest.skip(reason, allow_module_level=True)


try:
    import cupy
except ImportError:
    _not_here("CuPy is not installed here (the nox session cupy_without_gpu installs it)")
if CupyBackend().is_available():
    _not_here("a GPU is usable here: the no-GPU path cannot be seen")

HEAD = "CuPy is installed but no CUDA device/driver is usable: "


def _driver_version() -> int | None:
    try:
        return int(cupy.cuda.runtime.driverGetVersion())
    except Exception:
        return None


def test_cupy_imports_yet_the_backend_is_unavailable_and_says_why(with_plugin):
    backend = B.get_backend("cupy")
    assert backend.is_available() is False
    reason = backend.unavailable_reason()
    assert reason.startswith(HEAD) and "CUDARuntimeError" in reason
    if _driver_version() == 0:
        assert "no NVIDIA driver was found" in reason
    row = {r.name: r for r in B.list_backends()}["cupy"]
    assert (row.available, row.version) == (False, cupy.__version__)  # which CuPy, for reports


def test_to_gpu_fails_cleanly_and_leaves_data_and_grad(with_plugin):
    x = Variable(np.array([1.0, 2.0], dtype=np.float32))
    (x * 3.0).sum().backward()
    data, grad = x.data, x.grad.data
    with pytest.raises(B.NoBackendError) as info:
        x.to_gpu()
    assert str(info.value).startswith(
        f"zerograd: no GPU backend can be used on this machine (cupy: {HEAD}"
    )
    assert x.data is data and x.grad.data is grad and isinstance(x.data, np.ndarray)
    with pytest.raises(
        B.NoBackendError, match=r"backend 'cupy' cannot be used here: CuPy is installed but"
    ):
        _ = B.get_backend("cupy").xp


def test_seed_without_a_gpu_leaves_cupy_alone_and_seeds_numpy(with_plugin):
    # cupy.random.seed needs a CUDA device: calling it here would raise CUDARuntimeError
    B.get_backend("cupy").seed(5)
    zerograd.seed(5)
    first = np.random.rand(4)
    zerograd.seed(5)
    np.testing.assert_array_equal(np.random.rand(4), first)
