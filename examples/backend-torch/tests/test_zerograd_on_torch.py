"""zerograd's own behaviour on torch tensors: messages name shapes as tuples, and float64
results are computed in float64 although PyTorch's default float is float32."""

from __future__ import annotations

import numpy as np
import pytest

import zerograd
import zerograd.functions as Fc
from zerograd.backends import as_array_of, as_numpy

pytest.importorskip("zerograd_nn", reason="zerograd-nn is not installed here")
import zerograd_nn.functional as F  # noqa: E402
from zerograd_nn import initializers as I  # noqa: E402


def _t(a, dtype="float64"):
    return as_array_of(np.asarray(a, dtype=dtype), "torch")


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: float(zerograd.Variable(_t([1.0, 2.0]))), r"got shape \(2,\); reduce it"),
        (lambda: Fc.reshape(_t(np.zeros((2, 3))), (4, 2)), r"shape \(2, 3\) \(6 elements\)"),
        (lambda: Fc.max(_t(np.zeros((0, 3))), axis=0), r"max: the input of shape \(0, 3\) has"),
        (lambda: Fc.matmul(_t(np.zeros((2, 3))), _t(np.zeros((2, 3)))), r"shapes \(2, 3\) and"),
        (lambda: F.linear(_t(np.zeros((4, 3))), _t(np.zeros((2, 2)))), r"x of shape \(4, 3\) and"),
        (
            lambda: F.softmax_cross_entropy(_t(np.zeros((0, 3))), _t([], "int64")),
            r"scores x of shape \(0, 3\) hold no rows",
        ),
    ],
)
def test_errors_name_shapes_as_tuples_not_torch_size(backend, call, message):
    with pytest.raises((ValueError, TypeError), match=message) as info:
        call()
    assert "torch.Size" not in str(info.value)


def test_mean_of_nothing_warns_with_a_tuple_shape(backend):
    with pytest.warns(RuntimeWarning, match=r"mean: mean of empty slice \(input of shape \(0,\)\)"):
        assert np.isnan(as_numpy(Fc.mean(_t(np.zeros(0)))))


@pytest.mark.parametrize("shape", [(5, 5), (3, 8), (8, 3)])
def test_orthogonal_float64_is_orthonormal_to_float64_precision(backend, shape):
    backend.seed(0)
    w = as_numpy(I.Orthogonal(scale=2.0)(shape, "float64", backend))
    assert w.dtype == np.float64
    gram = w @ w.T if shape[0] <= shape[1] else w.T @ w
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(shape)), atol=1e-12)
