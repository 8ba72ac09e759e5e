"""A layer called in PyTorch's argument order fails, naming the zerograd spelling.

DeZero's order (output size first, input size read from the first batch) stays what the
layers take: the book's calls and DeZero's model zoo build the same layers as before.
"""

import numpy as np
import pytest

from zerograd_nn.layers import LSTM, RNN, Conv2d, Deconv2d, EmbedID, Linear

MNIST = np.zeros((2, 1, 28, 28), np.float32)


def _unsized(layer):
    return layer.W.data is None


# -- Linear ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, spelling",
    [((2, 10), "Linear(10, in_size=2)"), ((784, 100, True), "Linear(100, in_size=784)")],
)
def test_linear_in_pytorch_order_names_the_zerograd_spelling(args, spelling):
    with pytest.raises(TypeError) as info:
        Linear(*args)
    text = str(info.value)
    assert text.startswith(f"Linear: nobias must be True or False, got {args[1]}. ")
    assert f"PyTorch's nn.Linear({args[0]}, {args[1]}) is {spelling} here." in text
    assert "DeZero's order, Linear(out_size, nobias, ...)" in text


def test_the_spelling_the_message_names_builds_pytorchs_layer():
    layer = Linear(10, in_size=2)
    assert layer.W.shape == (2, 10) and layer.b.shape == (10,)  # nn.Linear(2, 10): 2 -> 10
    assert layer(np.ones((3, 2), np.float32)).shape == (3, 10)


def test_nobias_is_a_real_bool_in_deZeros_place():
    # DeZero's signature keeps nobias second: a bool there is DeZero's meaning
    assert Linear(2, True).b is None and Linear(2, False).b.shape == (2,)
    assert Linear(2, np.bool_(True)).b is None
    for not_a_bool in (0, 1, np.int64(1)):
        with pytest.raises(TypeError, match=r"nobias must be True or False"):
            Linear(2, not_a_bool)


@pytest.mark.parametrize(
    "kwargs, text",
    [
        (
            {"in_features": 2, "out_features": 10},
            r"^Linear: in_features= is PyTorch's keyword.*in_size=",
        ),
        ({"out_size": 3, "bias": False}, r"^Linear: bias= is PyTorch's keyword.*nobias=True"),
        ({"out_size": 3, "device": "cuda"}, r"^Linear: device= .*layer\.to\('cuda'\)"),
    ],
)
def test_pytorchs_keywords_name_zerograds(kwargs, text):
    with pytest.raises(TypeError, match=text):
        Linear(**kwargs)


def test_other_unknown_keywords_keep_pythons_error():
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'colour'"):
        Linear(3, colour="red")


# -- Conv2d and Deconv2d ------------------------------------------------------------------
def test_conv2d_in_pytorch_order_fails_at_the_first_call_and_stays_unsized():
    layer = Conv2d(1, 16, 3)  # nn.Conv2d(1, 16, 3); read as out=1, kernel=16, stride=3
    with pytest.raises(ValueError) as info:
        layer(MNIST)
    text = str(info.value)
    assert text.startswith(
        "Conv2d(out_channels=1, kernel_size=16, stride=3, pad=0) got an input of 1 channel, "
        "as many as out_channels, with a 16x16 kernel and a 3x3 stride"
    )
    assert "PyTorch's nn.Conv2d(1, 16, 3) (in, out, kernel) is Conv2d(16, 3, in_channels=1)" in text
    assert text.endswith("pass in_channels=1 to say so.")
    assert _unsized(layer) and layer.in_channels is None
    # the spelling it names is PyTorch's layer: 16 channels of 26x26
    assert Conv2d(16, 3, in_channels=1)(MNIST).shape == (2, 16, 26, 26)


def test_giving_in_channels_says_the_order_is_dezeros():
    assert Conv2d(1, 16, 3, in_channels=1)(MNIST).shape == (2, 1, 5, 5)


@pytest.mark.parametrize(
    "args, spelling",
    [
        ((3, 64, 3), "nn.Conv2d(3, 64, 3) (in, out, kernel) is Conv2d(64, 3, in_channels=3)"),
        ((3, 8, 5, 1), "nn.Conv2d(3, 8, 5, 1) (in, out, kernel, stride) is Conv2d(8, 5, 1, in"),
    ],
)
def test_pytorch_order_on_rgb_input(args, spelling):
    with pytest.raises(ValueError, match=r"the mark of arguments in PyTorch's order") as info:
        Conv2d(*args)(np.zeros((1, 3, 32, 32), np.float32))
    assert spelling in str(info.value)


def test_a_kernel_larger_than_the_input_points_at_pytorchs_order():
    layer = Conv2d(3, 64, 3)  # nn.Conv2d(3, 64, 3), given a grayscale 32x32 batch
    with pytest.raises(ValueError) as info:
        layer(np.zeros((1, 1, 32, 32), np.float32))
    text = str(info.value)
    assert text.startswith(
        "Conv2d(out_channels=3, kernel_size=64, stride=3, pad=0): its 64x64 kernel does not "
        "fit the input's 32x32 (padded by 0x0); use a smaller kernel or more padding. If these "
        "are PyTorch's arguments, nn.Conv2d(3, 64, 3) (in, out, kernel) is "
        "Conv2d(64, 3, in_channels=3) here"
    )
    assert _unsized(layer)


