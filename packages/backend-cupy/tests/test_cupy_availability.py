"""Availability and error texts on machines where CuPy is absent or cannot reach a GPU.

These run on every machine: CuPy's absence is simulated with ``sys.modules['cupy'] = None``
(so they hold where CuPy is installed too), and a broken CUDA setup with small stand-in
``cupy`` modules that fail the way CuPy does.
"""

from __future__ import annotations

import importlib.abc
import sys
import types

import numpy as np
import pytest

import zerograd
import zerograd.backends as B
from zerograd import Variable
from zerograd_cupy import CupyBackend, col2im_gpu, im2col_gpu

NOT_INSTALLED = "CuPy is not installed (pip install 'zerograd-cupy[cuda12]')"


@pytest.fixture
def cupy_absent(monkeypatch):
    """CuPy cannot be imported (as on a machine where it is not installed)."""
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setitem(sys.modules, "cupyx", None)


class CUDARuntimeError(RuntimeError):
    """Stands in for cupy_backends.cuda.api.runtime.CUDARuntimeError."""


def _stand_in_cupy(monkeypatch, device_count, driver=None, runtime=12090):
    """Install a ``cupy`` module whose runtime reports ``device_count`` (or raises it), and
    ``driver`` as the driver's CUDA version (12040 for 12.4; 0: no driver; None: unknown)."""

    def get_device_count():
        if isinstance(device_count, Exception):
            raise device_count
        return device_count

    def driver_version():
        if driver is None:
            raise CUDARuntimeError("cudaErrorUnknown")
        return driver

    cp = types.ModuleType("cupy")
    cp.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(
            getDeviceCount=get_device_count,
            driverGetVersion=driver_version,
            runtimeGetVersion=lambda: runtime,
        )
    )
    cp.float32 = np.float32
    monkeypatch.setitem(sys.modules, "cupy", cp)
    return cp


# -- the probe and its reasons ---------------------------------------------------------------
def test_absent_cupy_is_reported_with_the_install_command(cupy_absent):
    b = CupyBackend()
    assert b.is_available() is False
    assert b.unavailable_reason() == NOT_INSTALLED
    assert b.version() == "-"


@pytest.mark.parametrize(
    "call",
    [
        lambda: im2col_gpu(np.zeros((1, 1, 3, 3)), 2),
        lambda: col2im_gpu(np.zeros((1, 1, 2, 2, 2, 2)), (1, 1, 3, 3), 2),
    ],
    ids=["im2col_gpu", "col2im_gpu"],
)
def test_the_kernels_without_cupy_say_what_to_install(cupy_absent, call):
    # they were a raw "import of cupy halted" / "No module named 'cupy'" from importlib
    with pytest.raises(
        ModuleNotFoundError,
        match=r"^zerograd_cupy\.(im2col|col2im)_gpu runs on CuPy arrays, and CuPy is not "
        r"installed: pip install 'zerograd-cupy\[cuda12\]'$",
    ):
        call()


def test_cupy_failing_to_import_is_not_called_absent(monkeypatch):
    class BrokenCupyFinder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "cupy":
                raise ImportError("libcudart.so.12: cannot open shared object file")
            return None

    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.setattr(sys, "meta_path", [BrokenCupyFinder(), *sys.meta_path])
    b = CupyBackend()
    assert not b.is_available()
    assert b.unavailable_reason() == (
        "CuPy is installed but cannot be imported: "
        "ImportError: libcudart.so.12: cannot open shared object file"
    )


def test_no_device_reports_the_cuda_error(monkeypatch):
    err = CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
    _stand_in_cupy(monkeypatch, err)
    b = CupyBackend()
    assert not b.is_available()
    assert b.unavailable_reason() == (
        "CuPy is installed but no CUDA device/driver is usable: "
        "CUDARuntimeError: cudaErrorNoDevice: no CUDA-capable device is detected"
    )


def test_zero_devices_is_unavailable(monkeypatch):
    _stand_in_cupy(monkeypatch, 0)
    b = CupyBackend()
    assert not b.is_available()
    assert b.unavailable_reason().endswith("the CUDA runtime reports 0 devices")


def test_a_device_that_cannot_run_a_kernel_is_unavailable(monkeypatch):
    cp = _stand_in_cupy(monkeypatch, 2)

    def arange(*args, **kwargs):
        raise RuntimeError("CuPy failed to load libnvrtc.so.12")

    cp.arange = arange
    b = CupyBackend()
    assert not b.is_available()
    reason = b.unavailable_reason()
    assert reason.startswith(
        "CuPy sees 2 CUDA device(s) but cannot run a kernel: "
        "RuntimeError: CuPy failed to load libnvrtc.so.12."
    )
    assert "cupy-cuda12x[ctk]" in reason


def test_the_probe_runs_once_per_backend(monkeypatch):
    calls = []
    cp = _stand_in_cupy(monkeypatch, 0)
    cp.cuda.runtime.getDeviceCount = lambda: calls.append(1) or 0
    b = CupyBackend()
    for _ in range(3):
        assert not b.is_available()
        b.unavailable_reason()
    assert len(calls) == 1


def test_array_module_of_an_unusable_backend_is_a_clear_error(cupy_absent):
    with pytest.raises(B.NoBackendError, match=r"backend 'cupy' cannot be used here: CuPy is not"):
        _ = CupyBackend().xp


# -- classification never imports cupy -------------------------------------------------------
def _fake_type(module, name):
    return type(name, (), {"__module__": module})


