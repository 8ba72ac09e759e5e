"""DeZero's ``dezero.layers``: ``import zerograd_nn.dezero.layers as L``.

The classes of :mod:`zerograd_nn.layers`; ``pair`` is :func:`zerograd.checks.pair`.
"""

from typing import Any

from zerograd import Parameter
from zerograd.checks import pair
from zerograd_nn.layers import (
    LSTM,
    RNN,
    BatchNorm,
    Conv2d,
    Deconv2d,
    EmbedID,
    Layer,
    Linear,
)

from .missing import missing_attribute

__all__ = [
    "BatchNorm",
    "Conv2d",
    "Deconv2d",
    "EmbedID",
    "LSTM",
    "Layer",
    "Linear",
    "Parameter",
    "RNN",
    "pair",
]


def __getattr__(name: str) -> Any:
    raise missing_attribute(__name__, name)
