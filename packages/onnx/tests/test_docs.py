"""docs/export-onnx.md: its op table says what the registry holds; its sentences on where
ONNX Runtime and zerograd differ."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import onnxruntime
import pytest

import zerograd_nn.functional as F
import zerograd_onnx
from zerograd import no_grad, test_mode
from zerograd_nn import Model
from zerograd_onnx.registry import CONVERTERS

PAGE = Path(__file__).resolve().parents[3] / "docs" / "export-onnx.md"


def _rows():
    if not PAGE.is_file():
        pytest.skip(f"{PAGE} not found (tests run outside the repository checkout)")
    text = PAGE.read_text(encoding="utf-8").split("## The op table", 1)[1]
    table = text.split("| --- | --- | --- |\n", 1)[1].split("\n\n", 1)[0]
    for line in table.splitlines():
        functions, _, operators = line.strip("|").split("|")
        operators = re.sub(r"\([^)]*\)", "", operators)
        yield re.findall(r"`(\w+)`", functions), set(re.findall(r"`(\w+)`", operators))


def test_the_op_table_lists_every_converter_with_its_operators():
    by_name = {cls.__name__: fn for cls, fn in CONVERTERS.items()}
    listed = []
    for names, operators in _rows():
        listed += names
        assert operators == {op for name in names for op in by_name[name].onnx_ops}, names
    assert sorted(listed) == sorted(by_name)


class _MaxPool(Model):
    def forward(self, x):
        return F.pooling(x, 2, 2)


class _Leaky(Model):
    def forward(self, x):
        return F.leaky_relu(x, 0.1)


def _run(path, x):
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {session.get_inputs()[0].name: x})
    return y


def test_onnx_runtimes_max_pool_may_drop_a_nan_that_zerograds_keeps(tmp_path):
    """The page: ONNX Runtime's MaxPool gives 3 for the window [nan, 1, 2, 3] and NaN for
    [1, nan, 2, 0]; zerograd's pooling (numpy's maximum) gives NaN for both."""
    x = np.array([[[[np.nan, 1.0], [2.0, 3.0]]], [[[1.0, np.nan], [2.0, 0.0]]]], np.float32)
    path = zerograd_onnx.export(_MaxPool(), x, tmp_path / "pool.onnx")
    np.testing.assert_array_equal(_run(path, x).ravel(), [3.0, np.nan])
    with no_grad(), test_mode():
        np.testing.assert_array_equal(_MaxPool()(x).data.ravel(), [np.nan, np.nan])


def test_a_float64_leaky_relu_differs_by_the_slopes_float32_rounding(tmp_path):
    """The page: LeakyRelu's slope is a float32 attribute, so a float64 model's negative
    outputs differ from zerograd's by 0.1's float32 rounding (about 1e-8, relative), within
    check's tolerance."""
    x = -np.linspace(0.1, 5.0, 7).reshape(1, 7)
    path = zerograd_onnx.export(_Leaky(), x, tmp_path / "leaky.onnx")
    got = _run(path, x)
    assert got.dtype == np.float64
    with no_grad(), test_mode():
        want = _Leaky()(x).data
    np.testing.assert_allclose(got / want - 1, float(np.float32(0.1)) / 0.1 - 1, rtol=1e-6)
    assert 1e-8 < float(np.float32(0.1)) / 0.1 - 1 < 2e-8
    assert zerograd_onnx.check(_Leaky(), path, x).ok


README = PAGE.parents[1] / "packages" / "onnx" / "README.md"


@pytest.mark.parametrize("name", ["export", "check"])
def test_the_readmes_signatures_are_the_functions(name):
    """packages/onnx/README.md's table gives each function's parameters with their defaults
    (it gave check rtol=1e-5, atol=1e-5, whose defaults are None: 1e-2 for float16)."""
    if not README.is_file():
        pytest.skip(f"{README} not found (tests run outside the repository checkout)")
    written = re.search(rf"\| `{name}\((.*?)\)` \|", README.read_text(encoding="utf-8"))
    assert written, f"the README's table has no row for {name}(...)"
    params = inspect.signature(getattr(zerograd_onnx, name)).parameters.values()
    real = [p.name if p.default is p.empty else f"{p.name}={p.default!r}" for p in params]
    assert written.group(1).split(", ") == real
