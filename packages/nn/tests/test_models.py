"""Models: construction, shapes, parameter counts, pretrained paths, plot."""

import sys

import numpy as np
import pytest

import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd import test_mode
from zerograd.backends import as_numpy
from zerograd_nn import Model
from zerograd_nn.models import (
    MLP,
    VGG16,
    BottleneckA,
    BottleneckB,
    BuildingBlock,
    ResNet,
    ResNet50,
    ResNet101,
    ResNet152,
    Sequential,
    SqueezeNet,
)
from zerograd_nn.weights import named_params


def n_params(model):
    return sum(p.size for p in model.params())


def test_sequential_names_and_forward(rand, to_np, backend):
    m = Sequential(L.Linear(5, in_size=3), L.Linear(2, in_size=5)).to(backend)
    assert list(named_params(m)) == ["l0/W", "l0/b", "l1/W", "l1/b"]
    x = rand(4, 3, dtype="float32")
    np.testing.assert_allclose(to_np(m(x)), to_np(m.l1(m.l0(x))))


def test_mlp_structure_and_activation(rand, to_np):
    np.random.seed(0)
    m = MLP((10, 4), activation=F.relu)
    x = rand(6, 3, dtype="float32")
    y = m(x)
    assert y.shape == (6, 4) and as_numpy(y).dtype == np.float32
    assert [p.shape for p in m.params()] == [(3, 10), (10,), (10, 4), (4,)]
    ref = F.relu(F.matmul(x, m.l0.W) + m.l0.b) @ m.l1.W + m.l1.b
    np.testing.assert_allclose(to_np(y), to_np(ref), rtol=1e-6)


def test_vgg16_forward_shape_and_parameter_count(rand):
    m = VGG16()
    with test_mode():
        y = m(rand(1, 3, 32, 32, dtype="float32"))
    assert y.shape == (1, 1000) and as_numpy(y).dtype == np.float32
    convs = 14_714_688  # the 13 convolutions of VGG-16 (weights and biases)
    fcs = (512 * 4096 + 4096) + (4096 * 4096 + 4096) + (4096 * 1000 + 1000)  # 1x1x512 features
    assert n_params(m) == convs + fcs
    assert list(named_params(m))[:4] == ["conv1_1/W", "conv1_1/b", "conv1_2/W", "conv1_2/b"]


def test_bottleneck_blocks_parameter_counts(rand):
    a = BottleneckA(8, 4, 16, stride=2)
    y = a(rand(2, 8, 6, 6, dtype="float32"))
    assert y.shape == (2, 16, 3, 3)
    # convs without bias: 8*4 + 4*4*9 + 4*16 + 8*16; four BatchNorms of 4 entries per channel
    assert n_params(a) == (32 + 144 + 64 + 128) + 4 * (4 + 4 + 16 + 16)
    b = BottleneckB(16, 4)
    assert b(y).shape == (2, 16, 3, 3)
    assert n_params(b) == (64 + 144 + 64) + 4 * (4 + 4 + 16)
    block = BuildingBlock(3, 8, 4, 16, 1)
    assert block(rand(1, 8, 5, 5, dtype="float32")).shape == (1, 16, 5, 5)
    assert list(dict.fromkeys(k.split("/")[0] for k in named_params(block))) == ["a", "b1", "b2"]


def test_bottleneck_a_downsample_fb_moves_the_stride():
    assert BottleneckA(8, 4, 16, 2, downsample_fb=False).conv1.stride == 2
    fb = BottleneckA(8, 4, 16, 2, downsample_fb=True)
    assert fb.conv1.stride == 1 and fb.conv2.stride == 2


def test_resnet50_forward_and_parameter_count(rand):
    m = ResNet50()
    with test_mode():
        y = m(rand(1, 3, 32, 32, dtype="float32"))
    assert y.shape == (1, 1000) and as_numpy(y).dtype == np.float32
    # 25,557,032 (the published ResNet-50 count) + conv1's bias (64)
    # + the BatchNorm running mean and variance (2 x 26,560 channels)
    assert n_params(m) == 25_557_032 + 64 + 2 * 26_560


@pytest.mark.parametrize("cls,n,blocks", [(ResNet101, 101, 23), (ResNet152, 152, 36)])
def test_deeper_resnets_have_their_blocks(cls, n, blocks):
    m = cls()
    assert len(m.res4._forward) == blocks
    assert isinstance(m, ResNet)


def test_squeezenet_forward_and_parameter_count(rand):
    m = SqueezeNet()
    with test_mode():
        y = m(rand(2, 3, 64, 64, dtype="float32"))
    assert y.shape == (2, 1000) and as_numpy(y).dtype == np.float32
    assert n_params(m) == 1_235_496  # the published SqueezeNet 1.1 count
    names = list(named_params(m))
    assert names[:2] == ["conv1/W", "conv1/b"] and names[-2:] == ["conv10/W", "conv10/b"]
    assert "fire9/expand3x3/W" in names
    assert SqueezeNet(n_classes=10)(rand(1, 3, 32, 32, dtype="float32")).shape == (1, 10)


def test_resnet_bad_depth():
    with pytest.raises(ValueError, match="n_layers must be 50, 101 or 152, but 34 was given"):
        ResNet(34)


