"""Affine maps and lookups: linear (fused), linear_simple, embed_id."""

from __future__ import annotations

import math
from typing import Any

from zerograd import Function, Variable, as_variable
from zerograd.backends import backend_of, get_array_module
from zerograd.func import batch_values
from zerograd.functions import get_item, matmul
from zerograd.functions.linalg import matmul_promoted
from zerograd.functions.ops import defines
from zerograd.typing import ArrayLike
from zerograd.utils import data_of, size_of

from .arrays import add_into, array_arg, int_bounds, needs_grad
from .pytorch_names import LINEAR_KEYWORDS, refuses_pytorch_keywords


def _refuse_unbatched(op: str, x: Any, W: Any) -> None:
    """Refuse x of fewer than 2 axes for a 2-D W, naming the missing batch axis."""
    if x.ndim < 2 and W.ndim == 2:  # PyTorch's Linear takes one example as (I,)
        raise _unbatched_error(op, tuple(x.shape), tuple(W.shape))


def _unbatched_error(op: str, x_shape: tuple, w_shape: tuple) -> ValueError:
    return ValueError(
        f"{op}: x of shape {x_shape} has no batch axis; expected x (N, ..., I) for W of shape "
        f"{w_shape}: pass one example as x.reshape(1, -1)."
    )


def linear_shape_error(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], b_shape: tuple[int, ...] | None = None
) -> ValueError | None:
    """The error :func:`linear` gives for operands of these shapes, or None when they fit.

    One message for the forward and for vmap's batching rule, which checks one sample's
    shapes (the ones the function given to vmap sees).
    """
    if len(x_shape) < 2 or len(w_shape) != 2 or x_shape[-1] != w_shape[0]:
        if len(x_shape) < 2 and len(w_shape) == 2:
            return _unbatched_error("linear", x_shape, w_shape)
        return ValueError(
            f"linear: x of shape {x_shape} and W of shape {w_shape} do not fit; expected x "
            f"(N, ..., I) and W (I, O) with the same I."
        )
    if b_shape is not None and b_shape not in ((w_shape[1],), (1, w_shape[1])):
        return ValueError(
            f"linear: b of shape {b_shape} does not fit W of shape {w_shape}; expected "
            f"({w_shape[1]},), one bias per output."
        )
    return None


class Linear(Function):
    """``x @ W + b`` in one graph node (``b`` optional)."""

    vjp_reads_outputs = False

    def forward(self, x: Any, W: Any, b: Any = None) -> Any:
        if (
            x.ndim < 2
            or W.ndim != 2
            or x.shape[-1] != W.shape[0]
            or (b is not None and tuple(b.shape) not in ((W.shape[1],), (1, W.shape[1])))
        ):
            raise linear_shape_error(
                tuple(x.shape), tuple(W.shape), None if b is None else tuple(b.shape)
            )
        return _affine(x, W, b)

    def kernel(self, x: Any, W: Any, b: Any = None) -> Any:
        return _affine  # what forward computes once its checks passed, which shapes decide

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> tuple[Any, ...]:
        """Return ``(gy @ W.T, x.T @ gy, sum_to(gy, b.shape))``; None for raw operands."""
        x, W = xs[0], xs[1]
        inputs = self.inputs
        if x.dtype != W.dtype and not isinstance(gy, Variable):
            mm = matmul_promoted  # the namespace's matmul may promote neither (float16)
        else:
            mm = xp.matmul
        gx = mm(gy, W.T) if needs_grad(inputs[0]) else None
        gW = None
        if needs_grad(inputs[1]):
            if x.ndim > 2:  # (N, ..., I): sum the weight gradient over every leading axis
                # the row count spelled out: -1 is ambiguous for an empty x (I or O of 0)
                rows = math.prod(x.shape[:-1])
                x, gy2 = xp.reshape(x, (rows, x.shape[-1])), xp.reshape(gy, (rows, gy.shape[-1]))
            else:
                gy2 = gy
            gW = mm(x.T, gy2)
        if len(xs) == 2:
            return gx, gW
        b = inputs[2]
        return gx, gW, xp.sum_to(gy, b.shape) if needs_grad(b) else None


