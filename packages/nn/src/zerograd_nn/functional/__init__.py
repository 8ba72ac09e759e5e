"""Neural-network functions: DeZero's ``dezero.functions`` (and ``functions_conv``).

``import zerograd_nn.functional as F`` gives every tensor function of
:mod:`zerograd.functions` plus activations, losses, convolutions, pooling,
normalization and dropout. Every op runs on the input's backend and keeps its dtype.

>>> import numpy as np
>>> import zerograd_nn.functional as F
>>> F.softmax(np.array([[0.0, 0.0]])).data
array([[0.5, 0.5]])
"""

from zerograd.checks import pair
from zerograd.functions import *  # noqa: F403
from zerograd.functions import __all__ as _core_all

from .activation import (
    LeakyReLU,
    LogSoftmax,
    ReLU,
    Sigmoid,
    Softmax,
    leaky_relu,
    log_softmax,
    relu,
    sigmoid,
    sigmoid_simple,
    softmax,
    softmax_simple,
)
from .arrays import logsumexp
from .conv import (
    Col2im,
    Conv2d,
    Conv2DGradW,
    Deconv2d,
    Im2col,
    col2im,
    conv2d,
    conv2d_simple,
    deconv2d,
    im2col,
)
from .geometry import col2im_array, get_conv_outsize, get_deconv_outsize, im2col_array
from .linear import Linear, embed_id, linear, linear_simple
from .loss import (
    MeanSquaredError,
    SoftmaxCrossEntropy,
    accuracy,
    binary_cross_entropy,
    cross_entropy,
    mean_squared_error,
    mean_squared_error_simple,
    mse_loss,
    sigmoid_cross_entropy,
    softmax_cross_entropy,
    softmax_cross_entropy_simple,
)
from .normalization import batch_norm, batch_nrom, dropout
from .pooling import (
    AveragePooling,
    Pooling,
    Pooling2DGrad,
    Pooling2DWithIndexes,
    average_pooling,
    pooling,
    pooling_simple,
)

__all__ = list(_core_all) + [
    "AveragePooling",
    "Col2im",
    "Conv2DGradW",
    "Conv2d",
    "Deconv2d",
    "Im2col",
    "LeakyReLU",
    "Linear",
    "LogSoftmax",
    "MeanSquaredError",
    "Pooling",
    "Pooling2DGrad",
    "Pooling2DWithIndexes",
    "ReLU",
    "Sigmoid",
    "Softmax",
    "SoftmaxCrossEntropy",
    "accuracy",
    "average_pooling",
    "batch_norm",
    "batch_nrom",
    "binary_cross_entropy",
    "col2im",
    "col2im_array",
    "conv2d",
    "conv2d_simple",
    "cross_entropy",
    "deconv2d",
    "dropout",
    "embed_id",
    "get_conv_outsize",
    "get_deconv_outsize",
    "im2col",
    "im2col_array",
    "leaky_relu",
    "linear",
    "linear_simple",
    "log_softmax",
    "logsumexp",
    "mean_squared_error",
    "mean_squared_error_simple",
    "mse_loss",
    "pair",
    "pooling",
    "pooling_simple",
    "relu",
    "sigmoid",
    "sigmoid_cross_entropy",
    "sigmoid_simple",
    "softmax",
    "softmax_cross_entropy",
    "softmax_cross_entropy_simple",
    "softmax_simple",
]
