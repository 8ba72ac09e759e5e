"""What ``export`` writes: names, batch axes, initializers, metadata; what it leaves alone:
the model. And what the converters read: only what each Function's constructor stored."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import forward, load_example, round_trip
from onnx import numpy_helper
from test_functions import CASES, case_inputs
from test_models import ConvBatchNorm, LSTMClassifier, randomize_batch_norms

import zerograd
import zerograd_nn.functional as F
import zerograd_nn.layers as L
import zerograd_onnx
from zerograd import Parameter, Variable
from zerograd.function import settings_of
from zerograd_nn import Layer, Model
from zerograd_nn.models import MLP
from zerograd_onnx import ExportError
from zerograd_onnx.capture import Capture, capture, layer_sites


def _dims(info):
    return [d.dim_param or d.dim_value for d in info.type.tensor_type.shape.dim]


def test_inputs_outputs_and_initializers_are_named(rng, tmp_path):
    model = MLP((4, 2))
    x = rng.standard_normal((3, 5)).astype(np.float32)
    path = zerograd_onnx.export(
        model, x, tmp_path / "m.onnx", input_names=["features"], output_names=["scores"]
    )
    proto = onnx.load(path)
    assert [i.name for i in proto.graph.input] == ["features"]
    assert [o.name for o in proto.graph.output] == ["scores"]
    assert _dims(proto.graph.input[0]) == ["batch", 5]
    assert _dims(proto.graph.output[0]) == ["batch", 2]
    arrays = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    assert list(arrays) == ["l0.W", "l0.b", "l1.W", "l1.b"]
    for name, p in model.named_params().items():
        np.testing.assert_array_equal(arrays[name], p.data)
        assert arrays[name].dtype == np.float32


def test_metadata_names_zerograd_and_the_model(rng, tmp_path):
    model = MLP((2,))
    path = zerograd_onnx.export(model, np.ones((1, 3), np.float32), tmp_path / "m.onnx")
    proto = onnx.load(path)
    props = {p.key: p.value for p in proto.metadata_props}
    assert props == {
        "zerograd_version": zerograd.__version__,
        "zerograd_onnx_version": zerograd_onnx.__version__,
        "model_class": "zerograd_nn.models.MLP",
    }
    assert proto.producer_name == "zerograd-onnx"
    assert proto.producer_version == zerograd_onnx.__version__
    assert proto.doc_string == (
        f"MLP exported from zerograd {zerograd.__version__} by zerograd-onnx "
        f"{zerograd_onnx.__version__}"
    )
    assert proto.graph.name == "MLP"
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 18)]


def test_a_static_batch_fixes_every_axis(rng, tmp_path):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    path = zerograd_onnx.export(MLP((2,)), x, tmp_path / "m.onnx", dynamic_batch=False)
    proto = onnx.load(path)
    assert _dims(proto.graph.input[0]) == [3, 5]
    assert _dims(proto.graph.output[0]) == [3, 2]


def test_the_cnn_reshape_copies_the_batch_axis_from_its_input(rng, tmp_path):
    model = load_example("cnn_digits").SmallCNN()
    path = zerograd_onnx.export(model, rng.random((4, 1, 8, 8), np.float32), tmp_path / "c.onnx")
    proto = onnx.load(path)
    reshape = next(n for n in proto.graph.node if n.op_type == "Reshape")
    shape = next(t for t in proto.graph.initializer if t.name == reshape.input[1])
    assert numpy_helper.to_array(shape).tolist() == [0, 256]  # 0: the batch, copied


def test_several_outputs_and_an_output_that_is_an_input(rng, tmp_path):
    def two(x, y):
        h = F.relu(x) + y
        return h, F.sum(h, axis=1), x

    xs = tuple(rng.standard_normal((3, 4)).astype(np.float32) for _ in range(2))
    others = tuple(rng.standard_normal((6, 4)).astype(np.float32) for _ in range(2))
    proto, results = round_trip(two, xs, others, tmp_path / "t.onnx")
    assert [o.name for o in proto.graph.output] == ["output_0", "output_1", "output_2"]
    assert [_dims(o) for o in proto.graph.output] == [["batch", 4], ["batch"], ["batch", 4]]
    assert [r.shape for r in results[1].outputs] == [(6, 4), (6,), (6, 4)]
    assert [n.op_type for n in proto.graph.node][-1] == "Identity"  # output_2 is input_0


def test_a_function_with_unnamed_parameters(rng, tmp_path):
    w, b = Parameter(np.ones((3, 2), np.float32)), Parameter(np.zeros(2, np.float32))

    def affine(x):
        return F.linear(x, w, b)

    proto, _ = round_trip(
        affine, np.ones((2, 3), np.float32), np.ones((5, 3), np.float32), tmp_path / "a.onnx"
    )
    assert [t.name for t in proto.graph.initializer] == ["param", "param_1"]


def test_unused_work_is_left_out(rng, tmp_path):
    def wasteful(x):
        F.exp(x)  # computed, never used
        return F.tanh(x)

    proto, _ = round_trip(
        wasteful, np.ones((2, 3), np.float32), np.ones((4, 3), np.float32), tmp_path / "w.onnx"
    )
    assert [n.op_type for n in proto.graph.node] == ["Tanh"]


def _layers(model):
    """Each layer's class and attribute names, by dotted path."""
    return {k: (type(m), sorted(vars(m))) for k, _, _, m in model.walk() if isinstance(m, Layer)}


