"""Mini-batch iterators (DeZero's ``dezero.dataloaders``).

Batches are stacked with the default backend's array module; ``gpu=True`` (or
``to_gpu()``) moves each batch to the GPU backend. Shuffling draws from the default
backend's global random state, so ``numpy.random.seed`` makes it repeatable (as in DeZero).

>>> from zerograd_nn.datasets import Spiral
>>> loader = DataLoader(Spiral(), batch_size=100, shuffle=False)
>>> [x.shape for x, t in loader]
[(100, 2), (100, 2), (100, 2)]
"""

from __future__ import annotations

import math
from typing import Any

from zerograd.backends import as_array_of, get_backend, gpu_backend

from .datasets.base import Dataset, _identity

__all__ = ["DataLoader", "SeqDataLoader"]


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size``, yielding ``(x, t)`` arrays.

    One pass over the loader is one epoch; the order is reshuffled for the next. The last
    batch is smaller when the size does not divide evenly, unless ``drop_last``. ``t`` is
    ``None`` for an unlabelled dataset.
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int,
        shuffle: bool = True,
        gpu: bool = False,
        drop_last: bool = False,
    ) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be a positive int, got {batch_size!r}")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.data_size = len(dataset)
        rounding = math.floor if drop_last else math.ceil
        self.max_iter = rounding(self.data_size / batch_size)
        self.gpu = False
        if gpu:
            self.to_gpu()
        self.reset()

    def reset(self) -> None:
        """Start a new epoch (a fresh permutation when shuffling)."""
        self.iteration = 0
        xp = get_backend().xp
        n = self.data_size
        self.index = xp.random.permutation(n) if self.shuffle else xp.arange(n)

    def __iter__(self) -> DataLoader:
        return self

    def __len__(self) -> int:
        """Batches per epoch."""
        return self.max_iter

    def _batch_indices(self) -> Any:
        i, b = self.iteration, self.batch_size
        return self.index[i * b : (i + 1) * b]

    def __next__(self) -> tuple[Any, Any]:
        if self.iteration >= self.max_iter:
            self.reset()
            raise StopIteration
        x, t = self._gather(self._batch_indices())
        self.iteration += 1
        return x, t

    def next(self) -> tuple[Any, Any]:
        """The next batch (DeZero's spelling of ``next(loader)``)."""
        return self.__next__()

    def _gather(self, indices: Any) -> tuple[Any, Any]:
        ds = self.dataset
        xp = get_backend().xp
        if (
            type(ds).__getitem__ is Dataset.__getitem__
            and ds.transform is _identity
            and ds.target_transform is _identity
            and hasattr(ds.data, "shape")
            and (ds.label is None or hasattr(ds.label, "shape"))
        ):  # fast path: index the arrays at once
            x = ds.data[indices]
            t = None if ds.label is None else ds.label[indices]
        else:
            batch = [ds[int(i)] for i in indices]
            x = xp.stack([xp.asarray(ex[0]) for ex in batch])
            labels = [ex[1] for ex in batch]
            t = (
                None
                if all(v is None for v in labels)
                else xp.stack([xp.asarray(v) for v in labels])
            )
        if self.gpu:
            backend = gpu_backend()
            x = as_array_of(x, backend)
            t = None if t is None else as_array_of(t, backend)
        return x, t

    def to_cpu(self) -> None:
        """Produce batches on the CPU (the default backend) from now on."""
        self.gpu = False

    def to_gpu(self) -> None:
        """Produce batches on the GPU backend; clear error (state unchanged) when none is usable."""
        gpu_backend()
        self.gpu = True


class SeqDataLoader(DataLoader):
    """Batches for truncated BPTT: ``batch_size`` cursors spread evenly through the sequence.

    Row ``i`` of batch ``k`` is item ``(i * (len // batch_size) + k) % len``, so consecutive
    batches continue each row's subsequence (DeZero's ``SeqDataLoader``).
    """

    def __init__(self, dataset: Any, batch_size: int, gpu: bool = False) -> None:
        super().__init__(dataset=dataset, batch_size=batch_size, shuffle=False, gpu=gpu)

    def _batch_indices(self) -> Any:
        xp = get_backend().xp
        jump = self.data_size // self.batch_size
        return (xp.arange(self.batch_size) * jump + self.iteration) % self.data_size
