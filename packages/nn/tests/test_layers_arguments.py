"""Layer constructors check their sizes and settings; forwards check their inputs' shapes."""

import numpy as np
import pytest

from zerograd import Variable
from zerograd_nn.layers import LSTM, RNN, BatchNorm, Conv2d, Deconv2d, EmbedID, Linear


@pytest.mark.parametrize(
    "make, text",
    [
        (lambda: Linear(-1), r"Linear: out_size must be a positive int \(>= 1\), got -1"),
        (lambda: Linear(0), r"Linear: out_size must be a positive int \(>= 1\), got 0"),
        (lambda: Linear(3, in_size=-2), r"Linear: in_size must be a positive int \(>= 1\), got -2"),
        (lambda: LSTM(0), r"LSTM: hidden_size must be a positive int \(>= 1\), got 0"),
        (lambda: RNN(-3), r"RNN: hidden_size must be a positive int \(>= 1\), got -3"),
        (lambda: EmbedID(0, 2), r"EmbedID: in_size must be a positive int \(>= 1\), got 0"),
        (lambda: Conv2d(0, 3), r"Conv2d: out_channels must be a positive int \(>= 1\), got 0"),
        (lambda: Conv2d(2, 0), r"Conv2d: kernel_size \(0, 0\) and stride \(1, 1\) must be >= 1"),
        (lambda: Conv2d(2, 3, stride=0), r"Conv2d: kernel_size \(3, 3\) and stride \(0, 0\) must"),
        (lambda: Conv2d(2, 3, pad=-1), r"Conv2d: .* and pad \(-1, -1\) >= 0"),
        (lambda: Deconv2d(2, (3, -1)), r"Deconv2d: kernel_size \(3, -1\)"),
    ],
)
def test_out_of_range_sizes_are_refused_naming_the_layer(make, text):
    with pytest.raises(ValueError, match=text):
        make()


@pytest.mark.parametrize(
    "make, text",
    [
        (lambda: Linear(3.5), r"Linear: out_size must be a positive int, got 3\.5 \(float\)"),
        (lambda: Linear(True), r"Linear: out_size must be a positive int, got True \(bool\)"),
        (lambda: LSTM("4"), r"LSTM: hidden_size must be a positive int, got '4' \(str\)"),
        (lambda: EmbedID(4, None), r"EmbedID: out_size must be a positive int, got None"),
    ],
)
def test_non_integer_sizes_are_refused_naming_the_layer(make, text):
    with pytest.raises(TypeError, match=text):
        make()


def test_linear_layer_accepts_lists_as_f_linear_does():
    np.random.seed(0)
    layer = Linear(3)
    y = layer([[1.0, 2.0]])
    expected = np.array([[1.0, 2.0]]) @ layer.W.data + layer.b.data
    np.testing.assert_allclose(y.data, expected, rtol=1e-6)
    assert layer.in_size == 2
    sized = Linear(np.int64(3), in_size=np.int32(2))  # numpy integers pass the size checks
    assert sized.W.shape == (2, 3)


@pytest.mark.parametrize(
    "layer, x, text",
    [
        (
            lambda: Linear(3),
            np.array(1.0),
            r"^Linear: x must be \(N, in_size\) .*got shape \(\)\.$",
        ),
        (lambda: RNN(3), np.array(1.0), r"^RNN: x must be \(N, in_size\), got shape \(\)\.$"),
        (lambda: LSTM(3), np.array(2.0), r"^LSTM: x must be \(N, in_size\), got shape \(\)"),
        (lambda: BatchNorm(), np.ones(4), r"^BatchNorm: x must be \(N, C\) .*got shape \(4,\)\.$"),
        (lambda: Conv2d(2, 3), np.ones(5), r"^Conv2d: x must be 4-D \(N, C, H, W\), got shape"),
        (lambda: Deconv2d(2, 3), np.array(1.0), r"^Deconv2d: x must be 4-D"),
    ],
)
def test_inputs_with_too_few_axes_are_refused_and_the_layer_stays_unsized(layer, x, text):
    layer = layer()
    before = [(name, p.data) for name, p in layer.named_params().items()]
    with pytest.raises(ValueError, match=text):
        layer(x)
    assert [(name, p.data) for name, p in layer.named_params().items()] == before


def test_lazy_layers_still_size_after_a_refused_input():
    np.random.seed(0)
    layer = Linear(3)
    with pytest.raises(ValueError):
        layer(np.array(1.0))
    assert layer.in_size is None and layer.W.data is None
    assert layer(np.ones((2, 5))).shape == (2, 3)
    assert layer.W.shape == (5, 3)


def test_a_string_input_is_a_type_error_naming_the_layer():
    with pytest.raises(TypeError, match=r"Linear: x must be a numeric array, a Variable or a list"):
        Linear(3)("abc")
    with pytest.raises(TypeError, match=r"Linear: x is a Variable whose data is None"):
        Linear(3)(Variable(None))


@pytest.mark.parametrize(
    "make, text",
    [
        (lambda: Linear(3, dtype="foo"), r"^Linear: dtype must be a floating-point dtype .*'foo'"),
        (lambda: Linear(3, in_size=2, dtype="int32"), r"^Linear: dtype must be .* got 'int32'"),
        (lambda: Conv2d(2, 3, dtype=np.int64), r"^Conv2d: dtype must be a floating-point dtype"),
        (lambda: Linear(3, nobias="yes"), r"^Linear: nobias must be True or False, got 'yes'"),
        (lambda: Deconv2d(2, 3, nobias=None), r"^Deconv2d: nobias must be True or False"),
    ],
)
def test_dtype_and_nobias_are_checked(make, text):
    with pytest.raises(TypeError, match=text):
        make()
    assert Linear(3, in_size=2, dtype=np.float64).W.dtype == np.float64


@pytest.mark.parametrize(
    "layer, x, text",
    [
        (Linear, np.ones((2, 0)), r"^Linear: in_size \(the last axis of x\) must be a positive"),
        (lambda: Conv2d(2, 3), np.ones((1, 0, 5, 5)), r"^Conv2d: in_channels \(axis 1 of x\)"),
    ],
)
def test_inputs_with_no_features_are_refused_and_leave_the_layer_unsized(layer, x, text):
    layer = layer(3) if layer is Linear else layer()
    with pytest.raises(ValueError, match=text):
        layer(x)
    assert layer.W.data is None
