"""DeZero's ``dezero.optimizers``: the optimizers and hooks of :mod:`zerograd_nn.optimizers`."""

from typing import Any

from zerograd import Parameter
from zerograd_nn.optimizers import (
    SGD,
    AdaDelta,
    AdaGrad,
    Adam,
    ClipGrad,
    FreezeParam,
    MomentumSGD,
    Optimizer,
    WeightDecay,
)

from .missing import missing_attribute

__all__ = [
    "AdaDelta",
    "AdaGrad",
    "Adam",
    "ClipGrad",
    "FreezeParam",
    "MomentumSGD",
    "Optimizer",
    "Parameter",
    "SGD",
    "WeightDecay",
]


def __getattr__(name: str) -> Any:
    raise missing_attribute(__name__, name)
