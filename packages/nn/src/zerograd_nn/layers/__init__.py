"""Layers: ``Layer`` (a container of parameters and sub-layers) and DeZero's standard layers.

Beyond DeZero's, ``Dropout`` (a setting kept for a ``Sequential``). Activations are
functions (``F.relu``), which ``Sequential`` takes as they are; ``L.ReLU`` and PyTorch's
other layer names that have no layer here raise an AttributeError naming what to write.

A Layer records every :class:`~zerograd.Parameter` and sub-Layer assigned to it as an
attribute, in definition order; :meth:`Layer.params` walks them, and the hierarchical
names (``'l1/W'``) are what weight files store.

>>> import numpy as np
>>> layer = Linear(3)
>>> layer(np.ones((2, 4), dtype=np.float32)).shape
(2, 3)
>>> [p.name for p in layer.params()]
['W', 'b']
"""

from typing import Any

from ..functional.pytorch_names import missing_attribute
from .base import Layer
from .conv import Conv2d, Deconv2d
from .dropout import Dropout
from .embed import EmbedID
from .linear import Linear
from .normalization import BatchNorm
from .pytorch_names import MISSING_LAYERS
from .recurrent import LSTM, RNN

__all__ = [
    "BatchNorm",
    "Conv2d",
    "Deconv2d",
    "Dropout",
    "EmbedID",
    "LSTM",
    "Layer",
    "Linear",
    "RNN",
]


def __getattr__(name: str) -> Any:
    """PyTorch's layer names that zerograd spells otherwise: one error naming the spelling."""
    raise missing_attribute(__name__, name, MISSING_LAYERS, "nn")