def test_conv_nobias_given_an_int_is_pytorchs_padding():
    with pytest.raises(TypeError) as info:
        Conv2d(1, 16, 3, 1, 1)  # nn.Conv2d(1, 16, 3, 1, 1): stride 1, padding 1
    assert "PyTorch's nn.Conv2d(1, 16, 3, 1, 1) is Conv2d(16, 3, 1, 1, in_channels=1) here" in str(
        info.value
    )
    assert Conv2d(16, 3, 1, 1, in_channels=1)(MNIST).shape == (2, 16, 28, 28)
    with pytest.raises(
        TypeError, match=r"nn.ConvTranspose2d\(8, 4, 4, 2, 1\) is Deconv2d\(4, 4, 2"
    ):
        Deconv2d(8, 4, 4, 2, 1)


@pytest.mark.parametrize(
    "kwargs, text",
    [
        ({"padding": 1}, r"^Conv2d: padding= is PyTorch's keyword.*pad="),
        ({"bias": False}, r"^Conv2d: bias= .*nobias=True"),
        ({"groups": 2}, r"^Conv2d: groups= .*no groups"),
    ],
)
def test_conv_refuses_pytorchs_keywords(kwargs, text):
    with pytest.raises(TypeError, match=text):
        Conv2d(8, 3, **kwargs)


@pytest.mark.parametrize(
    "make, x, shape",
    [
        # DeZero's own calls: VGG16, ResNet's first layer and bottlenecks, SqueezeNet
        (lambda: Conv2d(8, kernel_size=3, stride=1, pad=1), (1, 8, 6, 6), (1, 8, 6, 6)),
        (lambda: Conv2d(8, 3, 1, 1), (1, 8, 6, 6), (1, 8, 6, 6)),
        (lambda: Conv2d(64, 7, 2, 3), (1, 3, 16, 16), (1, 64, 8, 8)),
        (lambda: Conv2d(8, 1, 2, 0, nobias=True), (1, 8, 6, 6), (1, 8, 3, 3)),
        (lambda: Conv2d(8, 3, 2, 1), (1, 8, 6, 6), (1, 8, 3, 3)),
        (lambda: Conv2d(4, 3), (1, 1, 5, 5), (1, 4, 3, 3)),
        # DeZero's GAN: transposed convolutions, kernel 4, stride 2
        (lambda: Deconv2d(8, kernel_size=4, stride=2, pad=1), (1, 8, 3, 3), (1, 8, 6, 6)),
        (lambda: Deconv2d(2, 5), (1, 1, 2, 2), (1, 2, 6, 6)),  # a kernel over the input
    ],
)
def test_dezeros_calls_pass_the_checks(make, x, shape):
    assert make()(np.ones(x, np.float32)).shape == shape


def test_deconv2d_in_pytorch_order_fails_at_the_first_call():
    layer = Deconv2d(16, 8, 4)  # nn.ConvTranspose2d(16, 8, 4): read as out=16, kernel=8
    with pytest.raises(ValueError) as info:
        layer(np.zeros((1, 16, 7, 7), np.float32))
    assert "PyTorch's nn.ConvTranspose2d(16, 8, 4) (in, out, kernel) is Deconv2d(8, 4, " in str(
        info.value
    )
    assert _unsized(layer)
    assert Deconv2d(8, 4, in_channels=16)(np.zeros((1, 16, 7, 7), np.float32)).shape == (
        1, 8, 10, 10,
    )  # fmt: skip


# -- RNN and LSTM -------------------------------------------------------------------------
@pytest.mark.parametrize("cell", [RNN, LSTM])
def test_recurrent_cells_in_pytorch_order_name_the_spelling(cell):
    layer = cell(10, 20)  # nn.RNN(10, 20): 10 input features, hidden size 20
    with pytest.raises(ValueError) as info:
        layer(np.zeros((2, 10), np.float32))
    name = cell.__name__
    assert str(info.value) == (
        f"{name}(hidden_size=10, in_size=20) got an input of 10 features. {name} reads its "
        f"arguments in DeZero's order (hidden_size, in_size); PyTorch's nn.{name}(10, 20) "
        f"(input_size, hidden_size) is {name}(20, in_size=10) here."
    )
    assert layer.h is None  # nothing kept from the refused step
    assert cell(20, in_size=10)(np.zeros((2, 10), np.float32)).shape == (2, 20)


def test_a_wrong_feature_size_after_the_first_step_is_named():
    rnn = RNN(4)
    rnn(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"^RNN\(hidden_size=4, in_size=3\) got an input of 5 "):
        rnn(np.zeros((2, 5), np.float32))


@pytest.mark.parametrize("cell", [RNN, LSTM])
def test_a_whole_sequence_is_refused_naming_the_step_loop(cell):
    layer = cell(4)
    with pytest.raises(ValueError, match=r"x must be one time step, \(N, in_size\), got shape"):
        layer(np.zeros((5, 2, 3), np.float32))
    assert layer.h is None


@pytest.mark.parametrize(
    "kwargs, text",
    [
        ({"input_size": 3}, r"^RNN: input_size= is PyTorch's keyword.*in_size="),
        ({"num_layers": 2}, r"^RNN: num_layers= .*stack cells"),
        ({"batch_first": True}, r"^RNN: batch_first= .*one time step"),
    ],
)
def test_recurrent_cells_refuse_pytorchs_keywords(kwargs, text):
    with pytest.raises(TypeError, match=text):
        RNN(4, **kwargs)


# -- EmbedID: the same order as nn.Embedding ----------------------------------------------
def test_embed_id_takes_nn_embeddings_order():
    layer = EmbedID(10, 3)  # nn.Embedding(num_embeddings=10, embedding_dim=3)
    assert layer.W.shape == (10, 3)
    ids = np.array([[1, 4], [9, 0]])
    np.testing.assert_array_equal(layer(ids).data, layer.W.data[ids])
    with pytest.raises(TypeError, match=r"^EmbedID: num_embeddings= .*in_size, the first"):
        EmbedID(num_embeddings=10, embedding_dim=3)
