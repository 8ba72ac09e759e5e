"""The :class:`Backend` base class: what an array library supplies to zerograd."""

from __future__ import annotations

from types import ModuleType
from typing import Any

API_VERSION = 1
"""Version of the backend contract; a plugin built for another one is refused."""


class Backend:
    """An array library as zerograd sees it.

    Subclasses set :attr:`name` and :attr:`device`, and implement :meth:`owns`,
    :meth:`load_module`, :meth:`to_numpy` and :meth:`from_numpy`; the rest have
    generic defaults written against the array module. A backend may also offer optional
    kernels that packages look up with ``getattr``: ``im2col(img, k, s, p, pad_value)`` and
    ``col2im(col, img_shape, k, s, p)`` (used by zerograd-nn's convolutions when present).
    Every operation returns a new
    array (never writes into its inputs), so backends with immutable arrays fit.

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

    # -- what a subclass must supply -------------------------------------------------
    def owns(self, array_type: type) -> bool:
        """Whether arrays of ``array_type`` belong to this backend. Must not import anything."""
        raise NotImplementedError

    def load_module(self) -> ModuleType:
        """Import and return the numpy-like array module (called once, lazily)."""
        raise NotImplementedError

    def to_numpy(self, x: Any) -> Any:
        """Return ``x`` as a ``numpy.ndarray`` (a copy where the memory is elsewhere)."""
        raise NotImplementedError

    def from_numpy(self, a: Any) -> Any:
        """Return the numpy array ``a`` as an array of this backend."""
        raise NotImplementedError

    # -- defaults ---------------------------------------------------------------------
    @property
    def xp(self) -> ModuleType:
        """The array module (numpy-like namespace) of this backend."""
        if self._xp is None:
            self._xp = self.load_module()
        return self._xp

    def is_available(self) -> bool:
        """Whether this backend can compute on this machine (a device is present, ...)."""
        return True

    def unavailable_reason(self) -> str:
        """Why :meth:`is_available` is false, in words a user can act on."""
        return ""

    def version(self) -> str:
        """Version of the underlying array library."""
        return str(getattr(self.xp, "__version__", "unknown"))

    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        """Convert a Python scalar, list or array of this backend to an array."""
        return self.xp.asarray(obj, dtype=dtype)

    def astype(self, x: Any, dtype: Any) -> Any:
        """``x`` converted to ``dtype`` (a new array)."""
        return x.astype(dtype)

    def dtype_kind(self, dtype: Any) -> str:
        """numpy's one-letter kind of ``dtype``: ``'b'``, ``'i'``, ``'u'``, ``'f'`` or ``'c'``."""
        return dtype.kind

    def getitem(self, x: Any, index: Any) -> Any:
        """``x[index]`` with numpy's indexing rules (override where the array type has fewer)."""
        return x[index]

    def scatter_add(self, a: Any, indices: Any, values: Any) -> Any:
        """Return a copy of ``a`` with ``values`` added at ``indices``; repeated indices add up."""
        out = self.xp.array(a, copy=True)
        self.xp.add.at(out, indices, values)
        return out

    def broadcast_to(self, x: Any, shape: tuple[int, ...]) -> Any:
        """Broadcast ``x`` to ``shape`` (numpy rules)."""
        return self.xp.broadcast_to(x, shape)

    def sum_to(self, x: Any, shape: tuple[int, ...]) -> Any:
        """Sum ``x`` over the axes that broadcasting to its shape from ``shape`` expanded."""
        if x.shape == shape:
            return x
        lead = x.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(
            i + lead for i, n in enumerate(shape) if n == 1 and x.shape[i + lead] != 1
        )
        xp = self.xp
        y = xp.sum(x, axis=axes, keepdims=True) if axes else x
        return xp.reshape(y, shape) if lead else y

    def seed(self, n: int) -> None:
        """Seed the global random state that code using this backend draws from.

        Optional; the default does nothing (for a backend with no global random state).
        ``zerograd.seed(n)`` calls it on every installed, available backend.
        """

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} ({self.device})>"
