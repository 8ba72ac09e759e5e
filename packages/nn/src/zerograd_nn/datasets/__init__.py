"""Datasets (DeZero's ``dezero.datasets``): generated toy data and loaders of standard files.

Examples:
    >>> from zerograd_nn.datasets import Spiral
    >>> x, t = Spiral()[0]
    >>> x.shape, len(Spiral())
    ((2,), 300)
"""

from .arrays import TensorDataset
from .base import (
    DOWNLOADS,
    Dataset,
    data_home,
    fetch,
    get_file,
    in_the_way,
    unreadable,
    verify_checksum,
)
from .images import CIFAR10, CIFAR100, MNIST, FashionMNIST, read_idx
from .text import Shakespear, TextCharDataset
from .toy import SinCurve, Spiral, get_spiral

__all__ = [
    "CIFAR10",
    "CIFAR100",
    "DOWNLOADS",
    "Dataset",
    "FashionMNIST",
    "MNIST",
    "Shakespear",
    "SinCurve",
    "Spiral",
    "TensorDataset",
    "TextCharDataset",
    "data_home",
    "fetch",
    "get_file",
    "get_spiral",
    "in_the_way",
    "read_idx",
    "unreadable",
    "verify_checksum",
]