def test_export_leaves_the_model_as_it_was(rng, tmp_path):
    model = ConvBatchNorm()
    x = rng.standard_normal((3, 2, 5, 5)).astype(np.float32)
    forward(model, x)
    randomize_batch_norms(model, rng)
    before = {k: p.data.copy() for k, p in model.named_params().items()}
    layers = _layers(model)
    with zerograd.using_config("train", True):  # train mode: export still runs in test mode
        zerograd_onnx.export(model, x, tmp_path / "b.onnx")
    after = model.named_params()
    assert list(after) == list(before)
    assert all(np.array_equal(before[k], after[k].data) for k in before)  # no statistics moved
    assert {
        k: (type(m), sorted(vars(m))) for k, _, _, m in model.walk() if isinstance(m, Layer)
    } == (layers)
    assert zerograd_onnx.check(model, tmp_path / "b.onnx", x).ok  # test mode in the file too


def test_a_forward_that_branches_on_the_batch_size_is_refused(rng, tmp_path):
    def branchy(x):
        return F.exp(x) if x.shape[0] < 4 else F.tanh(x)

    with pytest.raises(ExportError, match="call 0 is Exp .* on the example inputs but Tanh"):
        zerograd_onnx.export(branchy, np.ones((3, 2), np.float32), tmp_path / "b.onnx")
    path = zerograd_onnx.export(
        branchy, np.ones((3, 2), np.float32), tmp_path / "b.onnx", dynamic_batch=False
    )
    assert zerograd_onnx.check(branchy, path, np.full((3, 2), 0.5, np.float32)).ok


class Inner(Layer):
    def __init__(self):
        super().__init__()
        self.fc = L.Linear(3)

    def forward(self, x):
        return F.relu(self.fc(x))


class Outer(Model):
    def __init__(self):
        super().__init__()
        self.blocks = [Inner(), Inner()]

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return F.softmax(x)


def test_each_call_knows_the_layer_that_applied_it():
    model = Outer()
    cap, _ = capture(model, (Variable(np.ones((2, 3), np.float32)),), layer_sites(model))
    sites = [(type(c.fn).__name__, str(c.site)) for c in cap.calls]
    assert sites == [
        ("Linear", "in layer 'blocks.0.fc' (Linear)"),
        ("ReLU", "in layer 'blocks.0' (Inner)"),
        ("Linear", "in layer 'blocks.1.fc' (Linear)"),
        ("ReLU", "in layer 'blocks.1' (Inner)"),
        ("Softmax", "in the model's own forward (Outer)"),
    ]


def test_converters_read_only_what_constructors_stored(rng, tmp_path, monkeypatch):
    """Each forward's writes on its function object are undone as it returns, and every
    function of the op table and the models still export and agree with zerograd: so no
    converter reads them (engine2 moves them to a saved context)."""
    monkeypatch.setattr(Capture, "before_call", lambda self, fn: dict(settings_of(fn)))
    real_called = Capture.called

    def called(self, fn, before, inputs, outputs):
        settings = settings_of(fn)
        if settings or before:  # (add, tanh: slotted, nothing of their own to undo)
            settings.clear()
            settings.update(before)  # as if forward had written nothing on self
        real_called(self, fn, before, inputs, outputs)

    monkeypatch.setattr(Capture, "called", called)
    for name, (_, fn, _) in sorted(CASES.items()):
        example, other = case_inputs(name, rng, 3), case_inputs(name, rng, 5)
        round_trip(fn, example, other, tmp_path / f"{name}.onnx")
    model = ConvBatchNorm()
    x = rng.standard_normal((3, 2, 5, 5)).astype(np.float32)
    forward(model, x)
    randomize_batch_norms(model, rng)
    round_trip(model, x, x[:2], tmp_path / "bn.onnx")
    lstm = LSTMClassifier(steps=3)
    round_trip(lstm, np.ones((2, 3, 4), np.float32), np.ones((5, 3, 4), np.float32), tmp_path / "l")


def test_export_leaves_no_reference_cycle_holding_the_model(tmp_path):
    """The capture found each call's layer by walking the stack from its own frame, whose
    locals (stored in it once read) held that frame: a cycle through every frame above,
    which kept the model and the example input until the cyclic collector ran."""
    import gc
    import weakref

    was = gc.isenabled()
    gc.disable()
    try:
        model = MLP((8, 3))
        x = np.ones((2, 5), np.float32)
        zerograd_onnx.export(model, x, tmp_path / "mlp.onnx")
        refs = [weakref.ref(p) for p in model.params()] + [weakref.ref(model)]
        del model
        assert [r() for r in refs] == [None] * len(refs)
    finally:
        if was:
            gc.enable()