def _affine(x: Any, W: Any, b: Any = None) -> Any:
    """``x @ W + b`` on arrays, the bias added into matmul's fresh result (Linear's kernel)."""
    try:
        y = get_array_module(x).matmul(x, W)
    except Exception:
        if x.dtype == W.dtype:
            raise
        y = matmul_promoted(x, W)  # PyTorch's matmul promotes no float16
    return y if b is None else add_into(y, b)


@defines(Linear)
@refuses_pytorch_keywords(LINEAR_KEYWORDS)
def linear(x: ArrayLike, W: ArrayLike, b: ArrayLike | None = None) -> Variable:
    """``x @ W + b`` for x (N, I) (or (N, ..., I)), W (I, O), b (O,) or None.

    Args:
        x: the input, shape (N, I) or (N, ..., I).
        W: the weights, shape (I, O).
        b: the bias, shape (O,), or None.

    Returns:
        A Variable of shape (N, O) (or (N, ..., O)).

    Examples:
        >>> import numpy as np
        >>> linear(np.ones((2, 3)), np.ones((3, 4))).shape
        (2, 4)
    """
    if b is None or (isinstance(b, Variable) and b.data is None):
        return Linear()(x, W)
    return Linear()(x, W, b)


@defines()
def linear_simple(x: ArrayLike, W: ArrayLike, b: ArrayLike | None = None) -> Variable:
    """``matmul(x, W) + b`` from two functions (the book's first version).

    Args:
        x: the input, shape (N, I) or (N, ..., I).
        W: the weights, shape (I, O).
        b: the bias, shape (O,), or None.

    Returns:
        A Variable of shape (N, O) (or (N, ..., O)).

    Raises:
        ValueError: ``x`` has no batch axis (one example of shape (I,): pass
            ``x.reshape(1, -1)``), as :func:`linear` says.
    """
    xa = array_arg("linear_simple", "x", x)
    _refuse_unbatched("linear_simple", xa, array_arg("linear_simple", "W", W, like=xa))
    t = matmul(x, W)
    if b is None:
        return t
    return t + b


@defines()
def embed_id(x: ArrayLike, W: ArrayLike) -> Variable:
    """Rows of ``W`` picked by integer ids ``x`` (any shape): ``W[x]``.

    Args:
        x: integer ids in ``0..len(W) - 1`` (an array, a Variable or a list).
        W: the table, shape (in_size, out_size).

    Returns:
        A Variable of shape ``x.shape + (out_size,)``; gradients flow to ``W`` only.

    Raises:
        TypeError: ``x`` is not integer.
        ValueError: ``W`` is not 2-D, or an id is negative or ``>= len(W)`` (a negative id
            would silently pick a row from the end).

    Examples:
        >>> import numpy as np
        >>> embed_id(np.array([2, 0]), np.arange(6.0).reshape(3, 2)).data
        array([[4., 5.],
               [0., 1.]])
    """
    W = as_variable(W)
    ids = data_of(x)
    if W.data is not None and (
        isinstance(ids, (int, list, tuple)) or getattr(ids, "ndim", None) == 0
    ):
        try:  # a backend's 0-d array stays as it is
            backend_of(ids)
        except TypeError:  # lists, Python and numpy scalars (np.int64 from a loop over ids)
            ids = backend_of(W.data).asarray(ids)  # on W's backend
    if W.ndim != 2:
        raise ValueError(f"embed_id: W must be 2-D (in_size, out_size), got shape {tuple(W.shape)}")
    backend = backend_of(ids) if hasattr(ids, "dtype") else None
    if backend is None or backend.dtype_kind(ids.dtype) not in "iu":
        got = f"dtype {ids.dtype}" if backend is not None else type(ids).__name__
        raise TypeError(
            f"embed_id: ids x must be integers, got {got}; convert them with x.astype('int64')."
        )
    if size_of(ids):
        lo, hi = int_bounds(batch_values(ids))  # inside vmap: every sample's ids
        n = W.shape[0]
        if lo < 0 or hi >= n:
            raise ValueError(
                f"embed_id: id {lo if lo < 0 else hi} is out of range for W of shape "
                f"{tuple(W.shape)}: valid ids are 0..{n - 1} (EmbedID's in_size is {n})."
            )
    return get_item(W, ids)


# literal, so that type checkers see the names (a test checks it against the ops defined here)
__all__ = [
    "linear",
    "linear_simple",
    "embed_id",
    "Linear",
]
