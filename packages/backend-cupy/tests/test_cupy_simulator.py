"""The CuPy CPU simulator refuses what CuPy refuses (the tests/cupysim sessions rely on it).

Each rule below is CuPy 13/14 behaviour read from its source (core.pyx, _kernel.pyx,
_routines_indexing.pyx): a simulator more lenient than CuPy would let GPU bugs through.
"""

from __future__ import annotations

import numpy as np
import pytest

IMPLICIT = "Implicit conversion to a NumPy array is not allowed"


@pytest.fixture
def cp(simulated_cupy):
    import cupy

    return cupy


def test_numpy_arrays_are_refused_as_operands_numpy_scalars_are_not(cp):
    x = cp.asarray([1.0, 2.0])
    for op in (lambda: x + np.ones(2), lambda: np.ones(2) * x, lambda: x - np.array(1.0)):
        with pytest.raises(TypeError, match=r"Unsupported type <class 'numpy.ndarray'>"):
            op()
    y = x + np.float32(2)
    assert isinstance(y, cp.ndarray) and cp.asnumpy(y).tolist() == [3.0, 4.0]
    assert cp.asnumpy(x > np.array(1.5)).tolist() == [False, True]  # comparisons take 0-d


def test_no_implicit_conversion_to_numpy(cp):
    x = cp.asarray([1.0, 2.0])
    with pytest.raises(TypeError, match=IMPLICIT):
        np.asarray(x)
    with pytest.raises(TypeError, match=IMPLICIT):
        np.testing.assert_allclose(x, [1.0, 2.0])
    with pytest.raises(TypeError, match=IMPLICIT):
        cp.asarray([x, 3.0])  # device arrays mixed with host values
    assert cp.asnumpy(x).tolist() == x.get().tolist() == [1.0, 2.0]


def test_reductions_and_integer_indexing_stay_on_the_device(cp):
    x = cp.asarray(np.arange(6.0).reshape(2, 3))
    for v in (x.sum(), cp.max(x), np.sum(x), x[1, 2]):
        assert isinstance(v, cp.ndarray) and v.shape == ()
    assert float(x[1, 2]) == 5.0 and x.sum().item() == 15.0
    assert cp.asnumpy(x[np.array([1, 1])]).shape == (2, 3)  # host index arrays are copied over


def test_setitem_fills_basic_views_with_scalars_only(cp):
    x = cp.zeros(3)
    with pytest.raises(ValueError, match="non-scalar numpy.ndarray cannot be used for fill"):
        x[:] = np.ones(3)
    x[np.array([0, 2])] = np.array([5.0, 7.0])
    x[1] = 6.0
    assert cp.asnumpy(x).tolist() == [5.0, 6.0, 7.0]


def test_add_at_accumulates_and_checks_dtypes_scatter_add_is_deprecated(cp):
    import cupyx

    a = cp.zeros(3, dtype=np.float32)
    cp.add.at(a, np.array([2, 2, 0]), cp.asarray([1.0, 2.0, 4.0], dtype=np.float32))
    assert cp.asnumpy(a).tolist() == [4.0, 0.0, 3.0]
    with pytest.raises(TypeError, match="cupy.add.at only supports"):
        cp.add.at(cp.zeros(2, dtype=np.int8), np.array([0]), 1)
    with pytest.warns(DeprecationWarning, match="Please use `cupy.add.at`"):
        cupyx.scatter_add(a, np.array([1]), cp.asarray([1.0], dtype=np.float32))


def test_elementwise_kernel_runs_its_body_and_checks_its_loop_size(cp):
    k = cp.ElementwiseKernel("T x, raw T y, int32 n", "T z", "z = x + y[n - 1 - i];", "sim_rev")
    x, y = cp.asarray([1.0, 2.0, 3.0]), cp.asarray([10.0, 20.0, 30.0])
    z = k(x, y, 3, cp.empty(3))
    assert cp.asnumpy(z).tolist() == [31.0, 22.0, 13.0]
    with pytest.raises(ValueError, match="'size' can be used only if all of the ndarray are 'raw'"):
        k(x, y, 3, cp.empty(3), size=3)
    strided = cp.asarray(np.arange(6.0))[::2]  # non-contiguous inputs and outputs
    out = cp.zeros(6)
    k(strided, cp.asarray(np.arange(3.0)), 3, out[::2])
    assert cp.asnumpy(out).tolist() == [2.0, 0.0, 3.0, 0.0, 4.0, 0.0]
    raw_only = cp.ElementwiseKernel("raw T y", "raw T z", "z[i] = y[i];", "sim_copy")
    with pytest.raises(ValueError, match="Loop size is undecided"):
        raw_only(y, cp.empty(3))


def test_only_names_cupy_has_are_offered(cp):
    x = cp.asarray([1.0, 2.0])
    with pytest.raises(AttributeError, match="'cupy.ndarray' object has no attribute 'getfield'"):
        _ = x.getfield
    with pytest.raises(AttributeError, match="module 'cupy.random' has no attribute 'bogus'"):
        _ = cp.random.bogus
    assert cp.random.randn(2).shape == (2,) and isinstance(cp.exp(x), cp.ndarray)
