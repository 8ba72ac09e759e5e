"""zerograd-arrayapi-example: a third-party zerograd backend for array-api-strict arrays.

An example of the plugin contract, written from outside the zerograd repository's
packages: it is installed like any other distribution and zerograd finds it through the
``zerograd.backends`` entry point declared in its ``pyproject.toml``::

    [project.entry-points."zerograd.backends"]
    arrayapi = "zerograd_arrayapi"

>>> import zerograd
>>> from zerograd.backends import get_backend
>>> b = get_backend("arrayapi")
>>> x = zerograd.Variable(b.from_numpy(__import__("numpy").array([1.0, 2.0])))
>>> y = (x * x).sum()
>>> y.backward()
>>> b.to_numpy(x.grad.data).tolist()
[2.0, 4.0]
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from zerograd.backends import Backend, hookimpl

__version__ = "0.1.0"
__all__ = ["ArrayApiStrictBackend", "zerograd_backend"]

_KINDS = (
    ("b", "bool"),
    ("i", "signed integer"),
    ("u", "unsigned integer"),
    ("f", "real floating"),
    ("c", "complex floating"),
)


class ArrayApiStrictBackend(Backend):
    """array-api-strict arrays on the CPU, seen through a numpy-named namespace.

    Loading the plugin imports nothing heavy: array-api-strict is imported the first time
    the array module (:attr:`xp`) is needed.
    """

    name = "arrayapi"
    device = "cpu"

    def owns(self, array_type: type) -> bool:
        # decided by the type's module, so nothing is imported to answer
        module = getattr(array_type, "__module__", "") or ""
        return module.split(".")[0] == "array_api_strict" and array_type.__name__ == "Array"

    def load_module(self) -> ModuleType:
        from . import namespace

        return namespace

    def version(self) -> str:
        import array_api_strict

        return array_api_strict.__version__

    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        return self.xp.asarray(obj, dtype=dtype)

    def astype(self, x: Any, dtype: Any) -> Any:
        return self.xp.astype(x, dtype)

    def to_numpy(self, x: Any) -> Any:
        import numpy as np

        return np.array(self.xp.to_numpy(x), copy=True)  # a copy: callers may write to it

    def from_numpy(self, a: Any) -> Any:
        return self.xp.asarray(a, copy=True)

    def scatter_add(self, a: Any, indices: Any, values: Any) -> Any:
        from .indexing import scatter_add

        return scatter_add(a, indices, values)

    def getitem(self, x: Any, index: Any) -> Any:
        """``x[index]`` with numpy's indexing rules (the Array API allows fewer forms)."""
        from .indexing import getitem

        return getitem(x, index)

    def dtype_kind(self, dtype: Any) -> str:
        """numpy's one-letter kind of ``dtype``: ``'b'``, ``'i'``, ``'u'``, ``'f'`` or ``'c'``."""
        for kind, name in _KINDS:
            if self.xp.isdtype(dtype, name):
                return kind
        raise TypeError(f"arrayapi: unknown dtype {dtype!r}")


@hookimpl
def zerograd_backend() -> Backend:
    """The array-api-strict backend."""
    return ArrayApiStrictBackend()
