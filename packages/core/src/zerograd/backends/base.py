"""The :class:`Backend` base class: what an array library supplies to zerograd.

The contract has two sides. On the array module (:attr:`Backend.xp`) zerograd and
zerograd-nn call only names of the Python array API standard (2023.12). Everything the
standard lacks is a method of :class:`Backend`, declared here with its default.
``docs/backend-plugins.md`` lists both sides in one table.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from . import indexing as _indexing
from . import standard as _std

API_VERSION = 1
"""Version of the backend contract; a plugin built for another one is refused."""


class Backend:
    """An array library as zerograd sees it.

    Required of a subclass: :attr:`name`, :meth:`owns`, :meth:`load_module` (an array API
    namespace), :meth:`to_numpy`, :meth:`from_numpy`, and for the random-number users
    (zerograd-nn's layers, initializers, dropout and data loaders) :meth:`randn`,
    :meth:`rand` and :meth:`permutation`. Every other method has a default written with
    standard calls (or a round trip through numpy where the standard has no way), which a
    backend overrides to be faster. Every operation returns a new array, except
    :meth:`assign`, so backends with immutable arrays fit.

    Examples:
        >>> from zerograd.backends import get_backend
        >>> get_backend("numpy").name
        'numpy'
    """

    api_version: int = API_VERSION
    name: str = ""
    device: str = "cpu"
    """``'cpu'`` or ``'gpu'``: where the arrays live (``Variable.to_gpu`` picks a ``'gpu'`` one)."""

    cache_scalars: bool = False
    """Whether zerograd may reuse one array for a repeated Python-scalar operand (only for
    backends whose arrays live in one place, such as host memory)."""

    _xp: ModuleType | None = None

    # -- required ---------------------------------------------------------------------
    def owns(self, array_type: type) -> bool:
        """Required. Whether arrays of ``array_type`` belong to this backend.

        Must not import anything (it is asked about every new array type).
        """
        raise NotImplementedError(f"backend {self.name!r}: Backend.owns is not implemented")

    def load_module(self) -> ModuleType:
        """Required. Import and return the array API namespace (called once, lazily)."""
        raise NotImplementedError(f"backend {self.name!r}: Backend.load_module is not implemented")

    def to_numpy(self, x: Any) -> Any:
        """Required. ``x`` as a ``numpy.ndarray`` (a copy where the memory is elsewhere).

        The only way zerograd moves data to the host: a backend may refuse every implicit
        conversion (``numpy.asarray(x)``).
        """
        raise NotImplementedError(f"backend {self.name!r}: Backend.to_numpy is not implemented")

    def from_numpy(self, a: Any) -> Any:
        """Required. The numpy array ``a`` as an array of this backend (on its device)."""
        raise NotImplementedError(f"backend {self.name!r}: Backend.from_numpy is not implemented")

    # -- random numbers (required by zerograd-nn: the standard has none) ------------------
    def randn(self, *shape: int, dtype: Any = None) -> Any:
        """Required by zerograd-nn. Standard-normal samples of ``shape``.

        Args:
            *shape: the sizes of the result's axes (none: a 0-d array).
            dtype: the result's dtype; ``None`` for the backend's default float.

        Returns:
            A new array on this backend's device, drawn from the state :meth:`seed` seeds.
        """
        raise NotImplementedError(
            f"backend {self.name!r} draws no random numbers: implement Backend.randn "
            f"(and rand, permutation) to use zerograd-nn's layers, initializers and dropout."
        )

    def rand(self, *shape: int, dtype: Any = None) -> Any:
        """Required by zerograd-nn. Uniform samples in ``[0, 1)`` of ``shape``, as :meth:`randn`."""
        raise NotImplementedError(
            f"backend {self.name!r} draws no random numbers: implement Backend.rand."
        )

    def permutation(self, n: int) -> Any:
        """Required by zerograd-nn. A random ordering of ``0 .. n-1`` (an integer array)."""
        raise NotImplementedError(
            f"backend {self.name!r} draws no random numbers: implement Backend.permutation."
        )

    def seed(self, n: int) -> None:
        """Optional. Seed the random state :meth:`randn`, :meth:`rand` and
        :meth:`permutation` draw from. The default does nothing.

        ``zerograd.seed(n)`` calls it on every installed, available backend.
        """

    # -- defaults ---------------------------------------------------------------------
    @property
    def xp(self) -> ModuleType:
        """The array API namespace of this backend (loaded once by :meth:`load_module`)."""
        if self._xp is None:
            self._xp = self.load_module()
        return self._xp

    def is_available(self) -> bool:
        """Optional. Whether this backend can compute on this machine. Default: True."""
        return True

    def unavailable_reason(self) -> str:
        """Optional. Why :meth:`is_available` is false, in words a user can act on."""
        return ""

    def version(self) -> str:
        """Optional. Version of the array library. Default: the namespace's ``__version__``."""
        return str(getattr(self.xp, "__version__", "unknown"))

    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        """Optional. A Python scalar, list or array of this backend as an array.

        Default: ``xp.asarray`` with the dtype from :meth:`resolve_dtype`.
        """
        return self.xp.asarray(obj, dtype=None if dtype is None else self.resolve_dtype(dtype))

    def astype(self, x: Any, dtype: Any) -> Any:
        """Optional. ``x`` converted to ``dtype`` (see :meth:`resolve_dtype`), a new array.

        Default: ``xp.astype``.
        """
        return self.xp.astype(x, self.resolve_dtype(dtype))

    def resolve_dtype(self, dtype: Any) -> Any:
        """Optional. This backend's dtype for ``dtype`` given as a name (``'float32'``), a
        numpy dtype or scalar type (``numpy.float32``), or one of its own dtypes.

        Default: the namespace's attribute of that name (``xp.float32``).
        """
        return _std.resolve_dtype(self.xp, dtype)

    def dtype_kind(self, dtype: Any) -> str:
        """Optional. numpy's one-letter kind of ``dtype``: ``'b'``, ``'i'``, ``'u'``,
        ``'f'`` or ``'c'``. Default: asked with ``xp.isdtype``."""
        return _std.dtype_kind(self.xp, dtype)

    def getitem(self, x: Any, index: Any) -> Any:
        """Optional. ``x[index]`` with numpy's indexing rules (integer and boolean arrays,
        repeats, missing trailing axes, out-of-range slice bounds).

        Default: the index brought into the standard's form, integer and boolean arrays
        resolved on the host into positions that ``xp.take`` gathers. Backends whose
        arrays index as numpy's do override it with ``x[index]``.
        """
        return _indexing.getitem(self, x, index)

    def scatter_add(self, a: Any, indices: Any, values: Any) -> Any:
        """Optional. A copy of ``a`` with ``values`` added at ``indices``; repeats add up.

        Default: a round trip through numpy (:meth:`to_numpy`, ``numpy.add.at``,
        :meth:`from_numpy`), correct for every backend but slow; override it.
        """
        return _std.scatter_add_on_host(self, a, indices, values)

    def broadcast_to(self, x: Any, shape: tuple[int, ...]) -> Any:
        """Optional. ``x`` broadcast to ``shape``. Default: ``xp.broadcast_to``."""
        return self.xp.broadcast_to(x, shape)

    def sum_to(self, x: Any, shape: tuple[int, ...]) -> Any:
        """Optional. ``x`` summed over the axes broadcasting from ``shape`` expanded.

        Default: ``xp.sum(..., keepdims=True)`` and ``xp.reshape``.
        """
        if x.shape == shape:
            return x
        lead = x.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(
            i + lead for i, n in enumerate(shape) if n == 1 and x.shape[i + lead] != 1
        )
        xp = self.xp
        y = xp.sum(x, axis=axes, keepdims=True) if axes else x
        return xp.reshape(y, shape) if lead else y

    def pad(self, x: Any, pad_width: Any, value: float = 0.0) -> Any:
        """Optional. ``x`` with ``pad_width[i] = (before, after)`` elements of ``value``
        added on axis ``i``, a new array. Default: ``xp.full`` blocks and ``xp.concat``."""
        return _std.pad(self.xp, x, pad_width, value)

    def im2col(self, img: Any, k: tuple, s: tuple, p: tuple, pad_value: float = 0.0) -> Any:
        """Optional kernel. The patches (N, C, KH, KW, OH, OW) of ``img`` (N, C, H, W).

        Args:
            img: the image batch.
            k: the kernel size, an ``(h, w)`` pair of ints.
            s: the stride, a pair.
            p: the padding, a pair.
            pad_value: what the padding holds (``-inf`` for max pooling).

        Returns:
            A new array; ``[n, c, j, i, y, x]`` is the padded image's
            ``[n, c, j + s[0]*y, i + s[1]*x]``. Default: one strided slice per kernel
            offset, stacked.
        """
        return _std.im2col(self, img, k, s, p, pad_value)

    def col2im(self, col: Any, img_shape: tuple, k: tuple, s: tuple, p: tuple) -> Any:
        """Optional kernel. Fold patches (N, C, KH, KW, OH, OW) into an image of
        ``img_shape`` (N, C, H, W), adding where windows overlap: the adjoint of
        :meth:`im2col`. Returns a new array. Default: each offset's patches spread with
        zeros by reshaping, placed by :meth:`pad`, and summed."""
        return _std.col2im(self, col, img_shape, k, s, p)

    def assign(self, target: Any, value: Any) -> None:
        """Optional. Write ``value`` into ``target`` in place (``target[...] = value``).

        Only used where a user handed zerograd-nn a plain array to update (batch_norm's
        running statistics). A backend whose arrays are immutable raises ``TypeError``.
        """
        target[...] = value

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} ({self.device})>"
