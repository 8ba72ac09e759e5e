"""Arrays read back into a model: onto the parameter's backend and dtype, never into inf.

Weight files, state dicts and optimizer state dicts all end the same way: an array from a
file or another process becomes a parameter's (or its optimizer state's) new value, on the
parameter's backend and in its dtype. A float64 value beyond float32's range would become
inf there (numpy only warns) and poison every step after; :func:`fitted` refuses it.
"""

from __future__ import annotations

from typing import Any

from zerograd import Parameter
from zerograd.backends import Backend, as_array_of, as_numpy, backend_of, get_array_module

__all__ = ["fitted", "planned_dtypes", "planned_shapes", "sized_like", "unfit_shape"]


def fitted(a: Any, like: Any, name: str, op: str, *, private: bool = False) -> Any:
    """``a`` on ``like``'s backend, in ``like``'s dtype.

    Args:
        a: an array of any backend.
        like: the parameter's array: its backend and dtype are taken.
        name: what ``a`` is, for the error (``'l1/W'``, ``'l1.W.m'``).
        op: the operation, for the error (``'load_weights'``).
        private: ``a`` is the caller's own (read from a file just now), so it may be
            returned as it is when it fits already.

    Returns:
        The converted array; unless ``private``, always a new one (a backend's
        ``from_numpy`` may share memory), so that the model shares no memory with
        whoever passed ``a``.

    Raises:
        ValueError: a finite value of ``a`` would become inf in ``like``'s dtype.
    """
    b = backend_of(like)
    moved = as_array_of(a, b)
    if moved.dtype == like.dtype:
        return moved if private else b.astype(moved, like.dtype)
    if b.dtype_kind(moved.dtype) == "f" and b.dtype_kind(like.dtype) == "f":
        count = _beyond(b, moved, like.dtype)  # counted before the cast: nothing to silence
        if count:
            raise ValueError(
                f"{op}: {name} holds {count} finite value(s) beyond the range of "
                f"{like.dtype}; loading them into the {like.dtype} parameter would make "
                f"them inf. Nothing was changed: load into a model of dtype {moved.dtype}, "
                f"or rescale the values."
            )
    return b.astype(moved, like.dtype)


def _beyond(b: Backend, a: Any, dtype: Any) -> int:
    """How many finite values of the float array ``a`` become inf in the float ``dtype``.

    Those at least ``2**emax * (2 - eps / 2)`` in size: beyond the largest finite value by
    half its spacing or more, they round to inf (a value between rounds to that largest
    one). Counted without casting, as casting them makes numpy warn, and silencing it
    (``warnings.catch_warnings``) would swap every thread's warning filters.
    """
    info = b.xp.finfo(dtype)
    most, eps = float(info.max), float(info.eps)
    if most >= float(b.xp.finfo(a.dtype).max):  # a wider dtype: every finite value fits
        return 0
    top = most / (2 - eps) * (2 - eps / 2)  # (exact in Python floats for float16, float32)
    xp = get_array_module(a)
    over = xp.isfinite(a) & ((a >= top) | (a <= -top))
    return int(as_numpy(xp.count_nonzero(over)))


def planned_dtypes(layer: Any) -> dict[int, Any]:
    """``{id(parameter): dtype}`` for the parameters with no data yet whose layer fixes it.

    The dtype a first call would size each one in, from its layer's
    ``Layer.sizing_dtype()`` (``Linear``, ``Conv2d``, ``Deconv2d``: their ``dtype``); a
    parameter of a layer that returns None (``BatchNorm``) is left out, to take the dtype
    of what is loaded.

    Args:
        layer: a Layer (its whole tree is read).
    """
    planned: dict[int, Any] = {}
    for _, _, _, member in layer.walk():
        sizing_dtype = getattr(member, "sizing_dtype", None)
        dtype = None if sizing_dtype is None else sizing_dtype()
        if dtype is None:
            continue
        for _, p in member.named_members():
            if isinstance(p, Parameter) and p.data is None:
                planned.setdefault(id(p), dtype)
    return planned


def planned_shapes(layer: Any) -> dict[int, tuple[int | None, ...]]:
    """``{id(parameter): shape}`` for the parameters with no data yet whose layer fixes it.

    From each layer's ``Layer.sizing_shapes()``: None in the axes the first input decides.
    A parameter of a layer that gives none (``BatchNorm``, a user's layer) is left out.

    Args:
        layer: a Layer (its whole tree is read).
    """
    planned: dict[int, tuple[int | None, ...]] = {}
    for _, _, _, member in layer.walk():
        sizing_shapes = getattr(member, "sizing_shapes", None)
        if sizing_shapes is None:
            continue
        for attr, shape in sizing_shapes().items():
            p = getattr(member, attr, None)
            if isinstance(p, Parameter) and p.data is None:
                planned.setdefault(id(p), tuple(shape))
    return planned


def unfit_shape(shape: tuple, planned: tuple | None) -> str | None:
    """Why ``shape`` cannot be loaded into an unsized parameter planned as ``planned``.

    Args:
        shape: the shape given (from a file or a state dict).
        planned: the parameter's entry of :func:`planned_shapes`, or None (any shape).

    Returns:
        ``"expected (None, 3)"``-style text (None: any size on that axis), or None when
        ``shape`` fits.
    """
    if planned is None:
        return None
    shape = tuple(shape)
    if len(shape) == len(planned) and all(w is None or w == s for s, w in zip(shape, planned)):
        return None
    return f"expected {planned} (None: any size) as its layer's arguments say"


def sized_like(a: Any, backend: Backend, dtype: Any, name: str, op: str) -> Any:
    """``a`` on ``backend`` in ``dtype``, for a parameter that has no data yet.

    :func:`fitted` for a parameter with no array to take the backend and dtype from; a
    new array, never ``a`` itself.

    Raises:
        ValueError: a finite value of ``a`` would become inf in ``dtype``.
    """
    return fitted(a, backend.xp.zeros(0, dtype=backend.resolve_dtype(dtype)), name, op)