def test_pretrained_true_never_downloads_and_says_how_to_ask_for_the_file():
    with pytest.raises(ValueError) as info:
        VGG16(pretrained=True)
    assert str(info.value) == (
        "VGG16(pretrained=True): zerograd never downloads weights on its own. Ask for DeZero's "
        f"file and pass its path: VGG16(pretrained=get_file('{VGG16.WEIGHTS_PATH}')), with "
        "get_file from zerograd_nn.datasets; or, for a file you have, "
        "VGG16(pretrained='/path/to/file.npz')."
    )
    with pytest.raises(ValueError) as info:
        ResNet50(pretrained=True)
    assert f"ResNet50(pretrained=get_file('{ResNet50.WEIGHTS_PATH.format(50)}'))" in str(info.value)
    assert "ResNet50(pretrained='/path/to/file.npz')" in str(info.value)


def test_pretrained_from_local_path(tmp_path, rand, to_np):
    src = BuildingBlock(2, 4, 2, 8, 1)
    src(rand(1, 4, 3, 3, dtype="float32"))
    src.save_weights(tmp_path / "block.npz")

    class Tiny(Model):
        def __init__(self, pretrained=False):
            super().__init__()
            self.block = BuildingBlock(2, 4, 2, 8, 1)
            from zerograd_nn.models import _load_pretrained

            _load_pretrained(self, pretrained, "Tiny", "nowhere")

    # names gain the "block/" prefix, so a bare block file does not fit a model holding it
    with pytest.raises(ValueError, match="missing in the file"):
        Tiny(pretrained=str(tmp_path / "block.npz"))
    whole = Tiny()
    whole.block = src
    whole.save_weights(tmp_path / "tiny.npz")
    loaded = Tiny(pretrained=str(tmp_path / "tiny.npz"))
    np.testing.assert_array_equal(to_np(loaded.block.a.conv1.W), to_np(src.a.conv1.W))


def test_vgg16_preprocess():
    pil = pytest.importorskip("PIL.Image", reason="Pillow is not installed")
    img = pil.new("RGB", (40, 30), color=(10, 20, 30))
    a = VGG16.preprocess(img, size=(16, 16))
    assert a.shape == (3, 16, 16) and as_numpy(a).dtype == np.float32
    np.testing.assert_allclose(a[:, 0, 0], [30 - 103.939, 20 - 116.779, 10 - 123.68], rtol=1e-5)


def test_plot_without_viz_names_the_package(monkeypatch, rand):
    monkeypatch.setitem(sys.modules, "zerograd_viz", None)  # as if not installed
    m = MLP([2])
    with pytest.raises(ImportError, match="pip install zerograd-viz"):
        m.plot(rand(1, 3, dtype="float32"))


def test_plot_uses_zerograd_viz(monkeypatch, rand):
    import types

    calls = []
    fake = types.SimpleNamespace(
        plot_dot_graph=lambda y, verbose, to_file: calls.append((y, verbose, to_file))
    )
    monkeypatch.setitem(sys.modules, "zerograd_viz", fake)
    m = MLP([2])
    m.plot(rand(1, 3, dtype="float32"), to_file="net.png")
    ((y, verbose, to_file),) = calls
    assert y.shape == (1, 2) and verbose is True and to_file == "net.png"


# -- constructors refuse what cannot build a model -----------------------------------------


@pytest.mark.parametrize("sizes", [None, 10, (), []])
def test_mlp_needs_a_list_of_widths(sizes):
    with pytest.raises(TypeError, match=r"^MLP: fc_output_sizes must be a non-empty list or tuple"):
        MLP(sizes)


@pytest.mark.parametrize("bad", [0, -1, 10.5, True, "3"])
def test_mlp_widths_are_positive_ints(bad):
    with pytest.raises(
        ValueError if isinstance(bad, int) and not isinstance(bad, bool) else TypeError,
        match=r"^MLP: every layer width \(fc_output_sizes=\(4, .*\)\) must be a positive int",
    ):
        MLP((4, bad))


def test_mlp_activation_and_numpy_widths():
    with pytest.raises(TypeError, match=r"^MLP: activation must be a function such as F.relu"):
        MLP((3,), activation=5)
    model = MLP((np.int64(4), 2), activation=None)  # None: a stack of linear layers
    x = np.random.default_rng(0).standard_normal((5, 3))
    y = model(x)
    W1, b1, W2, b2 = model.l0.W.data, model.l0.b.data, model.l1.W.data, model.l1.b.data
    np.testing.assert_allclose(y.data, (x @ W1 + b1) @ W2 + b2, rtol=1e-6)
    assert type(model.l0.out_size) is int


def test_sequential_refuses_what_is_not_callable():
    from zerograd_nn.models import Sequential

    with pytest.raises(TypeError, match=r"^Sequential: layer 1 is 5, not a Layer or a callable"):
        Sequential(L.Linear(2), 5)


def test_vgg16_preprocess_needs_an_image():
    with pytest.raises(TypeError, match=r"^VGG16.preprocess: expected a PIL image, got ndarray"):
        VGG16.preprocess(np.zeros((3, 8, 8)))


@pytest.mark.parametrize("bad", [0, 2.5, True])
def test_model_widths_are_positive_ints(bad):
    from zerograd_nn.models import Fire, SqueezeNet

    error = ValueError if bad == 0 and type(bad) is int else TypeError  # 2.5, True: no ints
    with pytest.raises(error, match=r"^SqueezeNet: n_classes must be a positive int"):
        SqueezeNet(n_classes=bad)
    with pytest.raises(error, match=r"^Fire: expand3x3 must be a positive int"):
        Fire(2, 4, bad)
    with pytest.raises(error, match=r"^BuildingBlock: n_layers must be a positive int"):
        BuildingBlock(bad, 4, 2, 4, 1)
    assert SqueezeNet(n_classes=np.int64(3)).conv10.out_channels == 3
