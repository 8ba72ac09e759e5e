"""Optimizers (DeZero's ``dezero.optimizers``), gradient hooks and parameter groups.

An optimizer is set up on a model (anything with ``params()``), a list of Parameters, or
parameter groups with their own hyperparameters, and on each ``update()`` changes every
parameter that has a gradient, all at once or (when anything is wrong) not at all. Every
optimizer has a settable ``lr`` (Adam's ``alpha`` is the same value), a ``state_dict()``
and pickles. Per-parameter state lives on the parameter's backend and follows the
parameter when it moves. Updates write into ``param.data`` in place where the array type
allows it, and keep its dtype; on numpy and CuPy the parameters are packed into flat
buffers first (``param.data`` becomes a view at the first update; see :mod:`.flat`).

>>> import numpy as np
>>> from zerograd import Parameter
>>> class Tiny:
...     def __init__(self):
...         self.w = Parameter(np.array([1.0, 2.0], dtype=np.float32))
...     def params(self):
...         yield self.w
>>> model = Tiny()
>>> opt = SGD(lr=0.5).setup(model)
>>> model.w.grad = Parameter(np.array([1.0, 1.0], dtype=np.float32))
>>> opt.update()
>>> model.w.data
array([0.5, 1.5], dtype=float32)
"""

from .algorithms import SGD, AdaDelta, AdaGrad, Adam, AdamW, MomentumSGD
from .base import Optimizer
from .groups import weight_decay_groups
from .hooks import ClipGrad, FreezeParam, WeightDecay
from .hyper import hyperparameter

__all__ = [
    "AdaDelta",
    "AdaGrad",
    "Adam",
    "AdamW",
    "ClipGrad",
    "FreezeParam",
    "MomentumSGD",
    "Optimizer",
    "SGD",
    "WeightDecay",
    "hyperparameter",
    "weight_decay_groups",
]
