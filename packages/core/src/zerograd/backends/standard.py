"""The defaults of :class:`~zerograd.backends.Backend`, written with array API standard calls.

Every function here returns a new array and never writes into an array it is given, so it
serves backends with immutable arrays too. Creation calls pass ``device=`` so an array
never lands on another device than its inputs.
"""

from __future__ import annotations

import operator
from typing import Any

from ..shapes import conv_outsize
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


def pad(xp: Any, x: Any, pad_width: Any, value: float) -> Any:
    """Return ``x`` with ``(before, after)`` blocks of ``value`` joined on each axis.

    Args:
        xp: The array API namespace of ``x``.
        x: The array.
        pad_width: One ``(before, after)`` pair per axis.
        value: What the padding holds.

    Returns:
        The padded array.
    """
    for axis, (before, after) in enumerate(pad_width):
        if not (before or after):
            continue
        parts = []
        for size in (before, None, after):
            if size is None:
                parts.append(x)
            elif size:
                shape = x.shape[:axis] + (size,) + x.shape[axis + 1 :]
                parts.append(xp.full(shape, value, dtype=x.dtype, device=x.device))
        x = xp.concat(parts, axis=axis)
    return x


def im2col(backend: Any, img: Any, k: tuple, s: tuple, p: tuple, pad_value: float) -> Any:
    """Return the patches (N, C, KH, KW, OH, OW): one strided slice per kernel offset, stacked.

    Args:
        backend: The backend of ``img``.
        img: The image batch (N, C, H, W).
        k: The kernel size, an ``(h, w)`` pair.
        s: The stride, a pair.
        p: The padding, a pair.
        pad_value: What the padding holds.

    Returns:
        The patches.
    """
    xp = backend.xp
    (kh, kw), (sh, sw), (ph, pw) = k, s, p
    n, c, h, w = img.shape
    oh, ow = conv_outsize(h, kh, sh, ph), conv_outsize(w, kw, sw, pw)
    if ph or pw:
        img = backend.pad(img, ((0, 0), (0, 0), (ph, ph), (pw, pw)), pad_value)
    windows = [
        img[:, :, j : j + sh * (oh - 1) + 1 : sh, i : i + sw * (ow - 1) + 1 : sw]
        for j in range(kh)
        for i in range(kw)
    ]
    return xp.reshape(xp.stack(windows, axis=2), (n, c, kh, kw, oh, ow))


def _spread(xp: Any, a: Any, axis: int, step: int) -> Any:
    """Put ``step - 1`` zeros after each element of ``a`` along ``axis`` (a is 4-D)."""
    if step == 1:
        return a
    a = xp.expand_dims(a, axis=axis + 1)
    zeros_shape = a.shape[: axis + 1] + (step - 1,) + a.shape[axis + 2 :]
    a = xp.concat([a, xp.zeros(zeros_shape, dtype=a.dtype, device=a.device)], axis=axis + 1)
    shape = a.shape[:axis] + (a.shape[axis] * step,) + a.shape[axis + 2 :]
    return xp.reshape(a, shape)


def col2im(backend: Any, col: Any, img_shape: tuple, k: tuple, s: tuple, p: tuple) -> Any:
    """Fold patches into an image, the adjoint of :func:`im2col`.

    Each offset's patches are spread, padded into place and summed.

    Args:
        backend: The backend of ``col``.
        col: The patches (N, C, KH, KW, OH, OW).
        img_shape: The image shape (N, C, H, W).
        k: The kernel size, an ``(h, w)`` pair.
        s: The stride, a pair.
        p: The padding, a pair.

    Returns:
        An array of ``img_shape``.
    """
    xp = backend.xp
    n, c, h, w = img_shape
    (kh, kw), (sh, sw), (ph, pw) = k, s, p
    oh, ow = col.shape[4], col.shape[5]
    full_h, full_w = h + 2 * ph + sh - 1, w + 2 * pw + sw - 1
    img = None
    for j in range(kh):
        for i in range(kw):
            part = _spread(xp, _spread(xp, col[:, :, j, i, :, :], 2, sh), 3, sw)
            part = backend.pad(
                part,
                ((0, 0), (0, 0), (j, full_h - j - oh * sh), (i, full_w - i - ow * sw)),
                0.0,
            )
            img = part if img is None else img + part
    return img[:, :, ph : h + ph, pw : w + pw]


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
    f = _BINARY.get(op)
    if f is None:
        raise ValueError(
            f"zerograd: Backend.compute_into got op={op!r}; it takes one of {list(IN_PLACE_OPS)}"
        )
    return f(x1, x2)


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


def softmax(xp: Any, x: Any, axis: int) -> Any:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (:meth:`Backend.softmax`)."""
    y = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return y / xp.sum(y, axis=axis, keepdims=True)


def cross_entropy_rows(xp: Any, x: Any, t: Any) -> Any:
    """``logsumexp(x[i]) - x[i, t[i]]`` per row (:meth:`Backend.cross_entropy_rows`)."""
    m = xp.max(x, axis=1, keepdims=True)
    lse = m + xp.log(xp.sum(xp.exp(x - m), axis=1, keepdims=True))
    rows = xp.arange(x.shape[0], device=getattr(x, "device", None))  # numpy 1.26: none
    return -((x - lse)[rows, t])
