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
from zerograd.shapes import basic_index, summed_axes

from . import allocator, kernels

__version__ = _distribution_version("zerograd-numpy")  # the repository's VERSION file

KEEPS_FREED_MEMORY = allocator.apply_default()
"""Whether glibc keeps freed memory in the process (see :mod:`zerograd_numpy.allocator`)."""


class NumpyBackend(Backend):
    """The numpy backend: numpy arrays on the CPU, drawing from ``numpy.random``.

    Examples:
        >>> import numpy as np
        >>> NumpyBackend().scatter_add(np.zeros(3), np.array([1, 1]), 1.0)
        array([0., 2., 0.])
    """

    name = "numpy"
    device = "cpu"
    cache_scalars = True

    def owns(self, array_type: type) -> bool:
        """Whether ``array_type`` is ``numpy.ndarray`` or a subclass (numpy scalars are not).

        Args:
            array_type: The type of an array.

        Returns:
            True for ndarray types.
        """
        # Not numpy scalars (np.float64, what 0-d arithmetic returns): they are not arrays,
        # and claiming them let them through as Variable.data once their type was cached.
        # zerograd converts them (Variable(), as_array, Function outputs) to 0-d arrays.
        return issubclass(array_type, np.ndarray)

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

    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        """Return ``numpy.asarray(obj, dtype=dtype)``.

        Args:
            obj: A Python scalar, a (nested) list or a numpy array.
            dtype: A dtype numpy accepts, or None to infer it.

        Returns:
            A numpy array (``obj`` itself when it already fits).
        """
        return np.asarray(obj, dtype=dtype)

    def astype(self, x: Any, dtype: Any) -> Any:
        """Return ``x.astype(dtype)``: a new array (the method, faster than ``np.astype``).

        Args:
            x: A numpy array.
            dtype: A dtype numpy accepts.

        Returns:
            The converted copy.
        """
        return x.astype(dtype)

    def dtype_kind(self, dtype: Any) -> str:
        """Return ``dtype.kind``.

        Args:
            dtype: A numpy dtype.

        Returns:
            Its one-letter kind, such as ``'f'``.
        """
        return dtype.kind

    def resolve_dtype(self, dtype: Any) -> Any:
        """Return ``numpy.dtype(dtype)`` (names, scalar types and dtypes alike).

        Args:
            dtype: A name, a scalar type or a dtype.

        Returns:
            The numpy dtype.
        """
        return np.dtype(dtype)

    def to_numpy(self, x: Any) -> Any:
        """Return ``x`` itself: it already is a numpy array.

        Args:
            x: A numpy array.

        Returns:
            ``x``.
        """
        return x

    def from_numpy(self, a: Any) -> Any:
        """Return ``numpy.asarray(a)``.

        Args:
            a: A numpy array.

        Returns:
            ``a`` as an ndarray (no copy).
        """
        return np.asarray(a)

    def getitem(self, x: Any, index: Any) -> Any:
        """Return ``x[index]``: numpy's own indexing.

        Args:
            x: A numpy array.
            index: Any index numpy accepts.

        Returns:
            The selected array.
        """
        return x[index]

    def scatter_add(self, a: Any, indices: Any, values: Any) -> Any:
        """Return a copy of ``a`` with ``values`` added at ``indices``; repeats add up.

        Basic indices add in one step; others use ``numpy.add.at``.

        Args:
            a: A numpy array (left unchanged).
            indices: Any index numpy accepts.
            values: The values, broadcastable to ``a[indices]``.

        Returns:
            The new array.
        """
        out = a.copy()
        if basic_index(indices):
            out[indices] += values  # a basic index selects each element once
        else:
            np.add.at(out, indices, values)
        return out

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

    def compute_into(self, op: str, x1: Any, x2: Any = None, *, out: Any) -> None:
        """Write ``numpy.<op>(x1, x2)`` into ``out`` with the ufunc's ``out=`` (no temporary).

        Args:
            op: ``'add'``, ``'subtract'``, ``'multiply'``, ``'divide'`` or ``'sqrt'``.
            x1: A numpy array.
            x2: A numpy array or a Python float; None for ``'sqrt'``.
            out: A writable numpy array of the result's shape and dtype.
        """
        ufunc = getattr(np, op)  # contract.IN_PLACE_OPS are numpy's ufunc names
        if x2 is None:
            ufunc(x1, out=out)
        else:
            ufunc(x1, x2, out=out)

    def flatten_into(self, arrays: list, out: Any = None) -> Any:
        """``numpy.concatenate(arrays, axis=None, out=out)``: one copy, no temporary.

        Args:
            arrays: numpy arrays of one dtype.
            out: a writable 1-d array of their total size, or None for a new one.

        Returns:
            ``out``, or the new array.
        """
        return np.concatenate(arrays, axis=None, out=out)

    def broadcast_to(self, x: Any, shape: tuple[int, ...]) -> Any:
        """Return ``numpy.broadcast_to(x, shape)`` (a read-only view).

        Args:
            x: A numpy array.
            shape: The target shape.

        Returns:
            The broadcast view.
        """
        return np.broadcast_to(x, shape)

    def sum_to(self, x: Any, shape: tuple[int, ...]) -> Any:
        # the ufunc's own reduce: numpy.sum's Python layer costs about 2 µs a call, as much
        # as the sum itself for a bias gradient
        axes = summed_axes(x.shape, shape)
        if not axes:
            return x
        y = np.add.reduce(x, axis=axes)
        if not isinstance(y, np.ndarray):  # summed to a numpy scalar: a 0-d array instead
            y = np.asarray(y)
        return y if y.shape == shape else y.reshape(shape)

    def pad(self, x: Any, pad_width: Any, value: float = 0.0) -> Any:
        """Return ``x`` padded with a constant (``kernels.pad``: borders filled, then a copy).

        Args:
            x: A numpy array.
            pad_width: One ``(before, after)`` pair per axis.
            value: What the padding holds.

        Returns:
            The padded array.
        """
        return kernels.pad(x, pad_width, value)

    def im2col(self, img: Any, k: tuple, s: tuple, p: tuple, pad_value: float = 0.0) -> Any:
        """Return the patches, written slice by slice into one array (``kernels.im2col``).

        Args:
            img: The image batch (N, C, H, W).
            k: The kernel size, an ``(h, w)`` pair.
            s: The stride, a pair.
            p: The padding, a pair.
            pad_value: What the padding holds.

        Returns:
            The patches (N, C, KH, KW, OH, OW).
        """
        return kernels.im2col(img, k, s, p, pad_value)

    def col2im(self, col: Any, img_shape: tuple, k: tuple, s: tuple, p: tuple) -> Any:
        """Fold patches into one zeroed image in place (``kernels.col2im``).

        Args:
            col: The patches (N, C, KH, KW, OH, OW).
            img_shape: The image shape (N, C, H, W).
            k: The kernel size, an ``(h, w)`` pair.
            s: The stride, a pair.
            p: The padding, a pair.

        Returns:
            The image, overlapping windows added up.
        """
        return kernels.col2im(col, img_shape, k, s, p)

    # numpy's global random state, the one DeZero's code draws from
    def randn(self, *shape: int, dtype: Any = None) -> Any:
        """Return ``numpy.random.randn(*shape)`` as an array, cast to ``dtype`` if given.

        Args:
            *shape: The sizes of the axes.
            dtype: The dtype, or None for float64.

        Returns:
            The samples.
        """
        a = np.asarray(np.random.randn(*shape))
        return a if dtype is None else a.astype(dtype, copy=False)

    def rand(self, *shape: int, dtype: Any = None) -> Any:
        """Return ``numpy.random.rand(*shape)`` as an array, cast to ``dtype`` if given.

        Args:
            *shape: The sizes of the axes.
            dtype: The dtype, or None for float64.

        Returns:
            The samples.
        """
        a = np.asarray(np.random.rand(*shape))
        return a if dtype is None else a.astype(dtype, copy=False)

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
