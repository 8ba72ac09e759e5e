"""Batch normalization, with running statistics kept as Parameters."""

from __future__ import annotations

from typing import Any

from zerograd import Parameter, Variable
from zerograd.backends import backend_of, device_of, get_array_module
from zerograd.typing import ArrayLike
from zerograd.utils import data_of

from .. import functional as F
from .. import initializers as _init
from .base import Layer
from .pytorch_names import BATCHNORM_KEYWORDS, refuses_pytorch_keywords
from .setup import layer_input, place, undone_on_error


class BatchNorm(Layer):
    """Batch normalization over channels; sized at the first call that succeeds.

    ``avg_mean`` and ``avg_var`` are Parameters too, so weight files keep them, but they
    never get gradients (optimizers skip them). Chainer's ``initial_gamma`` (default 1) and
    ``initial_beta`` (default 0) take an initializer, a number or an array of the channel count.

    It takes no size: PyTorch's ``nn.BatchNorm2d(3)`` is ``BatchNorm()``. A size and
    PyTorch's keywords (``num_features=``, ``momentum=``, ``eps=``, ...) are refused, naming
    zerograd's spelling.

    Args:
        initial_gamma: how to fill the scale ``gamma``.
        initial_beta: how to fill the shift ``beta``.

    Raises:
        TypeError: a positional argument, or one of PyTorch's keywords; (when called) a
            first batch of integers or bools, whose dtype the parameters would take.
    """

    @refuses_pytorch_keywords(BATCHNORM_KEYWORDS)
    def __init__(self, *sizes: Any, initial_gamma: Any = None, initial_beta: Any = None) -> None:
        if sizes:
            raise TypeError(
                f"BatchNorm: takes no size, got {sizes}: the channel count is read from the "
                f"first batch (axis 1). PyTorch's nn.BatchNorm2d({', '.join(map(repr, sizes))}) "
                f"is BatchNorm() here."
            )
        super().__init__()
        self._initializers = {
            "gamma": _init.check(initial_gamma, "BatchNorm", "initial_gamma"),
            "beta": _init.check(initial_beta, "BatchNorm", "initial_beta"),
        }
        self.avg_mean = Parameter(None, name="avg_mean")
        self.avg_var = Parameter(None, name="avg_var")
        self.gamma = Parameter(None, name="gamma")
        self.beta = Parameter(None, name="beta")

    def _init_params(self, x: Any) -> None:
        data = data_of(x)
        if backend_of(data).dtype_kind(data.dtype) in ("i", "u", "b"):
            raise TypeError(
                f"BatchNorm: the first batch has dtype {data.dtype}, but the layer's "
                f"parameters and running statistics take the first batch's dtype, which must "
                f"be floating point; give x.astype('float32')."
            )
        xp, device, d, dtype = get_array_module(data), device_of(data), x.shape[1], x.dtype
        for p, fill in ((self.avg_mean, 0), (self.avg_var, 1), (self.gamma, 1), (self.beta, 0)):
            if p.data is not None:
                continue
            value = self.__dict__.get("_initializers", {}).get(p.name)
            if value is None:
                p.data = (xp.ones if fill else xp.zeros)(d, dtype=dtype, device=device)
            else:
                key = f"initial_{p.name}"
                p.data = _init.generate(value, (d,), dtype, x, "BatchNorm", key)

    def extra_repr(self) -> str:
        return f"size={None if self.gamma.data is None else self.gamma.shape[0]}"

    def forward(self, x: ArrayLike) -> Variable:
        """Normalize ``x`` (batch statistics in train mode, running averages in eval mode).

        Args:
            x: input of shape (N, C) or (N, C, ...).

        Returns:
            The normalized, scaled and shifted output, of ``x``'s shape.
        """
        x = layer_input(self, x, 2, "(N, C) or (N, C, ...)")
        params = (self.avg_mean, self.avg_var, self.gamma, self.beta)
        if all(p.data is not None for p in params):
            return F.batch_norm(x, self.gamma, self.beta, self.avg_mean, self.avg_var)
        with undone_on_error(self, (), params):
            self._init_params(x)
            place(self, params)
            return F.batch_norm(x, self.gamma, self.beta, self.avg_mean, self.avg_var)


__all__ = ["BatchNorm"]
