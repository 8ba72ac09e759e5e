""":class:`NumpyLikeBackend`: what the backends of numpy-compatible libraries share.

numpy and CuPy index alike, keep numpy's dtypes, update with ufuncs that take ``out=`` and
add at repeated indices with ``add.at``. A backend for such a library names the library
(:attr:`NumpyLikeBackend.lib`) and keeps only what differs: where its arrays live, its
random numbers, and a faster :meth:`~NumpyLikeBackend.add_at` where it has one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ..shapes import basic_index
from . import standard as _std
from .base import Backend


class NumpyLikeBackend(Backend):
    """A :class:`Backend` for an array library whose arrays behave as numpy's.

    Required of a subclass besides :class:`Backend`'s: :attr:`lib`, the library's module
    (``numpy``, ``cupy``), whose ``asarray``, ``broadcast_to`` and ufuncs (``add``, ...)
    take numpy's arguments, and whose arrays have numpy's ``copy``, ``astype``,
    ``__getitem__`` and ``dtype.kind``.

    Examples:
        >>> import numpy as np
        >>> from zerograd.backends import get_backend
        >>> isinstance(get_backend("numpy"), NumpyLikeBackend)
        True
    """

    lib: Any = None
    """The array library's own module (numpy's API, not only the standard's)."""

    _ufuncs: dict[str, Any] | None = None

    def from_numpy(self, a: Any) -> Any:
        """``lib.asarray(a)``: no copy where the library shares host memory."""
        return self.lib.asarray(a)

    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        """``lib.asarray(obj, dtype=dtype)``: ``obj`` itself when it already fits."""
        return self.lib.asarray(obj, dtype=dtype)

    def astype(self, x: Any, dtype: Any) -> Any:
        """``x.astype(dtype)``: a new array, even when the dtype is unchanged."""
        return x.astype(dtype)

    def resolve_dtype(self, dtype: Any) -> Any:
        """``numpy.dtype(dtype)``: these libraries' dtypes are numpy's."""
        return importlib.import_module("numpy").dtype(dtype)

    def dtype_kind(self, dtype: Any) -> str:
        """``dtype.kind``."""
        return dtype.kind

    def getitem(self, x: Any, index: Any) -> Any:
        """``x[index]``: the library indexes as numpy does."""
        return x[index]

    def broadcast_to(self, x: Any, shape: tuple[int, ...]) -> Any:
        """``lib.broadcast_to(x, shape)``: a read-only view."""
        return self.lib.broadcast_to(x, shape)

    def scatter_add(self, a: Any, indices: Any, values: Any) -> Any:
        """Return a copy of ``a`` with ``values`` added at ``indices``; repeats add up.

        A basic index (ints, slices) picks each element once, so it adds in one step; any
        other index goes to :meth:`add_at`.

        Args:
            a: An array of this backend (left unchanged).
            indices: Any index numpy accepts.
            values: The values, broadcastable to ``a[indices]``.

        Returns:
            The new array.
        """
        out = a.copy()
        if basic_index(indices):
            out[indices] += self.scatter_operand(values, out)
        else:
            self.add_at(out, indices, values)
        return out

    def scatter_operand(self, values: Any, out: Any) -> Any:
        """Return ``values`` as :meth:`scatter_add` adds them into ``out`` (a hook for subclasses).

        Args:
            values: The values handed to :meth:`scatter_add`.
            out: The array they are added into.

        Returns:
            ``values`` itself by default (numpy converts what it adds).
        """
        return values

    def add_at(self, out: Any, indices: Any, values: Any) -> None:
        """Add ``values`` into ``out`` at ``indices`` in place, repeated indices adding up.

        Default: ``lib.add.at``.

        Args:
            out: A writable array of this backend.
            indices: An index that may pick an element more than once.
            values: The values, broadcastable to ``out[indices]``.
        """
        self.lib.add.at(out, indices, values)

    def flatten_into(self, arrays: list, out: Any = None) -> Any:
        """``lib.concatenate`` of the raveled arrays into ``out``: one copy, no temporary.

        Args:
            arrays: Arrays of this backend and one dtype, of any shapes.
            out: A writable 1-d array of their total size, or None for a new one.

        Returns:
            ``out``, or the new array.
        """
        return self.lib.concatenate([a.ravel() for a in arrays], out=out)

    def compute_into(self, op: str, x1: Any, x2: Any = None, *, out: Any) -> None:
        """``lib.<op>(x1, x2, out=out)``: the ufunc writes, no temporary array."""
        ufuncs = self._ufuncs
        if ufuncs is None:
            ufuncs = self._ufuncs = {}
        ufunc = ufuncs.get(op)
        if ufunc is None:  # asked once per op: the optimizers call this per parameter
            ufunc = ufuncs[op] = getattr(self.lib, op)  # contract.IN_PLACE_OPS are ufunc names
        if x2 is None:
            ufunc(x1, out=out)
        else:
            ufunc(x1, x2, out=out)

    def into_function(self, op: str) -> Callable[..., Any]:
        if type(self).compute_into is not NumpyLikeBackend.compute_into:
            return super().into_function(op)  # a subclass writes its own way: keep to it
        _std.check_in_place_op(op)
        return getattr(self.lib, op)  # a ufunc given out= returns out
