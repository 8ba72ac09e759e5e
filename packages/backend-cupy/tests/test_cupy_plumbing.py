"""The backend's wiring checked on the CPU, on the CuPy CPU simulator (``simulator/``).

The simulator keeps CuPy's host/device boundary (numpy operands and implicit conversions
are refused), so these tests check what the backend passes to CuPy and gives back to
zerograd: copies, dtypes, and ``Variable.to_gpu``/``to_cpu``. What CuPy itself computes on
a GPU is checked in ``test_cupy_gpu.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import zerograd.backends as B
from zerograd import Variable
from zerograd_cupy import CupyBackend


def _device_type():
    import cupy

    return cupy.ndarray


def test_probe_passes_and_the_backend_is_listed(simulated_cupy):
    assert isinstance(simulated_cupy, CupyBackend)
    assert simulated_cupy.is_available() and simulated_cupy.unavailable_reason() == ""
    row = {r.name: r for r in B.list_backends()}["cupy"]
    assert row.available and row.version == "0.0.0+cpu.simulator" and row.device == "gpu"
    assert B.gpu_backend() is simulated_cupy and B.gpu_enable is True


def test_round_trip_keeps_values_and_dtype(simulated_cupy):
    ref = np.arange(6, dtype=np.float32).reshape(2, 3)
    dev = simulated_cupy.from_numpy(ref)
    assert isinstance(dev, _device_type()) and B.backend_of(dev) is simulated_cupy
    ref[0, 0] = 99.0  # the device copy is independent of the host array
    back = simulated_cupy.to_numpy(dev)
    assert isinstance(back, np.ndarray) and back.dtype == np.float32
    np.testing.assert_array_equal(back, [[0, 1, 2], [3, 4, 5]])


@pytest.mark.parametrize(
    "shape, index",
    [
        ((5,), np.array([0, 1, 1, 4, 1])),
        ((5,), [3, 3, 0]),
        ((3, 4), (np.array([0, 2, 2]), np.array([1, 3, 3]))),
        ((4, 3), (slice(1, 3),)),
    ],
)
def test_scatter_add_copies_and_accumulates_host_indices(simulated_cupy, shape, index):
    rng = np.random.default_rng(0)
    base = rng.standard_normal(shape)
    values = rng.standard_normal(base[index].shape)
    expected = base.copy()
    np.add.at(expected, index, values)
    a = simulated_cupy.from_numpy(base)
    out = simulated_cupy.scatter_add(a, index, simulated_cupy.from_numpy(values))
    assert out is not a
    np.testing.assert_allclose(simulated_cupy.to_numpy(out), expected, rtol=1e-12)
    np.testing.assert_array_equal(simulated_cupy.to_numpy(a), base)


def test_scatter_add_casts_values_to_the_array_dtype(simulated_cupy):
    a = simulated_cupy.from_numpy(np.zeros(3, dtype=np.float32))
    out = simulated_cupy.scatter_add(a, np.array([2, 2]), np.array([0.5, 0.25]))  # float64 values
    assert out.dtype == np.float32
    np.testing.assert_array_equal(simulated_cupy.to_numpy(out), [0, 0, 0.75])


def test_astype_returns_a_new_array(simulated_cupy):
    a = simulated_cupy.from_numpy(np.array([1.5, 2.5]))
    b = simulated_cupy.astype(a, np.float32)
    assert b is not a and b.dtype == np.float32 and a.dtype == np.float64


def test_variable_to_gpu_and_back_moves_data_and_grad(simulated_cupy):
    x = Variable(np.array([1.0, -2.0, 3.0], dtype=np.float32))
    (x * x).sum().backward()
    x.to_gpu()
    assert isinstance(x.data, _device_type()) and isinstance(x.grad.data, _device_type())
    np.testing.assert_array_equal(simulated_cupy.to_numpy(x.grad.data), [2.0, -4.0, 6.0])
    x.to_cpu()
    assert isinstance(x.data, np.ndarray) and x.data.dtype == np.float32
    np.testing.assert_array_equal(x.data, [1.0, -2.0, 3.0])
    np.testing.assert_array_equal(x.grad.data, [2.0, -4.0, 6.0])
    assert isinstance(B.as_cupy(np.ones(2)), _device_type())
