"""zerograd-arrayapi-example: a third-party zerograd backend for array-api-strict arrays.

The whole of what a plugin needs: the array module is array-api-strict itself (the Python
array API standard, nothing more), and the ``Backend`` methods the standard has no name
for are the conversions to and from numpy and the random numbers. Everything else comes
from ``Backend``'s defaults, written with standard calls. The arrays live on
array-api-strict's ``device1``, which refuses implicit conversion to numpy, so data
reaches the host only through :meth:`to_numpy`. The entry point in ``pyproject.toml`` is
the registration::

    [project.entry-points."zerograd.backends"]
    arrayapi = "zerograd_arrayapi"

>>> import numpy as np, zerograd
>>> from zerograd.backends import get_backend
>>> b = get_backend("arrayapi")
>>> x = zerograd.Variable(b.from_numpy(np.array([1.0, 2.0])))
>>> (x * x).sum().backward()
>>> b.to_numpy(x.grad.data).tolist()
[2.0, 4.0]
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from zerograd.backends import Backend, hookimpl

__version__ = "0.1.0"
__all__ = ["ArrayApiStrictBackend", "zerograd_backend"]


class ArrayApiStrictBackend(Backend):
    """array-api-strict arrays on its ``device1``; array-api-strict is imported on first use."""

    name = "arrayapi"

    def owns(self, array_type: type) -> bool:
        # by the type's module: nothing is imported to answer
        module = getattr(array_type, "__module__", "") or ""
        return module.split(".")[0] == "array_api_strict" and array_type.__name__ == "Array"

    def load_module(self) -> ModuleType:
        import array_api_strict

        array_api_strict.set_array_api_strict_flags(api_version="2024.12")
        return array_api_strict

    def version(self) -> str:
        import array_api_strict

        return array_api_strict.__version__

    @property
    def _device(self) -> Any:
        return self.xp.Device("device1")

    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        dtype = None if dtype is None else self.resolve_dtype(dtype)
        return self.xp.asarray(obj, dtype=dtype, device=self._device)

    def to_numpy(self, x: Any) -> Any:
        import numpy as np

        return np.array(x.to_device(self.xp.Device("CPU_DEVICE")), copy=True)

    def from_numpy(self, a: Any) -> Any:
        return self.xp.asarray(a, copy=True, device=self._device)

    # The standard has no random numbers: numpy's global generator draws them, so
    # numpy.random.seed (or zerograd.seed) makes them repeatable, as in DeZero.
    def randn(self, *shape: int, dtype: Any = None) -> Any:
        import numpy as np

        return self.astype(self.from_numpy(np.random.randn(*shape)), dtype or self.xp.float64)

    def rand(self, *shape: int, dtype: Any = None) -> Any:
        import numpy as np

        return self.astype(self.from_numpy(np.random.rand(*shape)), dtype or self.xp.float64)

    def permutation(self, n: int) -> Any:
        import numpy as np

        return self.from_numpy(np.random.permutation(n))


@hookimpl
def zerograd_backend() -> Backend:
    """The array-api-strict backend."""
    return ArrayApiStrictBackend()
