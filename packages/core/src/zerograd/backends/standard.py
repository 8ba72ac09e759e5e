"""The defaults of :class:`~zerograd.backends.Backend`, written with array API standard calls.

Every function here returns a new array and never writes into an array it is given, so it
serves backends with immutable arrays too. Creation calls pass ``device=`` so an array
never lands on another device than its inputs.
"""

from __future__ import annotations

import operator
from typing import Any

from .contract import IN_PLACE_OPS

_KINDS = (
    ("b", "bool"),
    ("i", "signed integer"),
    ("u", "unsigned integer"),
    ("f", "real floating"),
    ("c", "complex floating"),
)


def dtype_kind(xp: Any, dtype: Any) -> str:
    """Return numpy's one-letter kind of ``dtype``, found with ``xp.isdtype``.

    Args:
        xp: An array API namespace.
        dtype: One of its dtypes.

    Returns:
        ``'b'``, ``'i'``, ``'u'``, ``'f'`` or ``'c'``.

    Raises:
        TypeError: ``dtype`` is of none of those kinds.
    """
    for kind, name in _KINDS:
        if xp.isdtype(dtype, name):
            return kind
    raise TypeError(f"zerograd: dtype {dtype!r} is none of bool, integer, float or complex")


def resolve_dtype(xp: Any, dtype: Any) -> Any:
    """Return ``xp``'s dtype named by ``dtype``.

    Args:
        xp: An array API namespace.
        dtype: A name, a numpy dtype or scalar type, or one of ``xp``'s own dtypes.

    Returns:
        ``xp``'s dtype.
    """
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if not isinstance(name, str):
        name = getattr(dtype, "__name__", None)  # a scalar type such as numpy.float32
    if not isinstance(name, str):
        return dtype
    found = getattr(xp, {"float": "float64", "int": "int64", "bool_": "bool"}.get(name, name), None)
    if found is None:
        raise TypeError(f"zerograd: the array module has no dtype {dtype!r}")
    return found


def scatter_add_on_host(backend: Any, a: Any, indices: Any, values: Any) -> Any:
    """Return ``a`` with ``values`` added at ``indices``, through numpy's ``add.at`` on the host.

    Args:
        backend: The backend of ``a``.
        a: The array to add into (left unchanged).
        indices: An index, as :meth:`Backend.getitem` takes.
        values: The values, broadcastable to ``a[indices]``.

    Returns:
        A new array of ``backend``.
    """
    import numpy as np

    def host(v: Any) -> Any:
        return backend.to_numpy(v) if backend.owns(type(v)) else v

    items = indices if isinstance(indices, tuple) else (indices,)
    index = tuple(host(i) for i in items)
    out = np.array(backend.to_numpy(a), copy=True)
    np.add.at(out, index if isinstance(indices, tuple) else index[0], host(values))
    return backend.from_numpy(out)


_BINARY = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "divide": operator.truediv,
}


def compute(xp: Any, op: str, x1: Any, x2: Any) -> Any:
    """Return the standard function ``op`` of ``x1`` (and ``x2``) as a new array.

    Args:
        xp: The array API namespace of ``x1``.
        op: One of ``'add'``, ``'subtract'``, ``'multiply'``, ``'divide'``, ``'sqrt'``.
        x1: An array.
        x2: An array or a Python float; None for ``'sqrt'``.

    Returns:
        The result, computed with the array's operators (``xp.sqrt`` for ``'sqrt'``).

    Raises:
        ValueError: ``op`` is none of those names.
    """
    if op == "sqrt":
        return xp.sqrt(x1)
    check_in_place_op(op)
    return _BINARY[op](x1, x2)


def check_in_place_op(op: str) -> None:
    """Refuse an ``op`` that is none of :data:`~zerograd.backends.contract.IN_PLACE_OPS`.

    Raises:
        ValueError: naming the ops there are.
    """
    if op not in IN_PLACE_OPS:
        raise ValueError(
            f"zerograd: Backend.compute_into got op={op!r}; it takes one of {list(IN_PLACE_OPS)}"
        )


def writable_type(backend: Any, x: Any) -> bool:
    """Whether arrays of ``x``'s type can be written in place, asked once per type.

    An empty array of ``x``'s dtype is written into another one with ``[...] =``; an error
    (JAX's ``TypeError``) means the type is immutable. ``x`` itself is not touched.

    Args:
        backend: The backend of ``x``.
        x: An array.

    Returns:
        The answer for ``type(x)``, kept by ``backend``.
    """
    cache = backend.__dict__.get("_writable_types")
    if cache is None:  # not setdefault: it would build a dict on every call (per update)
        cache = backend.__dict__["_writable_types"] = {}
    known = cache.get(type(x))
    if known is None:
        xp = backend.xp
        try:
            empty = xp.zeros((0,), dtype=x.dtype, device=x.device)
            empty[...] = xp.zeros((0,), dtype=x.dtype, device=x.device)
            known = type(empty) is type(x)
        except Exception:  # noqa: BLE001 - any failure means "cannot be written in place"
            known = False
        cache[type(x)] = known
    return known
