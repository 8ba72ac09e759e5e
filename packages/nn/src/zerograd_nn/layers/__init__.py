"""Layers: ``Layer`` (a container of parameters and sub-layers) and DeZero's standard layers.

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

from .base import Layer
from .conv import Conv2d, Deconv2d
from .embed import EmbedID
from .linear import Linear
from .normalization import BatchNorm
from .recurrent import LSTM, RNN

__all__ = ["BatchNorm", "Conv2d", "Deconv2d", "EmbedID", "LSTM", "Layer", "Linear", "RNN"]
