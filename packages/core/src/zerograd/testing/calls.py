"""Counting numpy calls: how many array operations a training step makes.

On a GPU each array operation is a kernel launch, and at small and medium sizes a step
costs what its launches cost; on the CPU each is a numpy call with its own overhead. A
step that makes more calls than it did is a regression even where no GPU can show it, so
tests pin the counts (``tests/test_call_counts.py`` of zerograd-nn) and the benchmarks
report them.

:class:`CallCounter` hands out :class:`CountedArray` views (an ``ndarray`` subclass the
numpy backend takes like any ndarray); every numpy operation with one of them among its
operands makes a counted result, so a model whose parameters and inputs are counted is
counted through forward, backward and the optimizer's update.

What counts as one call: a ufunc call of any method (``np.add``, ``a + b``,
``np.add.reduce``, ``a.sum()``), a numpy function (``np.concatenate``, ``np.dot``) but not
the operations it makes inside, and the array methods that copy or write (``astype``,
``copy``, ``fill``, item assignment, advanced indexing). Not counted: what makes views or
reads metadata (``reshape``, ``transpose``, ``broadcast_to``, basic slicing).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

#: numpy functions that make views or read metadata: no kernel, no copy
NOT_COUNTED = frozenset(
    {
        "reshape",
        "transpose",
        "matrix_transpose",
        "permute_dims",
        "swapaxes",
        "moveaxis",
        "expand_dims",
        "squeeze",
        "broadcast_to",
        "broadcast_arrays",
        "atleast_1d",
        "atleast_2d",
        "atleast_3d",
        "shape",
        "ndim",
        "size",
        "result_type",
        "can_cast",
        "may_share_memory",
        "shares_memory",
        "iscomplexobj",
        "isrealobj",
    }
)

_active: list[CallCounter] = []  # the counters now counting (innermost last)
_depth = [0]  # > 0 inside a counted call: the calls it makes inside are its own


def _plain(x: Any) -> Any:
    return x.view(np.ndarray) if isinstance(x, CountedArray) else x


def _counted(x: Any) -> Any:
    if type(x) is np.ndarray:
        return x.view(CountedArray)
    if isinstance(x, np.generic):  # a reduction's scalar: a 0-d array that stays counted
        return np.asarray(x).view(CountedArray)
    return x


def _note(name: str) -> bool:
    """Count ``name`` unless inside a counted call; True when it was counted (depth taken)."""
    if not _active or _depth[0]:
        return False
    _active[-1].calls[name] += 1
    _depth[0] += 1
    return True


class CountedArray(np.ndarray):
    """An ndarray whose numpy operations are counted by the active :class:`CallCounter`."""

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        noted = _note(name)
        try:
            out = kwargs.get("out")
            if out is not None:
                kwargs["out"] = tuple(_plain(o) for o in out)
            result = getattr(ufunc, method)(*[_plain(x) for x in inputs], **kwargs)
        finally:
            if noted:
                _depth[0] -= 1
        if out is not None:  # the outputs given, as they were given
            return out[0] if len(out) == 1 else out
        if isinstance(result, tuple):
            return tuple(_counted(r) for r in result)
        return _counted(result)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        noted = func.__name__ not in NOT_COUNTED and _note(func.__name__)
        try:
            result = super().__array_function__(func, types, args, kwargs)
        finally:
            if noted:
                _depth[0] -= 1
        if isinstance(result, (tuple, list)):
            return type(result)(_counted(r) for r in result)
        return _counted(result)

    def _method(self, name: str, f: Any, *args: Any, **kwargs: Any) -> Any:
        noted = _note(name)
        try:
            return _counted(f(self.view(np.ndarray), *[_plain(a) for a in args], **kwargs))
        finally:
            if noted:
                _depth[0] -= 1

    def astype(self, *args: Any, **kwargs: Any) -> Any:
        """``ndarray.astype``, counted."""
        return self._method("astype", np.ndarray.astype, *args, **kwargs)

    def copy(self, *args: Any, **kwargs: Any) -> Any:
        """``ndarray.copy``, counted."""
        return self._method("copy", np.ndarray.copy, *args, **kwargs)

    def fill(self, value: Any) -> None:
        """``ndarray.fill``, counted."""
        self._method("fill", np.ndarray.fill, value)

    def __setitem__(self, index: Any, value: Any) -> None:
        self._method("setitem", np.ndarray.__setitem__, index, value)

    def __getitem__(self, index: Any) -> Any:
        if _advanced(index):  # a gather: a copy (a kernel on a GPU)
            return self._method("getitem", np.ndarray.__getitem__, index)
        return super().__getitem__(index)


def _advanced(index: Any) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, (np.ndarray, list)) for i in parts)


class CallCounter:
    """Counts numpy calls on :class:`CountedArray` arrays while it is entered.

    >>> import numpy as np
    >>> counter = CallCounter()
    >>> x = counter.array(np.ones(3))
    >>> with counter:
    ...     y = (x * 2.0 + 1.0).sum()
    >>> counter.count, dict(counter.calls)
    (3, {'multiply': 1, 'add': 1, 'add.reduce': 1})
    """

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    @property
    def count(self) -> int:
        """How many calls were counted since the counter was last entered."""
        return sum(self.calls.values())

    @staticmethod
    def array(a: Any) -> CountedArray:
        """A counted view of the numpy array ``a`` (same memory)."""
        return np.asarray(a).view(CountedArray)

    def track(self, target: Any) -> Any:
        """Give every parameter of ``target`` (a model or Parameters) a counted view.

        Args:
            target: a Layer/Model (anything with ``params()``) or an iterable of Parameters.

        Returns:
            ``target``.
        """
        params = target.params() if hasattr(target, "params") else target
        for p in params:
            if p.data is not None:
                p.data = self.array(p.data)
        return target

    def __enter__(self) -> CallCounter:
        self.calls = Counter()
        _active.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _active.remove(self)
