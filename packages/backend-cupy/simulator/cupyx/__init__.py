"""``cupyx`` for the CPU simulator (see the ``cupy`` simulator's docstring)."""

from __future__ import annotations

import warnings

import cupy


def scatter_add(a, slices, value) -> None:
    """Deprecated in CuPy (it warns the same way): ``cupy.add.at(a, slices, value)``."""
    warnings.warn(
        "`ndarray.scatter_add` is deprecated. Please use `cupy.add.at` instead.",
        DeprecationWarning,
        stacklevel=2,
    )
    cupy.add.at(a, slices, value)
