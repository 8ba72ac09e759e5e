"""DeZero's ``dezero.datasets``: the data sets of :mod:`zerograd_nn.datasets`.

The files of ``MNIST``, ``CIFAR10``, ``CIFAR100`` and ``Shakespear`` are read from
zerograd's data-set folder and downloaded only with ``download=True`` (docs: Data sets).
``get_file`` and ``cache_dir`` are those of ``zerograd_nn.dezero.utils``.
"""

from typing import Any

from zerograd_nn.datasets import (
    CIFAR10,
    CIFAR100,
    MNIST,
    Dataset,
    Shakespear,
    SinCurve,
    Spiral,
    get_file,
    get_spiral,
)
from zerograd_nn.transforms import Compose, Flatten, Normalize, ToFloat

from . import utils
from .missing import missing_attribute

__all__ = [
    "CIFAR10",
    "CIFAR100",
    "Compose",
    "Dataset",
    "Flatten",
    "MNIST",
    "Normalize",
    "Shakespear",
    "SinCurve",
    "Spiral",
    "ToFloat",
    "get_file",
    "get_spiral",
]


def __getattr__(name: str) -> Any:
    if name == "cache_dir":
        return utils.cache_dir
    raise missing_attribute(__name__, name)
