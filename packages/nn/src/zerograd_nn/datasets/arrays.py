"""``TensorDataset``: a Dataset over arrays already in memory (PyTorch's name)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zerograd import Variable
from zerograd.backends import get_backend

from .base import Dataset


class TensorDataset(Dataset):
    """Examples ``(data[i], label[i])`` from arrays in memory, as PyTorch's ``TensorDataset``.

    zerograd's datasets give ``(x, t)`` pairs, so it takes one array (unlabelled: ``t`` is
    None) or two, not PyTorch's any number (put more columns in ``data``). The arrays are
    kept as they are, not copied (a Variable gives its data, a list becomes an array of the
    default backend); a DataLoader then takes whole batches from them at once.

    Args:
        data: the examples, first axis the example index.
        label: the labels, one per example, or None.
        transform: applied to each ``x`` (None: unchanged).
        target_transform: applied to each ``t`` (None: unchanged).

    Raises:
        TypeError: ``data`` or ``label`` has no first axis (a number, a 0-d array).
        ValueError: ``data`` and ``label`` hold different numbers of examples.

    Examples:
        >>> import numpy as np
        >>> ds = TensorDataset(np.arange(6.0).reshape(3, 2), np.array([0, 1, 0]))
        >>> len(ds), ds[1]
        (3, (array([2., 3.]), np.int64(1)))
    """

    def __init__(
        self,
        data: Any,
        label: Any = None,
        *,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
    ) -> None:
        data = _array("data", data)
        if label is not None:
            label = _array("label", label)
            if label.shape[0] != data.shape[0]:
                raise ValueError(
                    f"TensorDataset: data holds {data.shape[0]} examples but label "
                    f"{label.shape[0]}; "
                    f"give one label per example (the first axes must agree)."
                )
        self._arrays = (data, label)
        super().__init__(True, transform, target_transform)

    def prepare(self) -> None:
        self.data, self.label = self._arrays

    def __len__(self) -> int:
        return self.data.shape[0]  # arrays of the array API standard have no len()


def _array(name: str, v: Any) -> Any:
    """``v`` as an array with a first axis: a Variable's data, a list converted."""
    if isinstance(v, Variable):
        v = v.data
    elif isinstance(v, (list, tuple)):
        v = get_backend().xp.asarray(v)
    if len(getattr(v, "shape", ())) == 0:
        raise TypeError(
            f"TensorDataset: {name} must be an array whose first axis holds the examples, got "
            f"{type(v).__name__} {v!r}"
        )
    return v


__all__ = ["TensorDataset"]
