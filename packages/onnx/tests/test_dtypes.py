"""Data types: what ONNX's operators take, what the converters cast, what ONNX Runtime
runs, and the tolerance ``check`` compares each floating type at."""

from __future__ import annotations

import os

import numpy as np
import pytest

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
