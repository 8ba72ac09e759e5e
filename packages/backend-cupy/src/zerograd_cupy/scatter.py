"""A scatter-add along the first axis whose sums come out the same on every run.

``cupy.add.at`` adds with atomics: where an index repeats (a character seen twice in an
embedding's batch), the order of its additions, and so the rounding of the float sum,
changes from run to run, and a seeded GPU run does not repeat itself. Here the indices are
sorted (stably) and one thread per (index, column) adds that index's values in their
order in the batch, starting from the row's value: the very additions, in the very order,
of ``numpy.add.at``, so the result is numpy's bit for bit. CuPy is imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from .compiled import elementwise

_BODY = """
    const ptrdiff_t row = i / d;
    const ptrdiff_t r = sid[row];
    if (row == 0 || sid[row - 1] != r) {  // the first of this index's run adds the whole run
        const ptrdiff_t col = i - row * d;
        T acc = out[r * d + col];
        for (ptrdiff_t j = row; j < m && sid[j] == r; ++j) acc += v[order[j] * d + col];
        out[r * d + col] = acc;
    }
"""


_KERNEL = (
    "raw int64 sid, raw int64 order, raw T v, int64 d, int64 m",
    "raw T out",
    _BODY,
    "zerograd_scatter_add_rows",
)


def scatter_add_rows_gpu(out: Any, ids: Any, values: Any) -> None:
    """Add ``values`` at rows ``ids`` of ``out``, in place, as ``numpy.add.at(out, ids, values)``.

    Args:
        out: a C-contiguous floating-point CuPy array with at least one axis (written).
        ids: integer row indices (a CuPy array of any shape); negative ones count from the end.
        values: a CuPy array of ``out``'s dtype, broadcastable to ``ids.shape + out.shape[1:]``.

    Raises:
        IndexError: an index outside ``[-len(out), len(out))``; ``out`` is left as it was.
    """
    cp = importlib.import_module("cupy")
    n = out.shape[0]
    ids = cp.asarray(ids, dtype=cp.int64)
    flat = ids.ravel()
    if flat.size and int(cp.count_nonzero((flat < -n) | (flat >= n))):
        raise IndexError(f"scatter_add: an index is out of bounds for axis 0 with size {n}")
    m, d = flat.size, out.size // n if n else 0
    if not (m and d):
        return
    flat = cp.where(flat < 0, flat + n, flat)
    v = cp.ascontiguousarray(cp.broadcast_to(values, ids.shape + out.shape[1:]))
    order = cp.argsort(flat)  # stable: a repeated index keeps its additions in batch order
    elementwise(*_KERNEL)(flat[order], order, v, d, m, out, size=m * d)
