"""Matrix product with numpy's ``@`` semantics (1-D, 2-D and batched N-D)."""

from __future__ import annotations

from typing import Any

from ..function import Function
from ..variable import Variable
from .broadcast import sum_to
from .shape import reshape, transpose


def _swap_last(v: Variable) -> Variable:
    axes = list(range(v.ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return transpose(v, axes)


class MatMul(Function):
    """Matrix product ``x @ w`` with numpy's rules; used by :func:`matmul`."""

    def forward(self, x: Any, w: Any) -> Any:
        """Return ``x @ w``.

        Args:
            x: The first array (at least 1-d).
            w: The second array (at least 1-d).

        Returns:
            The product array.

        Raises:
            ValueError: An input is 0-d, the inner axes differ, or the batch axes do not
                broadcast.
        """
        if x.ndim == 0 or w.ndim == 0:
            raise ValueError(
                f"matmul: inputs must have at least 1 dimension, got shapes {x.shape} and "
                f"{w.shape}; use * for scalars."
            )
        k_x = x.shape[-1]
        k_w = w.shape[-2] if w.ndim > 1 else w.shape[0]
        if k_x != k_w:
            raise ValueError(
                f"matmul: shapes {x.shape} and {w.shape} do not line up: the last axis of the "
                f"first ({k_x}) must equal the {'second-to-last' if w.ndim > 1 else 'only'} "
                f"axis of the second ({k_w})."
            )
        try:
            return x @ w
        except ValueError:
            if x.ndim > 2 or w.ndim > 2:
                raise ValueError(
                    f"matmul: the batch axes of shapes {x.shape} and {w.shape} do not "
                    f"broadcast: {x.shape[:-2]} against {w.shape[:-2]} (every axis before the "
                    f"last two must be equal or 1, aligned from the right)."
                ) from None
            raise

    def backward(self, gy: Variable) -> tuple[Variable, Variable]:
        """Return the gradients of ``x`` and ``w``, in their shapes.

        Args:
            gy: The output's gradient.

        Returns:
            A tuple ``(gx, gw)``.
        """
        x, w = self.inputs
        if x.ndim == 1 and w.ndim == 1:
            return gy * w, gy * x
        x2 = reshape(x, (1,) + x.shape) if x.ndim == 1 else x
        w2 = reshape(w, w.shape + (1,)) if w.ndim == 1 else w
        gy2 = gy
        if x.ndim == 1:
            gy2 = reshape(gy2, gy.shape[:-1] + (1,) + gy.shape[-1:])
        if w.ndim == 1:
            gy2 = reshape(gy2, gy2.shape + (1,))
        gx = sum_to(gy2 @ _swap_last(w2), x2.shape)
        gw = sum_to(_swap_last(x2) @ gy2, w2.shape)
        return reshape(gx, x.shape), reshape(gw, w.shape)


def matmul(x: Any, W: Any) -> Variable:  # noqa: N803 (DeZero's parameter name)
    """Compute the matrix product ``x @ W`` with numpy's rules for 1-D and batched inputs.

    Args:
        x: A Variable or array (at least 1-d).
        W: A Variable or array (at least 1-d).

    Returns:
        The product Variable.

    Raises:
        ValueError: An input is 0-d, the inner axes differ, or the batch axes do not
            broadcast.

    Examples:
        >>> import numpy as np
        >>> matmul(np.ones((2, 3)), np.ones((3, 4))).shape
        (2, 4)
    """
    return MatMul()(x, W)


def dot(x: Any, W: Any) -> Variable:  # noqa: N803
    """Compute ``x @ W``; the same as :func:`matmul` (DeZero's name).

    Args:
        x: A Variable or array (at least 1-d).
        W: A Variable or array (at least 1-d).

    Returns:
        The product Variable.

    Raises:
        ValueError: As for :func:`matmul`.
    """
    return MatMul()(x, W)
