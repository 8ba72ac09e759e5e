"""zerograd-nn's ops are defined as core's are: the registry lists them, and
``zerograd_nn.functional`` exports every one with its Function classes."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd.functions import ops


def test_every_nn_op_is_exported_with_its_classes():
    nn_ops = [s for s in ops.OPS.values() if s.module.startswith("zerograd_nn.functional.")]
    assert {"relu", "softmax", "conv2d", "linear", "softmax_cross_entropy"} <= {
        s.name for s in nn_ops
    }
    for spec in nn_ops:
        assert getattr(F, spec.name) is spec.function and spec.name in F.__all__, spec.name
        for cls in spec.classes:
            assert cls.__name__ in F.__all__, cls


def test_generated_activations_keep_their_signatures_and_checks():
    assert str(inspect.signature(F.softmax)) == (
        "(x: 'ArrayLike', axis: 'int' = 1, *, dim: 'int | None' = None) -> 'Variable'"
    )
    assert list(inspect.signature(F.leaky_relu).parameters) == ["x", "slope"]
    x = np.array([[1.0, 2.0, 3.0]])
    assert np.allclose(F.softmax(x, dim=1).data, F.softmax(x, axis=-1).data)
    with pytest.raises(TypeError, match="slope"):
        F.leaky_relu(x, slope="0.1")
    assert np.allclose(F.leaky_relu(np.array([-1.0, 2.0]), 0.1).data, [-0.1, 2.0])
