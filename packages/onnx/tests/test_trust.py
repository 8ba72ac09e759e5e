"""Bad input a user meets: each is one clear error naming what to change, or a file whose
values are zerograd's own forward's at other batch sizes; nothing half-done is left."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import forward, normal

import zerograd_nn.layers as L
import zerograd_onnx
from zerograd import Function, Parameter


class Twice(Function):
    def forward(self, x):
        return 2 * x


def _nothing_but(folder, *names):
    assert sorted(os.listdir(folder)) == sorted(names)


def _run(path, *xs):
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: x for i, x in zip(session.get_inputs(), xs)})


def test_a_converter_that_raises_says_which_function_it_was_converting(rng, tmp_path):
    def broken(ctx):
        return ctx.fn.no_such_setting

    old = tmp_path / "m.onnx"
    old.write_bytes(b"the old file")
    zerograd_onnx.register(Twice, broken)
    try:
        with pytest.raises(AttributeError, match="no_such_setting") as err:
            zerograd_onnx.export(lambda x: Twice()(x), normal(rng, 3, 4), old)
    finally:
        zerograd_onnx.unregister(Twice)
    assert err.value.__notes__ == [
        f"zerograd_onnx.export: the converter of {__name__}.Twice (applied outside any layer "
        f"of the model) raised this; nothing was written."
    ]
    assert old.read_bytes() == b"the old file"
    _nothing_but(tmp_path, "m.onnx")


@pytest.mark.parametrize("ops", ["Add", ("Add", 1), [None]])
def test_register_refuses_ops_that_are_not_operator_names(ops):
    with pytest.raises(TypeError, match=r"ops must be a tuple of ONNX operator names \(\"Add\",\)"):
        zerograd_onnx.register(Twice, lambda ctx: None, ops=ops)
    assert Twice not in zerograd_onnx.supported()


@pytest.mark.parametrize(
    "model, message",
    [
        ("not a model", "zerograd_onnx.check: model must be a Layer or a callable"),
        (lambda x: 3, "zerograd_onnx.check: the model returned builtins.int, not a Variable"),
        (lambda x: x.data, "zerograd_onnx.check: the model returned numpy.ndarray, not a Var"),
    ],
)
def test_check_refuses_a_model_that_export_refuses(model, message, rng, tmp_path):
    path = zerograd_onnx.export(lambda x: x * 2.0, normal(rng, 3, 4), tmp_path / "m.onnx")
    with pytest.raises(TypeError, match=message):
        zerograd_onnx.check(model, path, normal(rng, 5, 4))


def test_big_endian_inputs_and_parameters_export_as_float(rng, tmp_path):
    # np.load of a file written on another machine gives '>f4' arrays
    small, large = L.Linear(3, in_size=4), L.Linear(30, in_size=3)
    for layer in (small, large):
        layer.W.data = layer.W.data.astype(">f4")

    def model(x):
        return large(small(x))

    x = normal(rng, 2, 4).astype(">f4")
    path = zerograd_onnx.export(model, x, tmp_path / "m.onnx")
    for other in (normal(rng, 2, 4), normal(rng, 7, 4)):
        (got,) = _run(path, other)
        (want,) = forward(model, other)
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert zerograd_onnx.check(model, path, normal(rng, 5, 4).astype(">f4")).ok


def test_a_constant_parameter_made_in_the_forward_exports_at_any_batch(rng, tmp_path):
    def model(x):
        return x * Parameter(np.arange(4, dtype=np.float32))

    path = zerograd_onnx.export(model, normal(rng, 3, 4), tmp_path / "m.onnx")
    for n in (1, 6):
        x = normal(rng, n, 4)
        np.testing.assert_allclose(_run(path, x)[0], forward(model, x)[0], rtol=1e-5, atol=1e-5)


def test_a_parameter_made_in_the_forward_from_the_input_is_refused(rng, tmp_path):
    def model(x):
        return x * Parameter(x.data.mean(axis=0))

    with pytest.raises(zerograd_onnx.ExportError, match=r"reads a Variable's value into "
                       r"Python \(x.data at .*test_trust.py, line"):  # fmt: skip
        zerograd_onnx.export(model, normal(rng, 3, 4), tmp_path / "m.onnx")
    _nothing_but(tmp_path)


@pytest.mark.parametrize("dtype", [np.complex64, np.longdouble])
def test_a_dtype_no_onnx_operator_computes_with_is_named(dtype, tmp_path):
    if np.dtype(dtype).itemsize <= 8 and np.dtype(dtype).kind == "f":
        pytest.skip("this platform's long double is float64, which exports")
    old = tmp_path / "m.onnx"
    old.write_bytes(b"the old file")
    with pytest.raises(zerograd_onnx.ExportError) as e:
        zerograd_onnx.export(L.Linear(3), np.ones((2, 4), dtype), old)
    assert f"input 'input' is {np.dtype(dtype).name}" in str(e.value)
    assert "convert it with astype" in str(e.value)
    assert old.read_bytes() == b"the old file"
    _nothing_but(tmp_path, "m.onnx")


def test_a_complex_parameter_is_named(tmp_path):
    layer = L.Linear(3)
    layer(np.ones((2, 4), np.float32))  # sized
    layer.W.data = layer.W.data.astype(np.complex64)
    with pytest.raises(zerograd_onnx.ExportError, match=r"parameter 'W' is complex64"):
        zerograd_onnx.export(layer, np.ones((2, 4), np.float32), tmp_path / "m.onnx")
    _nothing_but(tmp_path)
