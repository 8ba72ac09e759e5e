"""Mini-batch iterators (DeZero's ``dezero.dataloaders``).

Batches are stacked with the default backend's array module; ``gpu=True`` (or
``to_gpu()``) moves each batch to the GPU backend. Without ``seed=``, shuffling draws from
the default backend's global random state, so ``numpy.random.seed`` makes it repeatable (as
in DeZero); with ``seed=`` the loader shuffles with its own generator and leaves the global
state alone.

Each ``for batch in loader`` loop runs one epoch; a loop left with ``break`` is abandoned,
and the next ``for`` starts a new epoch (as with PyTorch's ``DataLoader``). DeZero's
``next(loader)`` / ``loader.next()`` and ``reset()`` work as in the book.
``state_dict()`` / ``load_state_dict()`` save and restore the position in the epoch, the
epoch's order and the generator, so a resumed run sees the very batches the original would.

>>> from zerograd_nn.datasets import Spiral
>>> loader = DataLoader(Spiral(), batch_size=100, shuffle=False)
>>> [x.shape for x, t in loader]
[(100, 2), (100, 2), (100, 2)]
"""

from __future__ import annotations

import math
import operator
import random
import sys
import threading
from collections.abc import Callable
from typing import Any

from zerograd.backends import as_array_of, as_numpy, get_backend, gpu_backend
from zerograd.checks import flag, int_like, positive_int

from .datasets.base import Dataset
from .transforms import is_pil_image

__all__ = ["DataLoader", "SeqDataLoader"]

_STATE_KEYS = ("epoch", "iteration", "index", "rng_state")


def _count(value: Any) -> int | None:
    """``value`` as an int (numpy integers and 0-d integer arrays too), else None (bools)."""
    return operator.index(value) if int_like(value) else None


def _check_dataset(owner: str, dataset: Any) -> int:
    """The length of ``dataset``; TypeError/ValueError when it cannot feed a loader."""
    if not hasattr(dataset, "__len__") or not hasattr(dataset, "__getitem__"):
        raise TypeError(
            f"{owner}: dataset must be sized and indexable (a Dataset, or a list of (x, t) "
            f"pairs), got {type(dataset).__name__}"
        )
    n = len(dataset)
    if n == 0:
        raise ValueError(f"{owner}: the dataset is empty; there is nothing to iterate over.")
    data, label = getattr(dataset, "data", None), getattr(dataset, "label", None)
    if (
        isinstance(dataset, Dataset)
        and hasattr(data, "__len__")
        and hasattr(label, "__len__")
        and len(data) != len(label)
    ):
        raise ValueError(
            f"{owner}: the dataset has {len(data)} data items but {len(label)} labels; "
            f"give one label per item."
        )
    return n


def _not_a_pair(owner: str, i: int, ex: Any) -> None:
    kind = type(ex).__name__
    got = f"{kind} of length {len(ex)}" if isinstance(ex, (tuple, list)) else kind
    raise TypeError(
        f"{owner}: dataset[{i}] is a {got}, not an (x, t) pair; give pairs, with t None for "
        f"unlabelled data (or use a Dataset)."
    )


def _stack(xp: Any, owner: str, what: str, values: list, indices: Any) -> Any:
    """``values`` (the ``what`` of each item in a batch) stacked into one array.

    A ValueError names the loader and the first two items whose shapes differ when they
    cannot be stacked; a TypeError names the first item that is not numbers (a transform
    returning None gave a batch of None that failed far away, in the model) or is a PIL
    image (a transform without ``ToArray`` at its end).
    """
    k = next((k for k, v in enumerate(values) if is_pil_image(v)), None)
    if k is not None:  # numpy would take its (H, W, C) pixels: channels last, unlike ToArray
        raise TypeError(
            f"{owner}: dataset[{int(indices[k])}] has {what} of type {type(values[k]).__name__}, "
            f"a PIL image; end the transform with transforms.ToArray() to make it an array "
            f"(C, H, W)."
        )
    kind = get_backend().dtype_kind
    try:
        arrays = [xp.asarray(v) for v in values]
        k = next((k for k, a in enumerate(arrays) if kind(a.dtype) not in "biufc"), None)
    except (TypeError, ValueError):  # a backend that takes no object arrays
        arrays, k = [], next(k for k, v in enumerate(values) if not hasattr(v, "shape"))
    if k is not None:
        raise TypeError(
            f"{owner}: dataset[{int(indices[k])}] has {what} of type {type(values[k]).__name__}, "
            f"not a number or an array of numbers; does a transform return nothing (None), or "
            f"something else than an array?"
        )
    try:
        return xp.stack(arrays)
    except ValueError:
        shapes = [tuple(a.shape) for a in arrays]
        k = next((k for k, s in enumerate(shapes) if s != shapes[0]), None)
        if k is None:
            raise
        i, j = int(indices[0]), int(indices[k])
        raise ValueError(
            f"{owner}: cannot stack a batch: dataset[{i}] has {what} of shape {shapes[0]} but "
            f"dataset[{j}] has {what} of shape {shapes[k]}; every item's {what} needs one shape "
            f"(pad or crop them, e.g. with a transform)."
        ) from None


