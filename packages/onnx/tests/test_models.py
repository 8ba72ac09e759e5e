"""The model zoo exported and run in ONNX Runtime at two batch sizes, within rtol = atol =
1e-5 of zerograd's forward.

Each model's last layer is rescaled so that its outputs are of order 1 (with their default
initialization some models output values near 1e-3, where atol = 1e-5 would say little),
and batch norm's running statistics and affine parameters are drawn at random (at their
initial values it is nearly the identity). The full-size VGG16 (138 M parameters, 224 x
224 images) and ResNet-50 at 224 x 224 run in ``test_large_models.py`` (``nox -s
onnx_large``); here VGG16 takes 32 x 32 images (the same layers; fc6 is sized from its
input, 38 M parameters) and ResNet-50 64 x 64 ones.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import forward, load_example, op_types, round_trip

import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd_nn import Model
from zerograd_nn.models import MLP, VGG16, ResNet50, SqueezeNet


def randomize_batch_norms(model, rng):
    """Give every BatchNorm running statistics and scales that change its output."""
    for layer in [m for *_, m in model.walk() if isinstance(m, L.BatchNorm)]:
        c = layer.gamma.shape[0]
        layer.avg_mean.data = rng.normal(0, 0.1, c).astype(np.float32)
        layer.avg_var.data = rng.uniform(0.5, 1.5, c).astype(np.float32)
        layer.gamma.data = rng.uniform(0.5, 1.5, c).astype(np.float32)
        layer.beta.data = rng.normal(0, 0.1, c).astype(np.float32)


def scale_outputs(model, weight, x):
    """Multiply the last layer's ``weight`` so that the outputs on ``x`` have std 1."""
    (y,) = forward(model, x)
    weight.data = (weight.data / y.std()).astype(np.float32)
    (y,) = forward(model, x)
    assert 0.5 < y.std() < 2


def assert_round_trip(model, example, other, path):
    proto, results = round_trip(model, example, other, path)
    for result in results:
        assert result.outputs[0].max_abs_error <= 1e-5
    return proto, results


def test_mlp(rng, tmp_path):
    model = MLP((32, 16, 3))
    example = rng.standard_normal((4, 8)).astype(np.float32)
    proto, _ = assert_round_trip(
        model, example, rng.standard_normal((9, 8), np.float32), tmp_path / "m.onnx"
    )
    assert op_types(proto) == {"Gemm", "Sigmoid"}
    assert [t.name for t in proto.graph.initializer] == [
        "l0.W", "l0.b", "l1.W", "l1.b", "l2.W", "l2.b",
    ]  # fmt: skip


def test_the_cnn_of_examples_cnn_digits(rng, tmp_path):
    model = load_example("cnn_digits").SmallCNN()
    example = rng.random((5, 1, 8, 8), dtype=np.float32)  # the digits: 8 x 8 in [0, 1]
    scale_outputs(model, model.fc2.W, example)
    proto, _ = assert_round_trip(
        model, example, rng.random((2, 1, 8, 8), np.float32), tmp_path / "c.onnx"
    )
    assert [n.op_type for n in proto.graph.node] == [
        "Conv", "Relu", "MaxPool", "Reshape", "Gemm", "Relu", "Gemm",
    ]  # fmt: skip


def test_squeezenet(rng, tmp_path):
    model = SqueezeNet(n_classes=10)
    example = rng.standard_normal((2, 3, 64, 64)).astype(np.float32)
    scale_outputs(model, model.conv10.W, example)
    other = rng.standard_normal((3, 3, 64, 64)).astype(np.float32)
    proto, _ = assert_round_trip(model, example, other, tmp_path / "s.onnx")
    assert op_types(proto) == {"Conv", "Relu", "MaxPool", "Concat", "AveragePool", "Reshape"}


def test_resnet50_with_batch_norm_in_test_mode(rng, tmp_path):
    model = ResNet50()
    example = rng.standard_normal((1, 3, 64, 64)).astype(np.float32)
    forward(model, example)  # size the layers before drawing their statistics
    randomize_batch_norms(model, rng)
    scale_outputs(model, model.fc6.W, example)
    other = rng.standard_normal((2, 3, 64, 64)).astype(np.float32)
    proto, _ = assert_round_trip(model, example, other, tmp_path / "r.onnx")
    names = {t.name for t in proto.graph.initializer}
    assert {"bn1.avg_mean", "bn1.avg_var", "res2.a.bn1.gamma", "res5.b2.conv3.W"} <= names


