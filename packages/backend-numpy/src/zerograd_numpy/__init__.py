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

from . import kernels

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
        """numpy itself on numpy 2 (its main namespace follows the array API standard);
        array-api-compat's numpy namespace on numpy 1.26, which lacks some standard names."""
        if int(np.__version__.split(".")[0]) >= 2:
            return np
        import array_api_compat.numpy

        return array_api_compat.numpy

    def version(self) -> str:
        return np.__version__

    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        return np.asarray(obj, dtype=dtype)

    def astype(self, x: Any, dtype: Any) -> Any:
        """``x.astype(dtype)``: a new array (the method, faster than ``np.astype``)."""
        return x.astype(dtype)

    def dtype_kind(self, dtype: Any) -> str:
        """``dtype.kind``."""
        return dtype.kind

    def resolve_dtype(self, dtype: Any) -> Any:
        """``numpy.dtype(dtype)`` (names, scalar types and dtypes alike)."""
        return np.dtype(dtype)

    def to_numpy(self, x: Any) -> Any:
        return x

    def from_numpy(self, a: Any) -> Any:
        return np.asarray(a)

    def getitem(self, x: Any, index: Any) -> Any:
        """``x[index]``: numpy's own indexing."""
        return x[index]

    def scatter_add(self, a: Any, indices: Any, values: Any) -> Any:
        out = a.copy()
        if _basic_index(indices):
            out[indices] += values  # a basic index selects each element once
        else:
            np.add.at(out, indices, values)
        return out

    def broadcast_to(self, x: Any, shape: tuple[int, ...]) -> Any:
        return np.broadcast_to(x, shape)

    def pad(self, x: Any, pad_width: Any, value: float = 0.0) -> Any:
        """``numpy.pad`` with a constant."""
        return np.pad(x, pad_width, mode="constant", constant_values=value)

    def im2col(self, img: Any, k: tuple, s: tuple, p: tuple, pad_value: float = 0.0) -> Any:
        """Patches written slice by slice into one array (:mod:`zerograd_numpy.kernels`)."""
        return kernels.im2col(img, k, s, p, pad_value)

    def col2im(self, col: Any, img_shape: tuple, k: tuple, s: tuple, p: tuple) -> Any:
        """Patches folded into one zeroed image in place (:mod:`zerograd_numpy.kernels`)."""
        return kernels.col2im(col, img_shape, k, s, p)

    # numpy's global random state, the one DeZero's code draws from
    def randn(self, *shape: int, dtype: Any = None) -> Any:
        """``numpy.random.randn(*shape)`` as an array, cast to ``dtype`` if given."""
        a = np.asarray(np.random.randn(*shape))
        return a if dtype is None else a.astype(dtype, copy=False)

    def rand(self, *shape: int, dtype: Any = None) -> Any:
        """``numpy.random.rand(*shape)`` as an array, cast to ``dtype`` if given."""
        a = np.asarray(np.random.rand(*shape))
        return a if dtype is None else a.astype(dtype, copy=False)

    def permutation(self, n: int) -> Any:
        """``numpy.random.permutation(n)``."""
        return np.random.permutation(n)

    def seed(self, n: int) -> None:
        """Seed numpy's global random state (``numpy.random``), which zerograd-nn uses."""
        np.random.seed(n)


@hookimpl
def zerograd_backend() -> Backend:
    """The numpy backend."""
    return NumpyBackend()
