"""Data types: what ONNX's operators take, what the converters cast, what ONNX Runtime
runs, and the tolerance ``check`` compares each floating type at."""

from __future__ import annotations

import os

import numpy as np
import onnx
import onnxruntime
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


def test_a_valid_file_onnx_runtime_has_no_kernel_for_is_not_called_damaged(rng, tmp_path):
    """ONNX Runtime's CPU provider has no float64 Conv: check called the file "not an ONNX
    file, or a damaged one: export it again", which exporting again never fixes."""
    w = rng.standard_normal((2, 3, 3, 3))

    def conv(x):
        return F.conv2d(x, w)

    x = rng.standard_normal((2, 3, 5, 5))  # float64, as w
    path = zerograd_onnx.export(conv, x, tmp_path / "c.onnx")
    onnx.checker.check_model(str(path), full_check=True)
    with pytest.raises(ValueError) as err:
        zerograd_onnx.check(conv, path, x)
    message = str(err.value)
    assert message.startswith(f"zerograd_onnx.check: ONNX Runtime {onnxruntime.__version__} cannot")
    assert "Could not find an implementation for Conv" in message  # ONNX Runtime's words
    assert message.endswith(
        "The file is valid ONNX, but this runtime has no kernel for one of its nodes with these "
        "types: its CPU provider computes Conv, ConvTranspose, AveragePool and Col2Im in "
        "float16 and float32 only (zerograd computes integer data into them in float64). "
        "Export a float32 copy of the model (its parameters and inputs cast with "
        "astype(numpy.float32)) to run it in ONNX Runtime, or run the file elsewhere."
    )
    assert "damaged" not in message
    w = w.astype(np.float32)  # the float32 copy runs
    path = zerograd_onnx.export(conv, x.astype(np.float32), tmp_path / "c.onnx")
    assert zerograd_onnx.check(conv, path, x.astype(np.float32)).ok


def _run_file(path, x):
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})


def test_float16_outputs_are_compared_at_float16s_precision(rng, tmp_path):
    """Both sides round to float16 (about three digits), at different steps: check's
    rtol = atol = 1e-5 raised ParityError on every such model, whose file is right."""

    def model(x):
        return F.softmax(F.sigmoid(x) * 2.5 + 1.0), x @ np.eye(5, dtype=np.float32)  # f16, f32

    x = rng.standard_normal((6, 5)).astype(np.float16)
    path = zerograd_onnx.export(model, (x,), tmp_path / "h.onnx")
    ref = 1 / (1 + np.exp(-x.astype(np.float64))) * 2.5 + 1.0
    ref = np.exp(ref) / np.exp(ref).sum(axis=1, keepdims=True)
    for got in (_run_file(path, x)[0], forward(model, x)[0]):  # each within float16's rounding
        assert got.dtype == np.float16
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=4e-3, atol=1e-3)
    result = zerograd_onnx.check(model, path, x)
    half, single = result.outputs
    assert forward(model, x)[1].dtype == np.float32
    assert result.ok and half.max_abs_error > 1e-5  # beyond float32's tolerance
    assert (half.rtol, half.atol, single.rtol, single.atol) == (1e-2, 1e-2, 1e-5, 1e-5)
    assert (result.rtol, result.atol) == (1e-5, 1e-5)
    assert "(within rtol=0.01, atol=0.01)" in str(result)
    with pytest.raises(zerograd_onnx.ParityError, match=r"OUTSIDE rtol=1e-05, atol=1e-05"):
        zerograd_onnx.check(model, path, x, rtol=1e-5, atol=1e-5)  # asked for: applies to all
