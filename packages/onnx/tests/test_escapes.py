"""Values that leave the graph are refused at export, never frozen into the file: the
model's own code reading a traced value's array, an input the graph never reads, a
recurrent state left by an earlier call."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import normal

import zerograd_nn.functional as F
import zerograd_onnx
from zerograd_onnx import ExportError


def _branchy(x):
    return F.exp(x) if x.data.sum() > 0 else F.tanh(x)  # a branch on the values


@pytest.mark.parametrize("dynamic_batch", [True, False])
def test_a_branch_on_x_data_is_refused(dynamic_batch, rng, tmp_path):
    positive = np.abs(normal(rng, 3, 4))
    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(
            _branchy, positive, tmp_path / "b.onnx", dynamic_batch=dynamic_batch
        )  # the file took exp for every input, where zerograd takes tanh on negative ones
    line = _branchy.__code__.co_firstlineno + 1
    assert str(err.value).startswith(
        f"zerograd_onnx.export: the forward reads a Variable's value into Python (x.data at "
        f"{__file__}, line {line}, outside any layer of the model)"
    )
    assert "x.shape and x.dtype need no .data" in str(err.value)
    assert os.listdir(tmp_path) == []


def test_an_array_from_x_data_both_runs_share_is_refused(rng, tmp_path):
    def shifted(x):
        return x - np.asarray(x.data).max()  # the extra row repeats row 0: the same maximum

    with pytest.raises(ExportError, match=r"reads a Variable's value into Python \(x.data at"):
        zerograd_onnx.export(shifted, normal(rng, 3, 4), tmp_path / "s.onnx")
    assert os.listdir(tmp_path) == []


def test_reading_metadata_or_parameters_through_data_is_no_read(rng, tmp_path):
    w = np.arange(4, dtype=np.float32)

    def model(x):
        n, d = x.data.shape  # metadata: no value (nor .dtype, .ndim, .size, is None)
        y = x * w.astype(x.data.dtype)
        return F.reshape(y, (n, d * x.data.ndim // 2)) if x.data is not None else x

    path = zerograd_onnx.export(model, normal(rng, 3, 4), tmp_path / "m.onnx", dynamic_batch=False)
    assert zerograd_onnx.check(model, path, normal(rng, 3, 4)).ok
