"""Batching rules of :mod:`zerograd.functions.shape`: reshape, transpose and indexing."""

from __future__ import annotations

import operator
from typing import Any

from ...backends import device_of, get_array_module
from ...functions.shape import GetItem, GetItemGrad, Reshape, Transpose
from .registry import Batch, batching_rule


@batching_rule(Reshape)
def reshape(fn: Any, batch: Batch) -> Any:
    """Each sample reshaped to ``fn.shape``: the batch axis leads the new shape."""
    return Reshape((batch.n, *fn.shape))(batch.xs[0])


@batching_rule(Transpose)
def transpose(fn: Any, batch: Batch) -> Any:
    """Each sample's axes permuted; the batch axis stays first."""
    ndim = batch.ndim(0)
    if fn.axes is None:
        axes = tuple(range(ndim))[::-1]
    else:
        try:
            axes = tuple(operator.index(a) for a in fn.axes)
        except TypeError:
            raise TypeError(
                f"transpose: axes must be None or a sequence of ints, got {fn.axes!r}"
            ) from None
        if sorted(a % ndim if -ndim <= a < ndim else a for a in axes) != list(range(ndim)):
            raise ValueError(
                f"transpose: axes {axes} are not a permutation of the {ndim} axes of the input"
            )
        axes = tuple(a % ndim for a in axes)
    return Transpose((0, *(a + 1 for a in axes)))(batch.xs[0])


def _parts(slices: Any) -> tuple:
    return slices if isinstance(slices, tuple) else (slices,)


def _is_array(s: Any) -> bool:
    return isinstance(s, (list, bool)) or getattr(s, "ndim", 0) > 0


def _adjacent(parts: tuple) -> bool:
    """Whether numpy keeps the advanced indices' axes in place (they stand next to each other).

    Integers count as advanced next to an array (numpy's integer scalars and 0-d arrays
    too); where the advanced indices are apart, numpy moves their axes to the front, which
    would put them before the batch axis.
    """
    if not any(_is_array(s) for s in parts):
        return True
    where = [
        i
        for i, s in enumerate(parts)
        if s is not None and s is not Ellipsis and type(s) is not slice
    ]
    return where == list(range(where[0], where[0] + len(where)))


def _batched_index(batch: Batch, parts: tuple) -> tuple[int, Any] | None:
    """``(position, batch array)`` of the one index batched by this vmap, if there is one."""
    found = None
    for i, s in enumerate(parts):
        a = batch.batch_array(s)
        if a is not None:
            if found is not None:
                return (-1, None)
            found = (i, a)
    return found


def _rows(batch: Batch, index: Any) -> Any:
    """An index array picking sample ``b``'s own row for every element of ``index``."""
    xp = get_array_module(index)
    return xp.reshape(
        xp.arange(batch.n, device=device_of(index)), (batch.n, *(1,) * (index.ndim - 1))
    )


@batching_rule(GetItem, reads=("slices",))
def get_item(fn: Any, batch: Batch) -> Any:
    """Each sample indexed by ``fn.slices``: a full slice first, for the batch axis.

    An index array batched by the vmap (``x[ids]`` with ``ids`` per sample) is handled when
    it is the only index; advanced indices apart from each other run sample by sample.
    """
    parts = _parts(fn.slices)
    found = _batched_index(batch, parts)
    if found is not None:
        pos, ids = found
        if pos != 0 or len(parts) != 1:
            return NotImplemented
        if not batch.batched[0]:
            return GetItem((ids,))(batch.xs[0])
        return GetItem((_rows(batch, ids), ids))(batch.xs[0])
    if not batch.batched[0] or not _adjacent(parts):
        return NotImplemented
    return GetItem((slice(None), *parts))(batch.xs[0])


@batching_rule(GetItemGrad, reads=("slices",))
def get_item_grad(fn: Any, batch: Batch) -> Any:
    """Each sample's gradient scattered into zeros of ``fn.in_shape`` (GetItem's rule, reversed)."""
    parts = _parts(fn.slices)
    shape = (batch.n, *fn.in_shape)
    found = _batched_index(batch, parts)
    if found is not None:
        pos, ids = found
        if pos != 0 or len(parts) != 1 or not batch.batched[0]:
            return NotImplemented
        return GetItemGrad((_rows(batch, ids), ids), shape)(batch.xs[0])
    if not _adjacent(parts):
        return NotImplemented
    return GetItemGrad((slice(None), *parts), shape)(batch.expanded(0))