def test_owns_classifies_by_module_name_without_importing_cupy(monkeypatch):
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    b = CupyBackend()
    assert b.owns(_fake_type("cupy._core.core", "ndarray"))
    assert b.owns(_fake_type("cupy", "ndarray"))
    assert b.owns(_fake_type("cupy._core.core", "_ndarray_base"))
    assert not b.owns(_fake_type("cupy.cuda.stream", "Stream"))
    assert not b.owns(_fake_type("cupyx.scipy.sparse", "csr_matrix"))
    assert not b.owns(_fake_type("cupy_like", "ndarray"))
    assert not b.owns(np.ndarray) and not b.owns(list) and not b.owns(Variable)
    assert "cupy" not in sys.modules


def test_owns_takes_renamed_subclasses_once_cupy_is_loaded(monkeypatch):
    cp = _stand_in_cupy(monkeypatch, 1)
    cp.ndarray = _fake_type("cupy", "ndarray")
    sub = type("MaskedArray", (cp.ndarray,), {"__module__": "cupy.ext.masked"})
    b = CupyBackend()
    assert b.owns(cp.ndarray) and b.owns(sub)
    assert not b.owns(_fake_type("cupy.ext.masked", "MaskedArray"))  # not a subclass


# -- zerograd with the plugin installed and CuPy absent --------------------------------------
def test_listed_as_unavailable(with_plugin, cupy_absent):
    rows = {r.name: r for r in B.list_backends()}
    assert rows["cupy"].available is False
    assert rows["cupy"].device == "gpu" and rows["cupy"].version == "-"
    assert rows["numpy"].available is True
    assert B.get_backend("cupy").unavailable_reason() == NOT_INSTALLED


def test_plugin_module_imports_and_registers_without_cupy(with_plugin, cupy_absent):
    backend = B.get_backend("cupy")
    assert isinstance(backend, CupyBackend)
    assert B.registry.sources["cupy"][0] == "cupy"  # loaded through its entry point
    x = Variable(np.array([1.0, 2.0]))
    (x * x).sum().backward()  # numpy still works, and is still the default
    assert B.backend_of(x.data).name == "numpy"
    np.testing.assert_array_equal(x.grad.data, [2.0, 4.0])


def test_gpu_enable_is_false(with_plugin, cupy_absent):
    assert B.gpu_enable is False


def test_to_gpu_says_why_and_changes_nothing(with_plugin, cupy_absent):
    x = Variable(np.array([1.0, 2.0], dtype=np.float32))
    (x * 3.0).sum().backward()
    data, grad = x.data, x.grad.data
    with pytest.raises(B.NoBackendError) as info:
        x.to_gpu()
    assert str(info.value) == (
        f"zerograd: no GPU backend can be used on this machine (cupy: {NOT_INSTALLED})."
    )
    assert x.data is data and x.grad.data is grad
    assert isinstance(x.data, np.ndarray) and x.dtype == np.float32


INSUFFICIENT = CUDARuntimeError(
    "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version"
)


def test_to_gpu_names_a_missing_driver(with_plugin, monkeypatch):
    # CUDA reports a missing driver as an "insufficient" one; the driver version 0 tells.
    _stand_in_cupy(monkeypatch, INSUFFICIENT, driver=0)
    x = Variable(np.ones(3))
    with pytest.raises(B.NoBackendError) as info:
        x.to_gpu()
    assert str(info.value) == (
        "zerograd: no GPU backend can be used on this machine (cupy: CuPy is installed but no "
        "CUDA device/driver is usable: no NVIDIA driver was found (CUDARuntimeError: "
        "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime "
        "version). This needs a machine with an NVIDIA GPU and its driver; the numpy backend "
        "works without one.)."
    )
    assert isinstance(x.data, np.ndarray)


def test_an_old_driver_is_told_apart_from_a_missing_one(monkeypatch):
    _stand_in_cupy(monkeypatch, INSUFFICIENT, driver=11080, runtime=12090)
    reason = CupyBackend().unavailable_reason()
    assert reason.startswith(
        "CuPy is installed but no CUDA device/driver is usable: the NVIDIA driver supports "
        "CUDA 11.8 but this CuPy needs CUDA 12.9 (CUDARuntimeError: cudaErrorInsufficientDriver"
    )
    assert reason.endswith("install the CuPy that matches it (zerograd-cupy[cuda12] or [cuda13]).")


def test_as_cupy_and_moving_by_name_say_why(with_plugin, cupy_absent):
    with pytest.raises(B.NoBackendError, match=r"\(cupy: CuPy is not installed \(pip install"):
        B.as_cupy(np.ones(2))
    with pytest.raises(
        B.NoBackendError,
        match=r"backend 'cupy' is installed but cannot be used here: CuPy is not installed",
    ):
        Variable(np.ones(2)).to("cupy")


# -- seeding -----------------------------------------------------------------------------------
def test_seeding_an_unusable_backend_does_nothing_and_zerograd_seed_still_works(
    with_plugin, cupy_absent
):
    # zerograd.seed seeds every available backend; a cupy that cannot run is left out, and
    # its own seed() is a no-op rather than the NoBackendError of every other use
    backend = B.get_backend("cupy")
    backend.seed(3)  # no CuPy here: nothing to seed, nothing raised
    zerograd.seed(3)
    first = np.random.rand(3)
    zerograd.seed(3)
    np.testing.assert_array_equal(np.random.rand(3), first)
    with pytest.raises(B.NoBackendError, match="backend 'cupy' cannot be used here"):
        backend.randn(2)
