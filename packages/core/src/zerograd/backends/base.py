"""The :class:`Backend` base class: what an array library supplies to zerograd.

The contract has two sides. On the array module (:attr:`Backend.xp`) zerograd and
zerograd-nn call only names of the Python array API standard (2023.12). Everything the
standard lacks is a method of :class:`Backend`, declared here with its default.
``docs/backend-plugins.md`` lists both sides in one table.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..shapes import summed_axes
from . import indexing as _indexing
from . import standard as _std
from .chains import Chain

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
    """Whether zerograd may reuse one array for a repeated Python-scalar operand.

    Only for backends whose arrays live in one place, such as host memory, and that
    :meth:`read_only` can protect: the shared array is handed to every Function's
    ``forward``, so a forward that wrote into it would change every later ``x * 3.0``.
    """

    _xp: ModuleType | None = None
    _sum_dtypes: dict | None = None  # dtype -> what sum_dtype answered

    # -- required ---------------------------------------------------------------------
    def owns(self, array_type: type) -> bool:
        """Required. Whether arrays of ``array_type`` belong to this backend.

        Must not import anything (it is asked about every new array type).

        Args:
            array_type: The type of an array (``type(x)``).

        Returns:
            True when this backend's arrays have that type.
        """
        raise NotImplementedError(f"backend {self.name!r}: Backend.owns is not implemented")

    def load_module(self) -> ModuleType:
        """Required. Import and return the array API namespace (called once, lazily).

        Returns:
            The namespace module (``numpy`` for the numpy backend).
        """
        raise NotImplementedError(f"backend {self.name!r}: Backend.load_module is not implemented")

    def to_numpy(self, x: Any) -> Any:
        """Required. Return ``x`` as a ``numpy.ndarray`` (a copy where the memory is elsewhere).

        The only way zerograd moves data to the host: a backend may refuse every implicit
        conversion (``numpy.asarray(x)``).

        Args:
            x: An array of this backend.

        Returns:
            A numpy array with ``x``'s values, shape and dtype.
        """
        raise NotImplementedError(f"backend {self.name!r}: Backend.to_numpy is not implemented")

    def from_numpy(self, a: Any) -> Any:
        """Required. Return the numpy array ``a`` as an array of this backend (on its device).

        Args:
            a: A numpy array.

        Returns:
            An array of this backend with ``a``'s values, shape and dtype.
        """
        raise NotImplementedError(f"backend {self.name!r}: Backend.from_numpy is not implemented")

    # -- random numbers (required by zerograd-nn: the standard has none) ------------------
    def randn(self, *shape: int, dtype: Any = None) -> Any:
        """Required by zerograd-nn. Draw standard-normal samples of ``shape``.

        Args:
            *shape: The sizes of the result's axes (none: a 0-d array).
            dtype: The result's dtype; ``None`` for the backend's default float.

        Returns:
            A new array on this backend's device, drawn from the state :meth:`seed` seeds.

        Raises:
            NotImplementedError: The backend draws no random numbers.
        """
        raise NotImplementedError(
            f"backend {self.name!r} draws no random numbers: implement Backend.randn "
            f"(and rand, permutation) to use zerograd-nn's layers, initializers and dropout."
        )

    def rand(self, *shape: int, dtype: Any = None) -> Any:
        """Required by zerograd-nn. Draw uniform samples in ``[0, 1)`` of ``shape``.

        The arguments, the result and the error are those of :meth:`randn`.
        """
        raise NotImplementedError(
            f"backend {self.name!r} draws no random numbers: implement Backend.rand."
        )

    def permutation(self, n: int) -> Any:
        """Required by zerograd-nn. Draw a random ordering of ``0 .. n-1``.

        Args:
            n: The number of elements.

        Returns:
            An integer array of length ``n``.

        Raises:
            NotImplementedError: The backend draws no random numbers.
        """
        raise NotImplementedError(
            f"backend {self.name!r} draws no random numbers: implement Backend.permutation."
        )

    def seed(self, n: int) -> None:
        """Optional. Seed the random state of :meth:`randn`, :meth:`rand` and :meth:`permutation`.

        ``zerograd.seed(n)`` calls it on every installed, available backend. The default does
        nothing.

        Args:
            n: The seed, an integer in ``[0, 2**32)``.
        """

    def random_state(self) -> Any:
        """Optional. Return the random state of :meth:`randn`, :meth:`rand`, :meth:`permutation`.

        Checkpoints save it so that a resumed run draws the numbers the interrupted run would
        have drawn. The default, None, means the backend's state cannot be saved (or lives in
        a library whose state is saved elsewhere, such as numpy's global one).

        Returns:
            A 1-d numpy array of integers that :meth:`set_random_state` takes, or None.
        """
        return None

    def set_random_state(self, state: Any) -> None:
        """Optional. Continue drawing from a state :meth:`random_state` returned.

        Checks ``state`` before anything changes: a bad state leaves the generator as it was.

        Args:
            state: What :meth:`random_state` returned (a 1-d numpy integer array).

        Raises:
            NotImplementedError: The backend's random state cannot be restored (the default).
            ValueError: ``state`` is not a state of this backend.
        """
        raise NotImplementedError(
            f"backend {self.name!r} cannot restore a random state (Backend.set_random_state)"
        )

    # -- defaults ---------------------------------------------------------------------
    @property
    def xp(self) -> ModuleType:
        """The array API namespace of this backend (loaded once by :meth:`load_module`)."""
        if self._xp is None:
            self._xp = self.load_module()
        return self._xp

    def read_only(self, x: Any) -> Any:
        """Optional. Return ``x`` made read-only: an array that no in-place write can change.

        zerograd calls it once on each array it shares between calls (the cached Python-scalar
        operands of :attr:`cache_scalars`), so that a ``forward`` writing into its input fails
        instead of changing every later use of that number. The default returns ``x``: right
        for backends whose arrays are immutable (JAX, array-api-strict). A backend with
        mutable arrays that cannot be made read-only must leave :attr:`cache_scalars` False.

        Args:
            x: A new array of this backend that zerograd alone holds.

        Returns:
            ``x`` itself (numpy clears its ``writeable`` flag) or a read-only view of it, for
            which :meth:`writable` is false.
        """
        return x

    def is_available(self) -> bool:
        """Optional. Whether this backend can compute on this machine.

        Returns:
            True by default.
        """
        return True

    def unavailable_reason(self) -> str:
        """Optional. Say why :meth:`is_available` is false, in words a user can act on.

        Returns:
            The reason, or ``""`` by default.
        """
        return ""

    def version(self) -> str:
        """Optional. Return the version of the array library.

        Returns:
            The version string; by default the namespace's ``__version__``.
        """
        return str(getattr(self.xp, "__version__", "unknown"))

    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        """Optional. Return a Python scalar, list or array of this backend as an array.

        Default: ``xp.asarray`` with the dtype from :meth:`resolve_dtype`.

        Args:
            obj: A Python scalar, a (nested) list or an array of this backend.
            dtype: The dtype (any form :meth:`resolve_dtype` takes), or None to infer it.

        Returns:
            An array of this backend.
        """
        return self.xp.asarray(obj, dtype=None if dtype is None else self.resolve_dtype(dtype))

    def astype(self, x: Any, dtype: Any) -> Any:
        """Optional. Return ``x`` converted to ``dtype``, as a new array.

        Default: ``xp.astype``.

        Args:
            x: An array of this backend.
            dtype: The dtype, in any form :meth:`resolve_dtype` takes.

        Returns:
            The converted array.
        """
        return self.xp.astype(x, self.resolve_dtype(dtype))

    def resolve_dtype(self, dtype: Any) -> Any:
        """Optional. Return this backend's dtype for ``dtype``.

        Default: the namespace's attribute of that name (``xp.float32``).

        Args:
            dtype: A name (``'float32'``), a numpy dtype or scalar type (``numpy.float32``), or
                one of this backend's own dtypes.

        Returns:
            The backend's dtype object.
        """
        return _std.resolve_dtype(self.xp, dtype)

    def dtype_kind(self, dtype: Any) -> str:
        """Optional. Return numpy's one-letter kind of ``dtype``.

        Default: asked with ``xp.isdtype``.

        Args:
            dtype: A dtype of this backend.

        Returns:
            ``'b'``, ``'i'``, ``'u'``, ``'f'`` or ``'c'``.
        """
        return _std.dtype_kind(self.xp, dtype)

    def getitem(self, x: Any, index: Any) -> Any:
        """Optional. Return ``x[index]`` with numpy's indexing rules.

        Those include integer and boolean arrays, repeats, missing trailing axes and
        out-of-range slice bounds. Default: the index brought into the standard's form, integer
        and boolean arrays resolved on the host into positions that ``xp.take`` gathers.
        Backends whose arrays index as numpy's do override it with ``x[index]``.

        Args:
            x: An array of this backend.
            index: An int, slice, None, Ellipsis, integer or boolean array, or a tuple of them.

        Returns:
            The selected array.
        """
        return _indexing.getitem(self, x, index)

    def scatter_add(self, a: Any, indices: Any, values: Any) -> Any:
        """Optional. Return a copy of ``a`` with ``values`` added at ``indices``; repeats add up.

        Default: a round trip through numpy (:meth:`to_numpy`, ``numpy.add.at``,
        :meth:`from_numpy`), correct for every backend but slow; override it.

        Args:
            a: The array to add into (left unchanged).
            indices: An index, as :meth:`getitem` takes.
            values: The values to add, broadcastable to ``a[indices]``.

        Returns:
            A new array of ``a``'s shape.
        """
        return _std.scatter_add_on_host(self, a, indices, values)

    def broadcast_to(self, x: Any, shape: tuple[int, ...]) -> Any:
        """Optional. Return ``x`` broadcast to ``shape``. Default: ``xp.broadcast_to``.

        Args:
            x: An array of this backend.
            shape: The target shape.

        Returns:
            The broadcast array.
        """
        return self.xp.broadcast_to(x, shape)

    def sum_dtype(self, dtype: Any) -> Any:
        """Optional. Return the dtype that sums of ``dtype`` values are added in, or None.

        :meth:`sum` (every sum zerograd takes: ``F.sum``, broadcasting's gradient, the
        losses, softmax's denominators) adds a float narrower than float32 (float16,
        bfloat16) in float32 and rounds the result once, as PyTorch does: added in float16,
        ``2048 + 1`` is 2048, and a column of 10,000 ones summed to 2048. Default: float32
        for a floating-point ``dtype`` that promotes to float32 (``xp.result_type``) and is
        not float32 itself, None (added in ``dtype`` itself) for every other dtype; asked
        once per dtype.

        Args:
            dtype: A dtype of this backend.

        Returns:
            The backend's float32 dtype, or None.
        """
        known = self._sum_dtypes
        if known is None:
            known = self._sum_dtypes = {}
        try:
            return known[dtype]
        except KeyError:
            pass
        wide = None
        if self.dtype_kind(dtype) == "f":
            f32 = self.resolve_dtype("float32")
            if dtype != f32 and self.xp.result_type(dtype, f32) == f32:
                wide = f32
        known[dtype] = wide
        return wide

    def sum(self, x: Any, axis: Any = None, keepdims: bool = False, divisor: Any = None) -> Any:
        """Optional. Return ``x`` summed over ``axis``, divided by ``divisor`` where given.

        A float narrower than float32 (:meth:`sum_dtype`) is added, and divided, in float32,
        and the result rounded once to ``x``'s dtype: a count ``divisor`` (a batch size) is
        never rounded to float16, whose largest number is 65,504. Every other dtype is
        ``xp.sum(x, axis=axis, keepdims=keepdims)``, then ``/ divisor``: the bits the
        library's own sum gives.

        Args:
            x: An array of this backend.
            axis: None for every axis, or a tuple of distinct non-negative axes.
            keepdims: Keep the summed axes with length 1.
            divisor: A Python number to divide the sum by, or None.

        Returns:
            The sum, in ``x``'s dtype for floats (numpy returns a numpy scalar, as its own
            sum does, where every axis is summed).
        """
        wide = self.sum_dtype(x.dtype)
        xp = self.xp
        if wide is None:
            y = xp.sum(x, axis=axis, keepdims=keepdims)
            return y if divisor is None else y / divisor
        y = xp.sum(x, axis=axis, keepdims=keepdims, dtype=wide)
        if divisor is not None:
            y = y / divisor
        return xp.astype(y, x.dtype)

    def sum_to(self, x: Any, shape: tuple[int, ...]) -> Any:
        """Optional. Return ``x`` summed over the axes that broadcasting ``shape`` would expand.

        Default: :meth:`sum` over :func:`~zerograd.shapes.summed_axes`, then ``xp.reshape``
        where ``shape`` has inner 1s.

        Args:
            x: An array of this backend.
            shape: A shape that broadcasts to ``x.shape``.

        Returns:
            An array of ``shape``.
        """
        axes = summed_axes(x.shape, shape)
        if not axes:
            return x
        y = self.sum(x, axes)
        if type(y) is not type(x):  # a library scalar (numpy sums everything to one)
            y = self.asarray(y)
        return y if y.shape == shape else self.xp.reshape(y, shape)

    def assign(self, target: Any, value: Any) -> None:
        """Optional. Write ``value`` into ``target`` in place (``target[...] = value``).

        Only used where a user handed zerograd-nn a plain array to update (batch_norm's
        running statistics).

        Args:
            target: The array to write into.
            value: The values, broadcastable to ``target``'s shape.

        Raises:
            TypeError: The backend's arrays are immutable.
        """
        target[...] = value

    # -- in-place arithmetic (zerograd-nn's optimizer step) --------------------------------
    def writable(self, x: Any) -> bool:
        """Optional. Whether :meth:`compute_into` and :meth:`assign` may write into ``x``.

        False for every array of a backend whose arrays are immutable (JAX): zerograd-nn's
        optimizers then make new arrays. A backend with read-only arrays beside writable ones
        (numpy's ``flags.writeable``) answers per array. Default: asked once per array type,
        by writing an empty array into an empty array of ``x``'s type (``x`` is not touched).

        Args:
            x: An array of this backend.

        Returns:
            True when ``x`` can be written in place.
        """
        return _std.writable_type(self, x)

    def compute_into(self, op: str, x1: Any, x2: Any = None, *, out: Any) -> None:
        """Optional. Write the standard function ``op`` of ``x1`` (and ``x2``) into ``out``.

        ``op`` is one of :data:`~zerograd.backends.contract.IN_PLACE_OPS` (``'add'``,
        ``'subtract'``, ``'multiply'``, ``'divide'``, ``'sqrt'``). zerograd calls it only when
        :meth:`writable` is true for ``out``, with ``out`` of the result's shape and dtype
        (it may be ``x1`` or ``x2`` itself), ``x1`` an array and ``x2`` an array or a Python
        float. Default: the result as a new array (the operator, or ``xp.sqrt``), then
        written with :meth:`assign`. numpy and CuPy override it with ufuncs' ``out=``, which
        allocate nothing.

        Args:
            op: The name of the standard function.
            x1: Its first operand.
            x2: Its second operand; None for ``'sqrt'``.
            out: The array the result is written into.

        Raises:
            ValueError: ``op`` is not one of those names.
            Exception: What :meth:`assign` raises when ``out`` cannot be written (a read-only
                numpy array: ValueError; JAX: TypeError); zerograd asks :meth:`writable`
                first.
        """
        self.assign(out, _std.compute(self.xp, op, x1, x2))

    def into_function(self, op: str) -> Callable[..., Any]:
        """Optional. :meth:`compute_into` of one ``op`` as a function returning ``out``.

        ``f = backend.into_function("multiply")``; ``f(x1, x2, out=o)`` (``f(x, out=o)`` for
        ``'sqrt'``) writes as ``compute_into`` does and returns ``o``. An optimizer's update
        makes a dozen such writes per step, asked once per backend. Default: a function
        calling :meth:`compute_into`; numpy and CuPy return the ufunc itself (its ``out=``
        returns ``out``), one Python call less per write.

        Args:
            op: One of :data:`~zerograd.backends.contract.IN_PLACE_OPS`.

        Returns:
            The function.

        Raises:
            ValueError: ``op`` is not one of those names.
        """
        _std.check_in_place_op(op)
        into = self.compute_into
        if op == "sqrt":

            def unary(x: Any, *, out: Any) -> Any:
                into(op, x, out=out)
                return out

            return unary

        def binary(x1: Any, x2: Any, *, out: Any) -> Any:
            into(op, x1, x2, out=out)
            return out

        return binary

    def fuse(self, chain: Chain, dtype: Any) -> Callable[..., Any] | None:
        """Optional. ``chain`` on ``dtype`` arrays as one function of its inputs, or None.

        A static-graph replay (:func:`zerograd.static_graph`) asks once per chain of
        elementwise forwards it found, when it is built; where the answer is a function,
        each replay calls it with the chain's input arrays (in ``chain.inputs``' order:
        this backend's arrays of one dtype, each of the output's shape or 0-d) in place of
        the operations one by one. It must return a new array holding the bits the
        operations give one at a time. Default: None (numpy has nothing to gain); CuPy
        compiles one ``ElementwiseKernel`` per chain.

        Args:
            chain: The operations (:class:`~zerograd.backends.chains.Chain`).
            dtype: The dtype of every array the chain reads and makes.

        Returns:
            The fused function, or None.
        """
        return None

    def flatten_into(self, arrays: list, out: Any = None) -> Any:
        """Optional. The elements of ``arrays`` (each in C order), one after another, in 1-d.

        zerograd-nn's optimizers pack parameters, their state and their gradients into
        flat buffers with it (one call per buffer, whatever the number of arrays). Called
        with ``out`` only when :meth:`writable` is true for it, with ``out`` 1-d, of the
        arrays' dtype and their total size. Default: ``xp.concat`` of ``xp.reshape``-d
        arrays, written with :meth:`assign`. numpy and CuPy override it with
        ``concatenate(..., out=out)``, which allocates nothing.

        Args:
            arrays: arrays of this backend and one dtype, of any shapes.
            out: the array to write into; None for a new one.

        Returns:
            ``out``, or the new array.
        """
        xp = self.xp
        flat = xp.concat([xp.reshape(a, (-1,)) for a in arrays], axis=0)
        if out is None:
            return flat
        self.assign(out, flat)
        return out

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} ({self.device})>"
