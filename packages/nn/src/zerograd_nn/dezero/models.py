"""DeZero's ``dezero.models``: the classes of :mod:`zerograd_nn.models`.

``VGG16(pretrained=True)`` is refused, as with :mod:`zerograd_nn.models`: zerograd never
downloads weights on its own; pass the path of the file
(``VGG16(pretrained=zerograd_nn.dezero.utils.get_file(VGG16.WEIGHTS_PATH))`` fetches it).
"""

from typing import Any

from zerograd_nn.layers import Layer
from zerograd_nn.models import (
    MLP,
    VGG16,
    BottleneckA,
    BottleneckB,
    BuildingBlock,
    Model,
    ResNet,
    ResNet50,
    ResNet101,
    ResNet152,
    Sequential,
    SqueezeNet,
)

from .missing import missing_attribute

__all__ = [
    "BottleneckA",
    "BottleneckB",
    "BuildingBlock",
    "Layer",
    "MLP",
    "Model",
    "ResNet",
    "ResNet101",
    "ResNet152",
    "ResNet50",
    "Sequential",
    "SqueezeNet",
    "VGG16",
]


def __getattr__(name: str) -> Any:
    raise missing_attribute(__name__, name)
