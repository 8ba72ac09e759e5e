"""numpy-style indexing and ``scatter_add`` for array-api-strict arrays.

The Array API allows less indexing than numpy: an integer index array must come with
integer indices on every other axis, and arrays cannot be written through an integer
index at all. zerograd needs numpy's rules (``x[idx]`` with repeated rows, and its
adjoint, a scatter that adds up repeated indices), so both are built here from Array API
operations:

- the *index* is bookkeeping: it is resolved once into flat row positions (with numpy,
  on the index only, never on the data);
- the *data* only moves through Array API functions: ``take`` to gather, and for
  ``scatter_add`` a one-hot matrix product that sums the values of each repeated
  position, then ``take`` to lay those sums out over the array.

Every function returns a new array; nothing is written into its inputs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import namespace as xp

_BASIC = (int, slice, type(None), type(Ellipsis))
_CHUNK = 1 << 22  # one-hot elements built at a time by scatter_add


def _items(index: Any) -> tuple:
    return index if isinstance(index, tuple) else (index,)


def _to_numpy_index(item: Any) -> Any:
    if isinstance(item, xp.ndarray):
        return xp.to_numpy(item)
    if isinstance(item, (list, np.ndarray)):
        return np.asarray(item)
    return item


def _is_int_array(item: Any) -> bool:
    return isinstance(item, np.ndarray) and item.dtype.kind in "iu"


def _rows(shape: tuple[int, ...], index: Any) -> tuple[np.ndarray, int]:
    """Resolve ``index`` into flat positions over the leading ``lead`` axes of ``shape``.

    Returns ``(positions, lead)``: ``positions`` has the shape numpy's ``x[index]`` gives
    over those axes; the trailing axes ``shape[lead:]`` are taken whole.
    """
    items = tuple(_to_numpy_index(i) for i in _items(index))
    simple = all(isinstance(i, (int, slice)) or _is_int_array(i) for i in items)
    if simple and len(items) <= len(shape):
        while items and isinstance(items[-1], slice) and items[-1] == slice(None):
            items = items[:-1]
        lead = len(items)
    else:  # None, Ellipsis or boolean masks: resolve over every axis
        lead = len(shape)
    ids = np.arange(math.prod(shape[:lead]), dtype=np.int64).reshape(shape[:lead])
    try:
        return ids[items], lead
    except IndexError as exc:
        raise IndexError(f"index {index!r} on shape {shape}: {exc}") from None


def _clamp(s: slice, n: int) -> slice:
    """``s`` with numpy's clipping of out-of-range bounds done (the Array API refuses them)."""
    start, stop, step = s.indices(n)
    return slice(start, None if step < 0 and stop < 0 else stop, step)


def _basic(items: tuple, shape: tuple[int, ...]) -> tuple:
    """A basic index (ints, slices, None, ``...``) in the form the Array API accepts."""
    if Ellipsis not in items:
        items = items + (Ellipsis,)  # numpy's implicit trailing ``...``
    cut = items.index(Ellipsis)
    head, tail = items[:cut], items[cut + 1 :]
    used = sum(i is not None for i in head + tail)
    if used > len(shape):
        raise IndexError(f"too many indices ({used}) for an array of shape {shape}")
    out = []
    for part, axis in ((head, 0), (tail, len(shape) - sum(i is not None for i in tail))):
        for i in part:
            out.append(_clamp(i, shape[axis]) if isinstance(i, slice) else i)
            axis += i is not None
        if part is head:
            out.append(Ellipsis)
    return tuple(out)


def getitem(x: Any, index: Any) -> Any:
    """``x[index]`` with numpy's rules (integer and boolean arrays, repeats, any axes)."""
    items = _items(index)
    if all(isinstance(i, _BASIC) for i in items):
        return x[_basic(items, tuple(x.shape))]
    pos, lead = _rows(tuple(x.shape), index)
    trailing = tuple(x.shape[lead:])
    rows = xp.reshape(x, (-1,) + trailing) if lead else xp.reshape(x, (1,) + trailing)
    picked = xp.take(rows, xp.asarray(pos.reshape(-1)), axis=0)
    return xp.reshape(picked, pos.shape + trailing)


def scatter_add(a: Any, index: Any, values: Any) -> Any:
    """A new array: ``a`` with ``values`` added at ``a[index]``; repeated positions add up.

    Equal to ``b = a.copy(); numpy.add.at(b, index, values)``.
    """
    if a.dtype == xp.bool:
        raise TypeError("scatter_add: boolean arrays cannot be added to; cast them first")
    pos, lead = _rows(tuple(a.shape), index)
    trailing = tuple(a.shape[lead:])
    n_rows, block = math.prod(a.shape[:lead]), math.prod(trailing)
    if not isinstance(values, xp.ndarray):
        values = xp.asarray(values, dtype=a.dtype)
    elif values.dtype != a.dtype:
        values = xp.astype(values, a.dtype)
    values = xp.reshape(xp.broadcast_to(values, pos.shape + trailing), (pos.size, block))

    # which distinct row each value goes to (bookkeeping on the index, not the data)
    flat = pos.reshape(-1)
    targets, group = np.unique(flat, return_inverse=True)
    k = targets.size
    if k == 0:
        return a + xp.zeros_like(a)
    # sums[j] = sum of the values whose row is targets[j]: one-hot(group)^T @ values
    sums = None
    step = max(1, _CHUNK // k)
    columns = xp.reshape(xp.arange(k), (1, k))
    for start in range(0, flat.size, step):
        g = xp.reshape(xp.asarray(group[start : start + step]), (-1, 1))
        hot = xp.astype(g == columns, a.dtype)
        part = xp.matmul(xp.transpose(hot), values[start : min(start + step, flat.size), ...])
        sums = part if sums is None else sums + part
    # lay the sums out over every row of ``a`` (rows not hit take the appended zero row)
    slot = np.full(n_rows, k, dtype=np.int64)
    slot[targets] = np.arange(k)
    padded = xp.concatenate([sums, xp.zeros((1, block), dtype=a.dtype)], axis=0)
    delta = xp.take(padded, xp.asarray(slot), axis=0)
    return a + xp.reshape(delta, tuple(a.shape))
