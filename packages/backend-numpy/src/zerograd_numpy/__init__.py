"""zerograd-numpy: the numpy backend plugin (zerograd's default backend).

Registered through the ``zerograd.backends`` entry point exactly as a third-party
plugin would be; zerograd finds it once it is installed.

Examples:
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
from zerograd.backends.numpylike import NumpyLikeBackend
from zerograd.shapes import summed_axes

from . import allocator

__version__ = _distribution_version("zerograd-numpy")  # the repository's VERSION file

KEEPS_FREED_MEMORY = allocator.apply_default()
"""Whether glibc keeps freed memory in the process (see :mod:`zerograd_numpy.allocator`)."""


def _samples(drawn: Any, dtype: Any) -> Any:
    """A draw of numpy's as an array (one of no shape is a Python float), in ``dtype`` if given."""
    a = np.asarray(drawn)
    return a if dtype is None else a.astype(dtype, copy=False)


# ndarray subclasses whose arithmetic differs from ndarray's: zerograd's derivatives (gy * x1
# for a product) would silently be those of other functions
_REFUSED = (np.matrix, np.ma.MaskedArray)


def _refusal(obj: Any) -> str:
    if isinstance(obj, np.matrix):
        return (
            "numpy.matrix is not supported: its * and ** are matrix products, where zerograd "
            "computes elementwise ones (and their derivatives). Convert it with "
            "numpy.asarray(m), and use @ (or F.matmul) for matrix products."
        )
    return (
        "numpy.ma.MaskedArray is not supported: zerograd's functions and derivatives do not "
        "follow its mask. Convert it with a.filled(value) (masked entries set to value) or "
        "numpy.asarray(a) (its data, the mask dropped)."
    )


class NumpyBackend(NumpyLikeBackend):
    """The numpy backend: numpy arrays on the CPU, drawing from ``numpy.random``.

    Examples:
        >>> import numpy as np
        >>> NumpyBackend().scatter_add(np.zeros(3), np.array([1, 1]), 1.0)
        array([0., 2., 0.])
    """

    name = "numpy"
    device = "cpu"
    cache_scalars = True
    lib = np

    def owns(self, array_type: type) -> bool:
        """Whether ``array_type`` is ``numpy.ndarray`` or a subclass (numpy scalars are not).

        ``numpy.matrix`` and ``numpy.ma.MaskedArray`` are not: their operators mean
        something else than zerograd's derivatives assume (see :meth:`asarray`).

        Args:
            array_type: The type of an array.

        Returns:
            True for ndarray types.
        """
        # Not numpy scalars (np.float64, what 0-d arithmetic returns): they are not arrays,
        # and claiming them let them through as Variable.data once their type was cached.
        # zerograd converts them (Variable(), as_array, Function outputs) to 0-d arrays.
        return issubclass(array_type, np.ndarray) and not issubclass(array_type, _REFUSED)

    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        """``numpy.asarray(obj, dtype=dtype)``; a ``numpy.matrix`` or masked array is refused.

        Converting either silently would be wrong: a matrix's ``*`` is a matrix product (a
        user mixing one in means one), and a masked array's mask would be dropped.

        Raises:
            TypeError: ``obj`` is a ``numpy.matrix`` or a ``numpy.ma.MaskedArray``; the
                message says how to convert it.
        """
        if isinstance(obj, _REFUSED):
            raise TypeError(_refusal(obj))
        return np.asarray(obj, dtype=dtype)

    def load_module(self) -> ModuleType:
        """Return the array API namespace for numpy.

        Returns:
            numpy itself on numpy 2 (its main namespace follows the array API standard);
            array-api-compat's numpy namespace on numpy 1.26, which lacks some standard names.
        """
        if int(np.__version__.split(".")[0]) >= 2:
            return np
        import array_api_compat.numpy

        return array_api_compat.numpy

    def version(self) -> str:
        """Return numpy's version.

        Returns:
            ``numpy.__version__``.
        """
        return np.__version__

    def to_numpy(self, x: Any) -> Any:
        """Return ``x`` itself: it already is a numpy array.

        Args:
            x: A numpy array.

        Returns:
            ``x``.
        """
        return x

    def writable(self, x: Any) -> bool:
        """Return ``x.flags.writeable`` (False for read-only arrays and broadcast views).

        Args:
            x: A numpy array.

        Returns:
            Whether ``x`` can be written in place.
        """
        return x.flags.writeable

    def read_only(self, x: Any) -> Any:
        """Clear ``x``'s ``writeable`` flag and return it.

        Args:
            x: A numpy array.

        Returns:
            ``x``, now read-only (a write raises numpy's ``ValueError``).
        """
        x.flags.writeable = False
        return x

    def sum(self, x: Any, axis: Any = None, keepdims: bool = False, divisor: Any = None) -> Any:
        # the ufunc's own reduce (numpy.sum's Python layer costs about 1 µs a call, as much
        # as a small sum itself); numpy's one float narrower than float32 is float16
        if x.dtype.char == "e":
            y = np.add.reduce(x, axis=axis, dtype=np.float32, keepdims=keepdims)
            if divisor is not None:
                y = y / np.float32(divisor)  # float32 on numpy 1.26 too (not float64)
            return y.astype(np.float16)
        y = np.add.reduce(x, axis=axis, keepdims=keepdims)
        # the divisor in the sum's own dtype: numpy 1.26 divides a float32 scalar by a
        # Python int in float64 (numpy 2 in float32)
        return y if divisor is None else y / y.dtype.type(divisor)

    def sum_to(self, x: Any, shape: tuple[int, ...]) -> Any:
        axes = summed_axes(x.shape, shape)
        if not axes:
            return x
        y = np.add.reduce(x, axis=axes) if x.dtype.char != "e" else self.sum(x, axes)
        if not isinstance(y, np.ndarray):  # summed to a numpy scalar: a 0-d array instead
            y = np.asarray(y)
        return y if y.shape == shape else y.reshape(shape)

    # numpy's global random state, the one DeZero's code draws from
    def randn(self, *shape: int, dtype: Any = None) -> Any:
        """``numpy.random.randn(*shape)``: float64 unless ``dtype`` is given."""
        return _samples(np.random.randn(*shape), dtype)

    def rand(self, *shape: int, dtype: Any = None) -> Any:
        """``numpy.random.rand(*shape)``: float64 unless ``dtype`` is given."""
        return _samples(np.random.rand(*shape), dtype)

    def permutation(self, n: int) -> Any:
        """Return ``numpy.random.permutation(n)``.

        Args:
            n: The number of elements.

        Returns:
            A random ordering of ``0 .. n-1``.
        """
        return np.random.permutation(n)

    def seed(self, n: int) -> None:
        """Seed numpy's global random state (``numpy.random``), which zerograd-nn uses.

        Args:
            n: The seed.
        """
        np.random.seed(n)


@hookimpl
def zerograd_backend() -> Backend:
    """Return the numpy backend (the plugin hook zerograd calls).

    Returns:
        A new :class:`NumpyBackend`.
    """
    return NumpyBackend()
