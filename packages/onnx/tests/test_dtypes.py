"""Data types: what ONNX's operators take, what the converters cast, what ONNX Runtime
runs, and the tolerance ``check`` compares each floating type at."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import forward
from onnx.reference import ReferenceEvaluator

import zerograd_nn.functional as F
import zerograd_onnx
from zerograd_onnx import ExportError


@pytest.mark.parametrize(
    "fn, x, function, dtype, operator, takes",
    [
        (
            lambda x: F.pooling(x, 2, 2),
            np.arange(32).reshape(2, 1, 4, 4),
            "Pooling",
            "int64",
            "MaxPool",
            "float16, float32, float64, int8, uint8",
        ),
        (lambda x: -x, np.arange(6, dtype=np.uint8).reshape(2, 3), "Neg", "uint8", "Neg", None),
        (lambda x: x + x, np.ones((2, 3), bool), "Add", "bool", "Add", None),
    ],
    ids=["int64_max_pooling", "uint8_neg", "bool_add"],
)
def test_data_of_a_type_the_operator_does_not_take_is_named(
    fn, x, function, dtype, operator, takes, tmp_path
):
    """onnx's checker refused these, and export blamed its own converters ("please report
    it") for the user's dtype."""
    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(fn, x, tmp_path / "d.onnx")
    message = str(err.value)
    assert message.startswith(
        f"zerograd_onnx.export: {function} (applied outside any layer of the model) computes "
        f"on {dtype} data, which ONNX's {operator} does not take (it takes "
    )
    assert message.endswith(
        "Give that function data of one of those types (the model's input as float32: "
        "example.astype(numpy.float32)). Nothing was written."
    )
    if takes is not None:
        assert f"(it takes {takes})" in message
    assert "please report" not in message
    assert os.listdir(tmp_path) == []


def test_batch_norm_of_float16_data_with_float32_statistics(rng, tmp_path):
    """zerograd computes in float32; the converter subtracted the float32 mean from the
    float16 data, which onnx's checker refused as a converter fault."""
    stats = [np.asarray(a, np.float32) for a in ([1, 2, 3], [0, 1, 0], [0.5, -1, 2], [1, 2, 4])]

    def norm(x):
        return F.batch_norm(x, *stats)

    x = rng.standard_normal((4, 3)).astype(np.float16)
    path = zerograd_onnx.export(norm, x, tmp_path / "b.onnx")
    result = zerograd_onnx.check(norm, path, rng.standard_normal((6, 3)).astype(np.float16))
    assert result.ok and result.outputs[0].max_abs_error < 1e-6
    gamma, beta, mean, var = stats
    want = (x.astype(np.float32) - mean) / np.sqrt(var + 2e-5) * gamma + beta
    np.testing.assert_allclose(forward(norm, x)[0], want, rtol=1e-6, atol=1e-6)


def test_average_pooling_of_integers_averages_in_floating_point(tmp_path):
    """zerograd averages integers as float64; the converter fed the integers to
    AveragePool, which takes none, and export failed. (ONNX Runtime has no float64
    AveragePool on the CPU: onnx's reference evaluator runs the file.)"""
    x = np.arange(2 * 1 * 4 * 4, dtype=np.int32).reshape(2, 1, 4, 4) ** 2

    def pool(x):
        return F.average_pooling(x, 2, 2)

    path = zerograd_onnx.export(pool, x, tmp_path / "p.onnx")
    (got,) = ReferenceEvaluator(str(path)).run(None, {"input": x})
    want = x.reshape(2, 1, 2, 2, 2, 2).mean(axis=(3, 5))  # float64, by hand
    assert got.dtype == forward(pool, x)[0].dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(forward(pool, x)[0], want, rtol=1e-12)