def _draws_undone(fn: Callable[[], Any]) -> Any:
    """``fn()``; if it raises, Python's and numpy's global random states are put back.

    The items of a batch go through the dataset's transforms one by one, and a random one
    (``RandomHorizontalFlip`` draws from ``random``) has drawn for the first items when a
    later item raises: without this, the same batch read again would come out otherwise.
    numpy is only looked at if something imported it already.
    """
    py = random.getstate()
    np = sys.modules.get("numpy")
    npstate = None if np is None else np.random.get_state()
    try:
        return fn()
    except BaseException:
        random.setstate(py)
        if npstate is not None:
            np.random.set_state(npstate)
        raise


def _generator(seed: Any) -> Any:
    """A numpy Generator (PCG64) seeded from ``seed``, or None for the global random state."""
    if seed is None:
        return None
    n = _count(seed)
    if n is None or n < 0:
        raise ValueError(f"DataLoader: seed must be None or a non-negative int, got {seed!r}")
    import numpy as np  # the loader's own generator is numpy's, whatever the backend

    return np.random.Generator(np.random.PCG64(n))


def _rng_to_array(rng: Any) -> Any:
    """The PCG64 state as a flat uint64 array (empty without a generator): npz-friendly."""
    import numpy as np

    if rng is None:
        return np.zeros(0, np.uint64)
    s = rng.bit_generator.state
    mask = (1 << 64) - 1
    words = [s["state"]["state"], s["state"]["inc"]]
    flat = [w >> 64 for w in words] + [w & mask for w in words]
    return np.array(flat + [s["has_uint32"], s["uinteger"]], dtype=np.uint64)


def _rng_from_array(a: Any) -> Any:
    """A PCG64 Generator in the state :func:`_rng_to_array` wrote."""
    import numpy as np

    hi_state, hi_inc, lo_state, lo_inc, has_uint32, uinteger = (int(v) for v in a)
    bits = np.random.PCG64()
    bits.state = {
        "bit_generator": "PCG64",
        "state": {"state": hi_state << 64 | lo_state, "inc": hi_inc << 64 | lo_inc},
        "has_uint32": has_uint32,
        "uinteger": uinteger,
    }
    return np.random.Generator(bits)


