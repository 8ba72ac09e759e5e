"""Core counts elements without ``.size`` on raw arrays, checked on torch tensors.

``torch.Tensor.size`` is a method, not the array API's element count, so these run on the
PyTorch example backend (examples/backend-torch) when it is installed, and are skipped
with the reason otherwise. test_contract.py checks the sources for the same mistake.
"""

from __future__ import annotations

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Variable
from zerograd.backends import as_array_of, as_numpy, list_backends


@pytest.fixture(scope="module")
def torch_array():
    pytest.importorskip("torch", reason="PyTorch is not installed: pip install torch")
    if "torch" not in {b.name for b in list_backends()}:
        pytest.skip("the torch backend is not installed: pip install -e examples/backend-torch")

    def make(values, dtype="float64"):
        return as_array_of(np.asarray(values, dtype=dtype), "torch")

    return make


def test_variable_size_item_and_float_on_torch(torch_array):
    x = Variable(torch_array(np.arange(6.0).reshape(2, 3)))
    assert x.size == 6 and type(x.size) is int
    one = Variable(torch_array([[2.5]]))
    assert one.item() == 2.5 and float(one) == 2.5
    with pytest.raises(TypeError, match=r"item\(\) of a Variable needs exactly one element"):
        x.item()


def test_reshape_error_counts_torch_elements(torch_array):
    with pytest.raises(ValueError, match=r"reshape: .*shape \(2, 3\) \(6 elements\) into"):
        F.reshape(torch_array(np.zeros((2, 3))), (4, 2))


@pytest.mark.parametrize("op", [F.max, F.min])
def test_extremum_of_empty_torch_input_is_refused(torch_array, op):
    with pytest.raises(ValueError, match=rf"{op.__name__}: the input of shape .* no elements"):
        op(torch_array(np.zeros((0, 3))), axis=0)


def test_mean_on_torch_equals_numpy(torch_array):
    data = np.arange(12.0).reshape(3, 4)
    y = F.mean(torch_array(data), axis=1)
    np.testing.assert_allclose(as_numpy(y.data), data.mean(axis=1))
    with pytest.warns(RuntimeWarning, match="mean: mean of empty slice"):
        assert np.isnan(as_numpy(F.mean(torch_array(np.zeros((0,)))).data))
