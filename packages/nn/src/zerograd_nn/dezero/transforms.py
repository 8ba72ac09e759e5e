"""DeZero's ``dezero.transforms``: the transforms of :mod:`zerograd_nn.transforms`."""

from typing import Any

from zerograd_nn.transforms import (
    AsType,
    CenterCrop,
    Compose,
    Convert,
    Flatten,
    Normalize,
    RandomHorizontalFlip,
    Resize,
    ToArray,
    ToFloat,
    ToInt,
    ToPIL,
    pair,
)

from .missing import missing_attribute

__all__ = [
    "AsType",
    "CenterCrop",
    "Compose",
    "Convert",
    "Flatten",
    "Normalize",
    "RandomHorizontalFlip",
    "Resize",
    "ToArray",
    "ToFloat",
    "ToInt",
    "ToPIL",
    "pair",
]


def __getattr__(name: str) -> Any:
    raise missing_attribute(__name__, name)
