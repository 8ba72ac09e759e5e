"""Matrix product with numpy's ``@`` semantics (1-D, 2-D and batched N-D)."""

from __future__ import annotations

import operator
from typing import Any

from ..backends import backend_of
from ..function import Function
from ..variable import Constant, Variable
from .ops import op, variable_method


class MatMul(Function):
    """Compute the matrix product ``x @ W`` with numpy's rules for 1-D and batched inputs.

    Raises:
        ValueError: An input is 0-d, the inner axes differ, or the batch axes do not
            broadcast.
    """

    _doc_sections = """
        Args:
            x: A Variable or array (at least 1-d).
            W: A Variable or array (at least 1-d).

        Returns:
            The product Variable.
        """

    vjp_reads_outputs = False

    def forward(self, x: Any, W: Any) -> Any:  # noqa: N803 (DeZero's name)
        """Return ``x @ W``.

        Args:
            x: The first array (at least 1-d).
            W: The second array (at least 1-d).

        Returns:
            The product array.

        Raises:
            ValueError: An input is 0-d, the inner axes differ, or the batch axes do not
                broadcast.
        """
        if x.ndim == 0 or W.ndim == 0 or x.shape[-1] != W.shape[-2 if W.ndim > 1 else 0]:
            raise matmul_shape_error(tuple(x.shape), tuple(W.shape))
        try:
            return x @ W
        except ValueError:
            error = matmul_shape_error(tuple(x.shape), tuple(W.shape))
            if error is None:
                raise
            raise error from None
        except Exception:
            if x.dtype == W.dtype:
                raise
            return matmul_promoted(x, W)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return the gradients of ``x`` and ``w``, in their shapes."""
        x, w = xs
        a, b = self.inputs
        need_x, need_w = type(a) is not Constant, type(b) is not Constant
        if x.dtype != w.dtype and not isinstance(gy, Variable):
            mm = matmul_promoted  # two dtypes, arrays: PyTorch's @ promotes none
        else:
            mm = operator.matmul
        if x.ndim == 2 and w.ndim == 2:  # the common case: two products, nothing else
            return (mm(gy, w.T) if need_x else None), (mm(x.T, gy) if need_w else None)
        if x.ndim == 1 and w.ndim == 1:  # gy is 0-d
            return (gy * w if need_x else None), (gy * x if need_w else None)
        # 1-d operands get the axis numpy's matmul adds (and drops from the result) back
        x2 = xp.reshape(x, (1, *x.shape)) if x.ndim == 1 else x
        w2 = xp.reshape(w, (*w.shape, 1)) if w.ndim == 1 else w
        if x.ndim == 1:
            gy = xp.reshape(gy, (*gy.shape[:-1], 1, gy.shape[-1]))
        if w.ndim == 1:
            gy = xp.reshape(gy, (*gy.shape, 1))
        gx = gw = None
        # a product over one element is an outer product, which broadcasting computes
        # faster than a stack of one-element matmuls (per-sample weight gradients under
        # vmap: numpy's stacked matmul is slow there)
        if need_x:  # batch axes broadcast in the product are summed back
            wt = xp.matrix_transpose(w2)
            g = gy * wt if w2.shape[-1] == 1 else mm(gy, wt)
            gx = xp.reshape(xp.sum_to(g, x2.shape), x.shape)
        if need_w:
            if x2.shape[-2] == 1:  # (gy^T * x)^T: the long axis innermost, as numpy likes
                g = xp.matrix_transpose(xp.matrix_transpose(gy) * x2)
            else:
                g = mm(xp.matrix_transpose(x2), gy)
            gw = xp.reshape(xp.sum_to(g, w2.shape), w.shape)
        return gx, gw


def matmul_promoted(a: Any, b: Any) -> Any:
    """``a @ b`` of two arrays of different dtypes, in the dtype the two promote to.

    The standard's ``@`` promotes, and numpy's does; PyTorch's refuses two dtypes. The
    namespace's ``matmul`` promotes the standard's dtypes there (array-api-compat); this
    casts both to ``result_type`` first, so float16 with float32 works too.

    Raises:
        TypeError: the library has no common dtype for the two, or no product in it.
    """
    backend = backend_of(a)
    xp = backend.xp
    try:
        dtype = xp.result_type(a.dtype, b.dtype)
        return xp.matmul(backend.astype(a, dtype), backend.astype(b, dtype))
    except Exception as e:
        names = [str(d).rsplit(".", 1)[-1] for d in (a.dtype, b.dtype)]
        raise TypeError(
            f"matmul: {backend.name} cannot multiply {names[0]} by {names[1]} ({e}); convert "
            f"one operand to the other's dtype first (backend_of(a).astype(a, dtype))"
        ) from None


def matmul_shape_error(x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> ValueError | None:
    """The error matmul gives for operands of these shapes, or None when they fit.

    One message for the forward and for vmap's batching rule, which checks one sample's
    shapes, so that the error names the shapes the function given to vmap sees.
    """
    if not x_shape or not w_shape:
        return ValueError(
            f"matmul: inputs must have at least 1 dimension, got shapes {x_shape} and "
            f"{w_shape}; use * for scalars."
        )
    k_x, k_w = x_shape[-1], w_shape[-2 if len(w_shape) > 1 else 0]
    if k_x != k_w:
        return ValueError(
            f"matmul: shapes {x_shape} and {w_shape} do not line up: the last axis of the "
            f"first ({k_x}) must equal the "
            f"{'second-to-last' if len(w_shape) > 1 else 'only'} axis of the second ({k_w})."
        )
    bx, bw = x_shape[:-2], w_shape[:-2]
    if any(a != b and 1 not in (a, b) for a, b in zip(reversed(bx), reversed(bw))):
        return ValueError(
            f"matmul: the batch axes of shapes {x_shape} and {w_shape} do not broadcast: "
            f"{bx} against {bw} (every axis before the last two must be equal or 1, aligned "
            f"from the right)."
        )
    return None


matmul = op(
    MatMul,
    "matmul",
    methods=("matmul", "dot", "__matmul__"),
    example=("matmul(np.ones((2, 3)), np.ones((3, 4))).shape", "(2, 4)"),
    in_vjp=True,
)
dot = op(MatMul, "dot", doc="Compute ``x @ W``; the same as :func:`matmul` (DeZero's name).")


@variable_method("__rmatmul__")
def _rmatmul(self: Variable, other: Any) -> Variable:
    return MatMul()(other, self)


# literal, so that type checkers see the names (a test checks it against the ops defined here)
__all__ = [
    "matmul",
    "dot",
    "MatMul",
]
