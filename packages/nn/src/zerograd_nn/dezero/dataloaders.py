"""DeZero's ``dezero.dataloaders``: ``DataLoader`` and ``SeqDataLoader`` of zerograd_nn."""

from typing import Any

from zerograd_nn.dataloaders import DataLoader, SeqDataLoader

from .missing import missing_attribute

__all__ = ["DataLoader", "SeqDataLoader"]


def __getattr__(name: str) -> Any:
    raise missing_attribute(__name__, name)
