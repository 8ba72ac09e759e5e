"""zerograd-nn: neural-network functions, layers, models, optimizers and data for zerograd.

The DeZero counterparts: ``dezero.functions`` -> :mod:`zerograd_nn.functional`,
``dezero.layers`` -> :mod:`zerograd_nn.layers`, ``dezero.models`` -> :mod:`zerograd_nn.models`,
``dezero.optimizers`` -> :mod:`zerograd_nn.optimizers`, ``dezero.datasets`` ->
:mod:`zerograd_nn.datasets`, ``dezero.dataloaders`` -> :mod:`zerograd_nn.dataloaders`,
``dezero.transforms`` -> :mod:`zerograd_nn.transforms`. Weight files (``Layer.save_weights``
/ ``load_weights``) are described in :mod:`zerograd_nn.weights`.

>>> import numpy as np
>>> import zerograd_nn.functional as F
>>> from zerograd_nn.models import MLP
>>> model = MLP((10, 3))
>>> F.softmax_cross_entropy(model(np.ones((2, 4), np.float32)), np.array([0, 2])).shape
()
"""

from importlib.metadata import version as _distribution_version

from . import (
    batching,
    checkpoint,
    dataloaders,
    datasets,
    finite,
    functional,
    layers,
    models,
    optimizers,
    schedulers,
    state_dict,
    transforms,
    weights,
)
from .checkpoint import load_checkpoint, save_checkpoint
from .dataloaders import DataLoader, SeqDataLoader
from .layers import Layer
from .models import Model

__version__ = _distribution_version("zerograd-nn")  # the repository's VERSION file

__all__ = [
    "DataLoader",
    "Layer",
    "Model",
    "SeqDataLoader",
    "batching",
    "checkpoint",
    "dataloaders",
    "datasets",
    "finite",
    "functional",
    "layers",
    "load_checkpoint",
    "models",
    "optimizers",
    "save_checkpoint",
    "schedulers",
    "state_dict",
    "transforms",
    "weights",
]
