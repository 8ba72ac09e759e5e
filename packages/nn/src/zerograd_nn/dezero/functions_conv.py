"""DeZero's ``dezero.functions_conv``: convolution, pooling, im2col and col2im.

The same objects as :mod:`zerograd_nn.functional`'s (``zerograd_nn.dezero.functions``
holds the functions too, as DeZero's does); ``pair`` is :func:`zerograd.checks.pair`.
"""

from typing import Any

from zerograd import Function, as_variable
from zerograd_nn.functional import (
    AveragePooling,
    Col2im,
    Conv2d,
    Conv2DGradW,
    Deconv2d,
    Im2col,
    Pooling,
    Pooling2DGrad,
    Pooling2DWithIndexes,
    average_pooling,
    broadcast_to,
    col2im,
    col2im_array,
    conv2d,
    conv2d_simple,
    deconv2d,
    get_conv_outsize,
    get_deconv_outsize,
    im2col,
    im2col_array,
    linear,
    pair,
    pooling,
    pooling_simple,
)

from .missing import missing_attribute

__all__ = [
    "AveragePooling",
    "Col2im",
    "Conv2DGradW",
    "Conv2d",
    "Deconv2d",
    "Function",
    "Im2col",
    "Pooling",
    "Pooling2DGrad",
    "Pooling2DWithIndexes",
    "as_variable",
    "average_pooling",
    "broadcast_to",
    "col2im",
    "col2im_array",
    "conv2d",
    "conv2d_simple",
    "deconv2d",
    "get_conv_outsize",
    "get_deconv_outsize",
    "im2col",
    "im2col_array",
    "linear",
    "pair",
    "pooling",
    "pooling_simple",
]


def __getattr__(name: str) -> Any:
    raise missing_attribute(__name__, name)