def test_vgg16_layers_on_small_images(rng, tmp_path):
    model = VGG16()
    example = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    scale_outputs(model, model.fc8.W, example)
    other = rng.standard_normal((2, 3, 32, 32)).astype(np.float32)
    proto, _ = assert_round_trip(model, example, other, tmp_path / "v.onnx")
    assert sum(n.op_type == "Conv" for n in proto.graph.node) == 13
    assert op_types(proto) == {"Conv", "Relu", "MaxPool", "Reshape", "Gemm"}  # dropout: none


class LSTMClassifier(Model):
    """An LSTM unrolled over a fixed number of steps, then a linear layer on the last state."""

    def __init__(self, steps: int, hidden: int = 8, classes: int = 3) -> None:
        super().__init__()
        self.steps = steps
        self.lstm = L.LSTM(hidden)
        self.fc = L.Linear(classes)

    def forward(self, x):
        self.lstm.reset_state()
        for t in range(self.steps):
            h = self.lstm(x[:, t, :])
        return self.fc(h)


def test_an_lstm_unrolled_over_a_fixed_length(rng, tmp_path):
    model = LSTMClassifier(steps=6)
    example = rng.standard_normal((4, 6, 5)).astype(np.float32)
    scale_outputs(model, model.fc.W, example)
    state = model.lstm.h, model.lstm.c  # what the last forward left
    other = rng.standard_normal((7, 6, 5)).astype(np.float32)
    proto, _ = assert_round_trip(model, example, other, tmp_path / "l.onnx")
    assert op_types(proto) == {"Gather", "Gemm", "MatMul", "Add", "Sigmoid", "Tanh", "Mul"}
    assert (model.lstm.h, model.lstm.c) == state  # export and check put the state back
    # three gates a step; the first step's forget gate meets no cell state: left out unused
    assert sum(n.op_type == "Sigmoid" for n in proto.graph.node) == 3 * 6 - 1


class Embedder(Model):
    """Ids to embeddings, summed over the sequence, then a linear layer."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = L.EmbedID(10, 4)
        self.fc = L.Linear(2)

    def forward(self, ids):
        return self.fc(F.sum(self.embed(ids), axis=1))


def test_an_embedding_takes_its_ids_as_an_int64_input(rng, tmp_path):
    model = Embedder()
    proto, _ = assert_round_trip(
        model, rng.integers(0, 10, (3, 5)), rng.integers(0, 10, (6, 5)), tmp_path / "e.onnx"
    )
    gather = next(n for n in proto.graph.node if n.op_type == "Gather")
    assert list(gather.input) == ["embed.W", "input"]
    assert proto.graph.input[0].type.tensor_type.elem_type == 7  # INT64


class ConvBatchNorm(Model):
    def __init__(self) -> None:
        super().__init__()
        self.conv = L.Conv2d(4, 3, pad=1)
        self.bn = L.BatchNorm()
        self.fc = L.Linear(3)
        self.bn_fc = L.BatchNorm()

    def forward(self, x):
        h = F.relu(self.bn(self.conv(x)))
        return self.bn_fc(self.fc(F.reshape(h, (h.shape[0], -1))))


def test_batch_norm_uses_its_running_statistics(rng, tmp_path):
    model = ConvBatchNorm()
    example = rng.standard_normal((3, 2, 5, 5)).astype(np.float32)
    forward(model, example)
    randomize_batch_norms(model, rng)
    proto, _ = assert_round_trip(model, example, example[:1], tmp_path / "b.onnx")
    assert {"bn.avg_mean", "bn.avg_var", "bn.gamma", "bn.beta"} <= {
        t.name for t in proto.graph.initializer
    }
    before = [p.data.copy() for p in model.params()]
    forward(model, example)
    assert all(np.array_equal(a, p.data) for a, p in zip(before, model.params()))


@pytest.mark.parametrize("batches", [(1, 8), (8, 1)])
def test_a_batch_of_one_in_the_example_or_the_check(batches, rng, tmp_path):
    model = load_example("cnn_digits").SmallCNN()
    a, b = (rng.random((n, 1, 8, 8), dtype=np.float32) for n in batches)
    scale_outputs(model, model.fc2.W, a)
    assert_round_trip(model, a, b, tmp_path / "one.onnx")