_taking = threading.Lock()
"""Held while a loader (any loader: a lock per loader would not pickle) takes its next
batch's place, so that threads calling ``next`` on one loader never get one batch twice."""


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size``, yielding ``(x, t)`` arrays.

    One ``for`` loop over the loader is one epoch; the order is reshuffled for the next,
    and a ``for`` after a ``break`` starts a new epoch too. The last batch is smaller when
    the size does not divide evenly, unless ``drop_last``. ``t`` is ``None`` for an
    unlabelled dataset. Threads calling ``next`` on one loader get each batch once, one of
    them each; a ``for`` loop in each of two threads is not two passes (give each its own
    loader).

    Args:
        dataset: a :class:`~zerograd_nn.datasets.Dataset` or any sized, indexable collection
            of ``(x, t)`` pairs.
        batch_size: examples per batch (a positive int; numpy integers accepted).
        shuffle: draw a new random order each epoch.
        gpu: produce batches on the GPU backend.
        drop_last: leave out the last, smaller batch.
        seed: seed of the loader's own random generator; ``None`` shuffles with the
            default backend's global random state, as DeZero does.

    Attributes:
        epoch: epochs finished (or abandoned with ``break``) so far.
        iteration: batches served in the current epoch.

    Raises:
        TypeError: ``dataset`` is not sized and indexable.
        ValueError: a bad ``batch_size`` or ``seed``, an empty dataset, a dataset whose
            data and labels differ in length, or ``drop_last`` leaving no batch; from
            ``next``, a dataset whose length changed since the loader was made (make a new
            loader: items appended would never be served).

    Examples:
        >>> from zerograd_nn.datasets import Spiral
        >>> a = [t.tolist()[:3] for _, t in DataLoader(Spiral(), 100, seed=0)]
        >>> a == [t.tolist()[:3] for _, t in DataLoader(Spiral(), 100, seed=0)]
        True
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int,
        shuffle: bool = True,
        gpu: bool = False,
        drop_last: bool = False,
        *,
        seed: int | None = None,
    ) -> None:
        owner = type(self).__name__
        for name, value in (("shuffle", shuffle), ("gpu", gpu)):
            flag(owner, name, value)
        self.data_size = _check_dataset(owner, dataset)
        self._rng = _generator(seed)
        self.dataset = dataset
        self.shuffle = shuffle
        self.iteration = 0
        self._batching(batch_size, drop_last)
        self.gpu = False
        if gpu:
            self.to_gpu()
        self.epoch = 0
        self._in_for = False  # a ``for`` loop is consuming the current epoch
        self.reset()  # as DeZero's: a subclass's own reset() makes the first epoch's order too

    @property
    def batch_size(self) -> int:
        """Examples per batch; settable between epochs (``len(loader)`` follows it).

        Raises:
            ValueError: set to a non-positive value, or in the middle of an epoch (its
                position counts batches of the old size: call :meth:`reset` first).
        """
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        self._batching(value, self._drop_last)

    @property
    def drop_last(self) -> bool:
        """Whether the last, smaller batch is left out; settable as ``batch_size`` is."""
        return self._drop_last

    @drop_last.setter
    def drop_last(self, value: bool) -> None:
        self._batching(self._batch_size, value)

    def _batching(self, batch_size: Any, drop_last: Any) -> None:
        """Check and set the batch size and ``drop_last`` together with ``max_iter``.

        All three change at once or not at all; the loader must be at an epoch's start.
        """
        owner = type(self).__name__
        batch_size = positive_int(owner, "batch_size", batch_size)
        flag(owner, "drop_last", drop_last)
        if self.iteration and (batch_size, drop_last) != (self._batch_size, self._drop_last):
            raise ValueError(
                f"{owner}: batch_size and drop_last cannot change in the middle of an epoch "
                f"(batch {self.iteration} of {self.max_iter}): the position counts batches of "
                f"the old size. Finish the epoch, or call reset() first."
            )
        n = (math.floor if drop_last else math.ceil)(self.data_size / batch_size)
        if n == 0:
            raise ValueError(
                f"{owner}: drop_last=True with batch_size {batch_size} larger than the dataset "
                f"({self.data_size} items) leaves no batch at all; use a smaller batch_size."
            )
        self._check_batch_size(batch_size)
        self._batch_size, self._drop_last, self.max_iter = batch_size, bool(drop_last), n

    def _check_batch_size(self, batch_size: int) -> None:
        """Refuse a batch size this kind of loader cannot serve (a subclass's own rule)."""

    def _new_order(self) -> None:
        backend = get_backend()
        n = self.data_size
        if not self.shuffle:
            self.index = backend.xp.arange(n)
        elif self._rng is None:
            self.index = backend.permutation(n)
        else:
            self.index = as_array_of(self._rng.permutation(n), backend)

    def reset(self) -> None:
        """Start a new epoch (a fresh permutation when shuffling), as DeZero's ``reset``."""
        if self.iteration:
            self.epoch += 1
        self.iteration = 0
        self._in_for = False
        self._new_order()

    def __iter__(self) -> DataLoader:
        if self._in_for and self.iteration:
            self.reset()  # the previous ``for`` was left with ``break``: a new epoch
        self._in_for = True
        return self

    def __len__(self) -> int:
        """Batches per epoch."""
        return self.max_iter

    def _batch_indices(self) -> Any:
        i, b = self.iteration, self.batch_size
        return self.index[i * b : (i + 1) * b]

    def __next__(self) -> tuple[Any, Any]:
        with _taking:  # a batch is taken whole: threads sharing a loader get one each
            if self.iteration >= self.max_iter:
                self.reset()
                raise StopIteration
            if not self.iteration:
                self._check_length()
            indices = self._batch_indices()
            self.iteration = taken = self.iteration + 1
        try:  # gathered outside the lock: a slow dataset holds up no other thread
            return self._gather(indices)
        except BaseException as exc:
            with _taking:
                if self.iteration == taken:  # no batch taken since: the position as it was
                    self.iteration = taken - 1
            if isinstance(exc, IndexError):
                self._check_length()  # a dataset that shrank in the epoch, explained
            raise

    def _check_length(self) -> None:
        """Refuse a dataset whose length changed since the loader was made.

        The epoch's order, ``max_iter`` and ``len(loader)`` count the items the loader was
        made for: items appended later would never be served, and items removed fail with
        an IndexError that does not say why.
        """
        n = len(self.dataset)
        if n != self.data_size:
            owner = type(self).__name__
            raise ValueError(
                f"{owner}: the dataset has {n} items now but had {self.data_size} when the "
                f"loader was made; a loader serves the items it was made for (its order and "
                f"len() count them). Make a new {owner} over the changed dataset."
            )

    def next(self) -> tuple[Any, Any]:
        """The next batch (DeZero's spelling of ``next(loader)``).

        Returns:
            ``(x, t)``: the batch's data and labels (``t`` None for unlabelled data).

        Raises:
            StopIteration: at the end of an epoch (the loader then starts the next one).
        """
        return self.__next__()

    def _batches(self, batch_size: int) -> int:
        """Batches per epoch at ``batch_size`` (a short last batch counts unless drop_last)."""
        return (math.floor if self._drop_last else math.ceil)(self.data_size / batch_size)

    def state_dict(self) -> dict[str, Any]:
        """Where the loader is, as ints and numpy arrays.

        The keys are ``epoch``, ``iteration``, the epoch's ``index`` order, the
        generator's ``rng_state`` (empty without ``seed=``) and the ``batch_size`` that
        ``iteration`` counts in.

        Returns:
            A new dict; :meth:`load_state_dict` of an equal loader continues from here.
        """
        return {
            "epoch": self.epoch,
            "iteration": self.iteration,
            "index": as_numpy(self.index).astype("int64"),
            "rng_state": _rng_to_array(self._rng),
            "batch_size": self.batch_size,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (from :meth:`state_dict`).

        The next batch is the one the saved loader would have given. Everything is checked
        first: on error nothing changes. A state saved in the middle of an epoch needs the
        batch size it was saved with (its position counts batches); at an epoch's start or
        end any batch size goes on correctly. States written before ``batch_size`` was
        saved are taken as they are.

        Args:
            state: the dict :meth:`state_dict` returned (or its values read back from a file).

        Raises:
            ValueError: a key is missing or unknown, or a value does not fit this loader.
        """
        self.prepare_load_state_dict(state)()

    def prepare_load_state_dict(self, state: dict[str, Any]) -> Callable[[], None]:
        """Check ``state`` as :meth:`load_state_dict` does, changing nothing; return its commit.

        Calling the returned function makes the loader continue from ``state`` and cannot
        fail. A checkpoint load prepares every object first, so that one refusal leaves all
        of them as they were (on every rank of a data-parallel run).

        Args:
            state: the dict :meth:`state_dict` returned.

        Returns:
            A function of no arguments that restores the loader's position.

        Raises:
            ValueError: as :meth:`load_state_dict`.
        """
        import numpy as np

        owner = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state, dict) or any(k not in state for k in _STATE_KEYS):
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"{owner}: expected a dict with keys {list(_STATE_KEYS)}, got {got}")
        unknown = sorted(set(state) - {*_STATE_KEYS, "batch_size"})
        if unknown:
            raise ValueError(
                f"{owner}: unknown keys {unknown}; is this the state of another kind of object? "
                f"Pass what DataLoader.state_dict() returned."
            )
        counts = {k: _count(state[k]) for k in ("epoch", "iteration", "batch_size") if k in state}
        if None in counts.values() or counts.get("batch_size", 1) < 1:
            got = ", ".join(f"{k}={state[k]!r}" for k in counts)
            raise ValueError(
                f"{owner}: epoch, iteration and batch_size must be ints (batch_size >= 1), got "
                f"{got}"
            )
        epoch, iteration = counts["epoch"], counts["iteration"]
        saved_size = counts.get("batch_size", self.batch_size)
        if saved_size != self.batch_size:
            n_saved = self._batches(saved_size)
            if iteration == 0 or iteration == n_saved:  # an epoch's start or end
                iteration = 0 if iteration == 0 else self.max_iter
            else:
                raise ValueError(
                    f"{owner}: the state was saved in the middle of an epoch (batch "
                    f"{iteration}) by a loader with batch_size {saved_size}; this one has "
                    f"batch_size {self.batch_size}, so it cannot go on from the same example. "
                    f"Create the loader with batch_size={saved_size} to resume, or resume "
                    f"from a snapshot taken at the end of an epoch."
                )
        if epoch < 0 or not 0 <= iteration <= self.max_iter:
            raise ValueError(
                f"{owner}: epoch {epoch} / iteration {iteration} do not fit this loader "
                f"({self.max_iter} batches per epoch)"
            )
        index = np.asarray(state["index"])
        n = self.data_size
        if index.dtype.kind not in "iu":
            raise ValueError(
                f"{owner}: index must hold integers (positions in the dataset), got dtype "
                f"{index.dtype}"
            )
        if index.shape != (n,) or not np.array_equal(np.sort(index), np.arange(n)):
            raise ValueError(
                f"{owner}: index must be an order of all {n} items of the dataset, got shape "
                f"{index.shape}; was the state saved from a loader over another dataset?"
            )
        rng_state = np.asarray(state["rng_state"])
        if rng_state.shape not in ((0,), (6,)) or rng_state.dtype != np.uint64:
            raise ValueError(
                f"{owner}: rng_state must hold 0 or 6 words of dtype uint64, got shape "
                f"{rng_state.shape} of {rng_state.dtype}"
            )
        if rng_state.size == 0 and self._rng is not None:
            raise ValueError(
                f"{owner}: the state comes from a loader without seed=, this one has a seed; "
                f"create the loader as it was saved."
            )
        rng = _rng_from_array(rng_state) if rng_state.size else None
        index = as_array_of(index, get_backend())

        def commit() -> None:
            self.index = index
            self._rng = rng
            self.epoch, self.iteration = epoch, iteration
            self._in_for = False  # the next ``for`` continues this epoch

        return commit

    def _gather(self, indices: Any) -> tuple[Any, Any]:
        ds = self.dataset
        if (
            isinstance(ds, Dataset)
            and ds.as_stored()
            and hasattr(ds.data, "shape")
            and (ds.label is None or hasattr(ds.label, "shape"))
        ):  # fast path: index the arrays at once
            x = ds.data[indices]
            t = None if ds.label is None else ds.label[indices]
        else:  # item by item, through the transforms: a failure undoes their draws
            x, t = _draws_undone(lambda: self._items(ds, indices))
        if self.gpu:
            backend = gpu_backend()
            x = as_array_of(x, backend)
            t = None if t is None else as_array_of(t, backend)
        return x, t

    def _items(self, ds: Any, indices: Any) -> tuple[Any, Any]:
        """The batch of ``indices`` read item by item (``ds[i]``) and stacked."""
        xp = get_backend().xp
        batch = [ds[int(i)] for i in indices]
        for i, ex in zip(indices, batch):
            if not isinstance(ex, (tuple, list)) or len(ex) != 2:
                _not_a_pair(type(self).__name__, int(i), ex)
        owner = type(self).__name__
        x = _stack(xp, owner, "x", [ex[0] for ex in batch], indices)
        labels = [ex[1] for ex in batch]
        none = [v is None for v in labels]
        if any(none) and not all(none):
            i, j = int(indices[none.index(True)]), int(indices[none.index(False)])
            raise ValueError(
                f"{owner}: dataset[{i}] has no label (t is None) but dataset[{j}] has one; "
                f"give every item a label, or none (unlabelled data)."
            )
        t = None if none[0] else _stack(xp, owner, "t", labels, indices)
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
    batches continue each row's subsequence (DeZero's ``SeqDataLoader``). It never shuffles.
    Where ``batch_size`` does not divide the length, an epoch's ``ceil(len / batch_size)``
    batches read one item past each row's stretch and never reach the last ones: with 11
    items and ``batch_size=4``, items 2, 4 and 6 come twice and 9 and 10 never. These are
    DeZero's batches, kept so that the book's runs give the book's numbers; pick a
    ``batch_size`` that divides the length to read each item once.

    Args:
        dataset: a sequence dataset (item ``i`` followed by item ``i + 1``).
        batch_size: number of cursors, at most the length of the dataset.
        gpu: produce batches on the GPU backend.

    Raises:
        ValueError: ``batch_size`` is not a positive int or exceeds the dataset's length.

    Examples:
        >>> from zerograd_nn.datasets import SinCurve
        >>> x, t = next(SeqDataLoader(SinCurve(), batch_size=3))
        >>> x.shape
        (3, 1)
    """

    def __init__(self, dataset: Any, batch_size: int, gpu: bool = False) -> None:
        super().__init__(dataset=dataset, batch_size=batch_size, shuffle=False, gpu=gpu)

    def _check_batch_size(self, batch_size: int) -> None:
        if batch_size > self.data_size:
            raise ValueError(
                f"SeqDataLoader: batch_size {batch_size} is larger than the dataset "
                f"({self.data_size} items); each row of a batch needs its own stretch of the "
                f"sequence, so use batch_size <= {self.data_size}."
            )

    def _batch_indices(self) -> Any:
        xp = get_backend().xp
        jump = self.data_size // self.batch_size
        return (xp.arange(self.batch_size) * jump + self.iteration) % self.data_size
