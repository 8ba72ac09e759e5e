"""zerograd-numpy: the numpy backend plugin (zerograd's default backend).

Registered through the ``zerograd.backends`` entry point exactly as a third-party
plugin would be; zerograd finds it once it is installed.

>>> import numpy as np
>>> from zerograd.backends import get_backend
>>> get_backend(np.zeros(1)).name
'numpy'
"""

from __future__ import annotations

from importlib.metadata import version as _distribution_version
from types import ModuleType
from typing import Any

import numpy as np

from zerograd.backends import Backend, hookimpl

__version__ = _distribution_version("zerograd-numpy")  # the repository's VERSION file


def _basic_index(index: Any) -> bool:
    """True for indices made only of ints, slices, None and Ellipsis (no repeats possible)."""
    items = index if isinstance(index, tuple) else (index,)
    return all(isinstance(i, (int, slice, type(None), type(Ellipsis))) for i in items)


class NumpyBackend(Backend):
    """numpy arrays on the CPU."""

    name = "numpy"
    device = "cpu"
    cache_scalars = True

    def owns(self, array_type: type) -> bool:
        # Not numpy scalars (np.float64, what 0-d arithmetic returns): they are not arrays,
        # and claiming them let them through as Variable.data once their type was cached.
        # zerograd converts them (Variable(), as_array, Function outputs) to 0-d arrays.
        return issubclass(array_type, np.ndarray)

    def load_module(self) -> ModuleType:
        return np

    def version(self) -> str:
        return np.__version__

    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        return np.asarray(obj, dtype=dtype)

    def to_numpy(self, x: Any) -> Any:
        return x

    def from_numpy(self, a: Any) -> Any:
        return np.asarray(a)

    def scatter_add(self, a: Any, indices: Any, values: Any) -> Any:
        out = a.copy()
        if _basic_index(indices):
            out[indices] += values  # a basic index selects each element once
        else:
            np.add.at(out, indices, values)
        return out

    def broadcast_to(self, x: Any, shape: tuple[int, ...]) -> Any:
        return np.broadcast_to(x, shape)

    def seed(self, n: int) -> None:
        """Seed numpy's global random state (``numpy.random``), which zerograd-nn uses."""
        np.random.seed(n)


@hookimpl
def zerograd_backend() -> Backend:
    """The numpy backend."""
    return NumpyBackend()
