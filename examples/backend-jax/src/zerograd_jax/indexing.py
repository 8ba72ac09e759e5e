"""numpy's bounds check for JAX indexing.

JAX clamps an out-of-range integer index to the last element (and ``.at[].add`` drops it)
instead of raising, so a wrong label or index would give a silently wrong result. zerograd
relies on numpy's ``IndexError``; :func:`check_bounds` raises it before JAX sees the index.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _is_mask(item: Any) -> bool:
    return getattr(getattr(item, "dtype", None), "kind", "") == "b"


def lists_as_arrays(index: Any) -> Any:
    """``index`` with each list in it (bare or an item of a tuple) made a numpy array.

    numpy reads a list as an integer or boolean array index; JAX refuses a bare one.

    >>> lists_as_arrays([0, 2])
    array([0, 2])
    """
    if isinstance(index, list):
        return np.asarray(index)
    if isinstance(index, tuple) and any(isinstance(i, list) for i in index):
        return tuple(np.asarray(i) if isinstance(i, list) else i for i in index)
    return index


def check_bounds(shape: tuple[int, ...], index: Any) -> None:
    """Raise ``IndexError`` if an integer in ``index`` is out of range for ``shape``.

    Args:
        shape: the shape of the array being indexed.
        index: a numpy-style index (ints, slices, ``None``, ``...``, integer or bool arrays).

    Raises:
        IndexError: an integer index or an element of an integer array is not in
            ``[-n, n)`` for the size ``n`` of the axis it indexes.

    >>> check_bounds((3, 2), (slice(None), 2))
    Traceback (most recent call last):
    IndexError: index 2 is out of bounds for axis 1 with size 2
    """
    items = index if isinstance(index, tuple) else (index,)
    consumed = sum(
        item.ndim if _is_mask(item) else 1
        for item in items
        if item is not None and item is not Ellipsis and not isinstance(item, bool)
    )
    axis = 0
    for item in items:
        if item is None or isinstance(item, (bool, slice)):
            axis += isinstance(item, slice)
            continue
        if item is Ellipsis:
            axis += len(shape) - consumed
            continue
        if _is_mask(item):
            axis += item.ndim
            continue
        if axis < len(shape):  # too many indices: JAX's own error says so
            ints, n = np.asarray(item), shape[axis]
            if ints.dtype.kind in "iu" and ints.size:
                bad = ints[(ints < -n) | (ints >= n)]
                if bad.size:
                    raise IndexError(
                        f"index {int(bad[0])} is out of bounds for axis {axis} with size {n}"
                    )
        axis += 1
