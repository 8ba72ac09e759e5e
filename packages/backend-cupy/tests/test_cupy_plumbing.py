"""The backend's wiring checked on the CPU, with a tiny numpy-backed stand-in for CuPy.

The stand-in has only what the backend's own code calls (``asarray``, ``asnumpy``,
``cupyx.scatter_add``, ...), and each of its arrays holds a numpy array, so these tests
check what the backend passes to CuPy and returns to zerograd: copies, dtypes, index
arrays moved to the device, and ``Variable.to_gpu``/``to_cpu``. What CuPy itself computes
is checked on a real GPU in ``test_cupy_gpu.py``.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import zerograd.backends as B
from zerograd import Variable
from zerograd_cupy import CupyBackend


class ndarray:  # noqa: N801 - named as CuPy names its array type
    """A 'device' array: a numpy array the host may only reach through ``asnumpy``."""

    __module__ = "cupy._core.core"

    def __init__(self, a):
        self.a = a

    dtype = property(lambda self: self.a.dtype)
    shape = property(lambda self: self.a.shape)
    ndim = property(lambda self: self.a.ndim)

    def astype(self, dtype, copy=True):
        return ndarray(self.a.astype(dtype, copy=copy))

    def __mul__(self, other):
        return ndarray(self.a * other)

    def __float__(self):
        return float(self.a)


def _scatter_add(a, slices, value):
    items = slices if isinstance(slices, tuple) else (slices,)
    assert not any(isinstance(i, (np.ndarray, list)) for i in items), "host index reached CuPy"
    idx = tuple(i.a if isinstance(i, ndarray) else i for i in items)
    np.add.at(a.a, idx if isinstance(slices, tuple) else idx[0], value.a)


def _asarray(obj, dtype=None):
    if isinstance(obj, ndarray):
        return obj if dtype is None or obj.dtype == dtype else obj.astype(dtype)
    return ndarray(np.array(obj, dtype=dtype))  # a host-to-device copy


@pytest.fixture
def stand_in(monkeypatch, with_plugin):
    cp = types.ModuleType("cupy")
    cp.__version__ = "13.9.9"
    cp.ndarray = ndarray
    cp.float32 = np.float32
    cp.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 1))
    cp.arange = lambda n, dtype=None: ndarray(np.arange(n, dtype=dtype))
    cp.sum = lambda x: ndarray(np.sum(x.a))
    cp.asarray = _asarray
    cp.array = lambda a, copy=True: ndarray(np.array(a.a, copy=copy))
    cp.asnumpy = lambda x: np.array(x.a)
    cp.broadcast_to = lambda x, shape: ndarray(np.broadcast_to(x.a, shape))
    cupyx = types.ModuleType("cupyx")
    cupyx.scatter_add = _scatter_add
    monkeypatch.setitem(sys.modules, "cupy", cp)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    return B.get_backend("cupy")


def test_probe_passes_and_the_backend_is_listed(stand_in):
    assert isinstance(stand_in, CupyBackend)
    assert stand_in.is_available() and stand_in.unavailable_reason() == ""
    row = {r.name: r for r in B.list_backends()}["cupy"]
    assert row.available and row.version == "13.9.9" and row.device == "gpu"
    assert B.gpu_backend() is stand_in and B.gpu_enable is True


def test_round_trip_keeps_values_and_dtype(stand_in):
    ref = np.arange(6, dtype=np.float32).reshape(2, 3)
    dev = stand_in.from_numpy(ref)
    assert isinstance(dev, ndarray) and B.backend_of(dev) is stand_in
    ref[0, 0] = 99.0  # the device copy is independent of the host array
    back = stand_in.to_numpy(dev)
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
def test_scatter_add_copies_and_moves_indices_to_the_device(stand_in, shape, index):
    rng = np.random.default_rng(0)
    base = rng.standard_normal(shape)
    values = rng.standard_normal(base[index].shape)
    expected = base.copy()
    np.add.at(expected, index, values)
    a = stand_in.from_numpy(base)
    out = stand_in.scatter_add(a, index, stand_in.from_numpy(values))
    assert out is not a
    np.testing.assert_allclose(stand_in.to_numpy(out), expected, rtol=1e-12)
    np.testing.assert_array_equal(stand_in.to_numpy(a), base)


def test_scatter_add_casts_values_to_the_array_dtype(stand_in):
    a = stand_in.from_numpy(np.zeros(3, dtype=np.float32))
    out = stand_in.scatter_add(a, np.array([2, 2]), np.array([0.5, 0.25]))  # float64 values
    assert out.dtype == np.float32
    np.testing.assert_array_equal(stand_in.to_numpy(out), [0, 0, 0.75])


def test_astype_returns_a_new_array(stand_in):
    a = stand_in.from_numpy(np.array([1.5, 2.5]))
    b = stand_in.astype(a, np.float32)
    assert b is not a and b.dtype == np.float32 and a.dtype == np.float64


def test_variable_to_gpu_and_back_moves_data_and_grad(stand_in):
    x = Variable(np.array([1.0, -2.0, 3.0], dtype=np.float32))
    (x * x).sum().backward()
    x.to_gpu()
    assert isinstance(x.data, ndarray) and isinstance(x.grad.data, ndarray)
    np.testing.assert_array_equal(stand_in.to_numpy(x.grad.data), [2.0, -4.0, 6.0])
    x.to_cpu()
    assert isinstance(x.data, np.ndarray) and x.data.dtype == np.float32
    np.testing.assert_array_equal(x.data, [1.0, -2.0, 3.0])
    np.testing.assert_array_equal(x.grad.data, [2.0, -4.0, 6.0])
    assert isinstance(B.as_cupy(np.ones(2)), ndarray)
