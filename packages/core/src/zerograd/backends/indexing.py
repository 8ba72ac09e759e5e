"""numpy's indexing rules from array API standard calls: the default ``Backend.getitem``.

The standard accepts fewer index forms than numpy: every axis must be indexed unless an
``...`` says otherwise, slice bounds must be in range, and integer arrays must index every
axis. zerograd's ``get_item`` follows numpy (repeated rows, masks, an array after a
slice), so the default resolves such an index into flat positions over the leading axes
(with numpy, on the *index* only, moved once through ``to_numpy``/``from_numpy``) and
gathers the data with ``xp.take``: the data never leaves its device.
"""

from __future__ import annotations

import math
from typing import Any

_BASIC = (int, slice, type(None), type(Ellipsis))


def _clamp(s: slice, n: int) -> slice:
    """``s`` with out-of-range bounds clipped as numpy does (the standard refuses them)."""
    picked = range(*s.indices(n))
    if not picked:
        # slice.indices gives -1 for a negative step's start before the axis, which a
        # slice would read as the last element: an empty selection is spelled 0:0
        return slice(0, 0, 1)
    stop = picked.stop
    return slice(picked.start, None if stop < 0 else stop, picked.step)


def _basic(items: tuple, shape: tuple[int, ...]) -> tuple:
    """A basic index in the standard's form: an explicit ``...`` and clipped slices."""
    if Ellipsis not in items:
        items = items + (Ellipsis,)
    cut = items.index(Ellipsis)
    head, tail = items[:cut], items[cut + 1 :]
    used = sum(i is not None for i in head + tail)
    if used > len(shape):
        raise IndexError(f"too many indices ({used}) for an array of shape {shape}")
    out: list = []
    # by position, not `part is head`: x[...] and x[()] have both parts (), one object
    for first, part, axis in (
        (True, head, 0),
        (False, tail, len(shape) - sum(i is not None for i in tail)),
    ):
        for i in part:
            out.append(_clamp(i, shape[axis]) if isinstance(i, slice) else i)
            axis += i is not None
        if first:
            out.append(Ellipsis)
    return tuple(out)


def positions(backend: Any, shape: tuple[int, ...], index: Any) -> tuple[Any, int]:
    """Resolve numpy's ``x[index]`` into flat positions over the leading axes of ``shape``.

    Args:
        backend: The backend of the indexed array.
        shape: The indexed array's shape.
        index: The index, in the standard's form.

    Returns:
        ``(pos, lead)``: a numpy array of flat positions over ``shape[:lead]``; the axes
        ``shape[lead:]`` are taken whole.
    """
    import numpy as np

    def host(i: Any) -> Any:
        if backend.owns(type(i)):
            return backend.to_numpy(i)
        if not isinstance(i, list):
            return i
        array = np.asarray(i)
        # numpy reads an empty list ([], [[]]) as integer positions; asarray makes it float
        return array.astype(np.intp) if array.size == 0 else array

    items = tuple(host(i) for i in (index if isinstance(index, tuple) else (index,)))
    ints = all(
        isinstance(i, (int, slice)) or (isinstance(i, np.ndarray) and i.dtype.kind in "iu")
        for i in items
    )
    # integer arrays and slices: resolve only the axes they touch; else (None, ..., masks)
    # every axis
    lead = len(items) if ints and len(items) <= len(shape) else len(shape)
    while ints and lead and isinstance(items[lead - 1], slice) and items[lead - 1] == slice(None):
        lead -= 1
    ids = np.arange(math.prod(shape[:lead]), dtype=np.int64).reshape(shape[:lead])
    try:
        return ids[items[:lead] if ints else items], lead
    except IndexError as e:
        raise IndexError(f"index {index!r} on shape {shape}: {e}") from None


def getitem(backend: Any, x: Any, index: Any) -> Any:
    """Return ``x[index]`` with numpy's rules, through ``xp.take`` for integer and boolean arrays.

    Args:
        backend: The backend of ``x``.
        x: The array.
        index: An int, slice, None, Ellipsis, integer or boolean array, or a tuple of them.

    Returns:
        The selected array.
    """
    items = index if isinstance(index, tuple) else (index,)
    if all(isinstance(i, _BASIC) for i in items):
        return x[_basic(items, tuple(x.shape))]
    return gather(backend, x, index)


def gather(backend: Any, x: Any, index: Any) -> Any:
    """Return ``x[index]`` with numpy's rules, always through ``xp.take``.

    For backends that index natively only part of what the standard asks (PyTorch refuses
    slices with a negative step): every index form works here.

    Args:
        backend: The backend of ``x``.
        x: The array.
        index: As :func:`getitem` takes.

    Returns:
        The selected array.
    """
    shape = tuple(x.shape)
    xp = backend.xp
    pos, lead = positions(backend, shape, index)
    rest = shape[lead:]
    rows = xp.reshape(x, (math.prod(shape[:lead]),) + rest)
    picked = xp.take(rows, backend.from_numpy(pos.reshape(-1)), axis=0)
    return xp.reshape(picked, pos.shape + rest)
