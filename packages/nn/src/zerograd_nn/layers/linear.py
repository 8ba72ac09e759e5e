"""The fully connected layer."""

from __future__ import annotations

from typing import Any

from zerograd import Parameter, Variable
from zerograd.typing import ArrayLike

from .. import functional as F
from .. import initializers as _init
from .base import Layer
from .pytorch_names import LINEAR_KEYWORDS, refuses_pytorch_keywords
from .setup import (
    InputSize,
    backend_like,
    bias_param,
    check_settings,
    layer_input,
    randn,
    size_arg,
    sized_call,
)


class Linear(Layer):
    """Fully connected layer ``y = x @ W + b``; ``in_size`` is found at the first call if None.

    ``W`` (in_size, out_size) starts as ``randn * sqrt(1 / in_size)``, ``b`` as zeros, unless
    Chainer's ``initialW`` / ``initial_bias`` say otherwise: an initializer from
    :mod:`zerograd_nn.initializers`, a number (every element) or an array of the
    parameter's shape (copied). A first call that fails leaves the layer unsized, so the
    next call sizes it from its own input.

    Args:
        out_size: the number of output features.
        nobias: no bias ``b`` when True.
        dtype: the floating-point dtype of the parameters.
        in_size: the number of input features; None to take it from the first input.
        initialW: how to fill ``W`` (initializer, number or array).
        initial_bias: how to fill ``b`` (initializer, number or array).

    The arguments are DeZero's, in DeZero's order: PyTorch's ``nn.Linear(2, 10)`` is
    ``Linear(10, in_size=2)``. An int ``nobias`` (``Linear(2, 10)``) and PyTorch's keywords
    (``in_features=``, ``bias=``) are refused with that spelling in the message.

    Raises:
        ValueError: a size that is not a positive int.
        TypeError: a non-bool ``nobias`` (an int: PyTorch's order), a non-floating ``dtype``
            or one of PyTorch's keywords.

    Examples:
        >>> from zerograd_nn import initializers as I
        >>> Linear(3, in_size=4, initialW=I.HeNormal(), initial_bias=0.1).b.data
        array([0.1, 0.1, 0.1], dtype=float32)
    """

    in_size = InputSize(0)  # W is (in_size, out_size)

    @refuses_pytorch_keywords(LINEAR_KEYWORDS)
    def __init__(
        self,
        out_size: int,
        nobias: bool = False,
        dtype: Any = "float32",
        in_size: int | None = None,
        *,
        initialW: Any = None,
        initial_bias: Any = None,
    ) -> None:
        super().__init__()
        size_arg(self, "out_size", out_size)
        size_arg(self, "in_size", in_size, optional=True)
        check_settings(self, nobias, dtype, (out_size,))
        self._initialW = _init.check(initialW, "Linear", "initialW")
        initial_bias = _init.check(initial_bias, "Linear", "initial_bias")
        self.in_size, self.out_size, self.dtype = in_size, out_size, dtype
        self.W = Parameter(None, name="W")
        if in_size is not None:
            self._init_W()
        self.b = None if nobias else bias_param(self, initial_bias, out_size, dtype)

    def _init_W(self, like: Any = None) -> None:
        i, o = self.in_size, self.out_size
        if self._initialW is None:
            self.W.data = randn(backend_like(like), (i, o), self.dtype, (1 / i) ** 0.5)
        else:
            init, name = self._initialW, "Linear"
            self.W.data = _init.generate(init, (i, o), self.dtype, like, name, "initialW")

    def sizing_dtype(self) -> Any:
        """``dtype``: what ``W`` is drawn in at the first call, or cast to when loaded unsized."""
        return self.dtype

    def sizing_shapes(self) -> dict[str, tuple[int | None, ...]]:
        """``W`` is (in_size, out_size), in_size from the first input when not given."""
        return {"W": (self.in_size, self.out_size)}

    def extra_repr(self) -> str:
        return f"in={self.in_size}, out={self.out_size}" + (
            ", nobias=True" if self.b is None else ""
        )

    def forward(self, x: ArrayLike) -> Variable:
        """Apply the layer, sizing ``W`` from ``x``'s last axis on the first call.

        Args:
            x: input of shape (N, in_size) or (N, ..., in_size).

        Returns:
            The output, of shape (N, ..., out_size).
        """
        x = layer_input(self, x, 1, "(N, in_size) or (N, ..., in_size)")
        return sized_call(self, x, "in_size", -1, "the last axis of x", self._init_W, self._linear)

    def _linear(self, x: Any) -> Variable:
        return F.linear(x, self.W, self.b)


__all__ = ["Linear"]
