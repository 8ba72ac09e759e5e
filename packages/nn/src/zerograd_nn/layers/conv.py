"""Convolution layers: ``Conv2d`` and the transposed ``Deconv2d``."""

from __future__ import annotations

from typing import Any

from zerograd import Parameter, Variable
from zerograd.checks import conv_args, pair
from zerograd.typing import ArrayLike, Pair

from .. import functional as F
from .. import initializers as _init
from .argument_order import check_conv_first_input
from .base import Layer
from .pytorch_names import CONV_KEYWORDS, refuses_pytorch_keywords
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


class _ConvBase(Layer):
    """Shared set-up of Conv2d and Deconv2d (lazy ``in_channels``, undone if the call fails).

    ``initialW`` / ``initial_bias`` work as in :class:`Linear`; initializers that scale by
    fans see ``fan_in = in_channels * KH * KW`` and ``fan_out = out_channels * KH * KW``.

    Args:
        out_channels: the number of output channels.
        kernel_size: the kernel size, an int or a pair (KH, KW).
        stride: the stride, an int or a pair.
        pad: the zero padding, an int or a pair.
        nobias: no bias ``b`` when True.
        dtype: the floating-point dtype of the parameters.
        in_channels: the number of input channels; None to take it from the first input.
        initialW: how to fill ``W`` (initializer, number or array).
        initial_bias: how to fill ``b`` (initializer, number or array).

    The arguments are in DeZero's order; a call in PyTorch's order is refused, naming the
    zerograd spelling (see :class:`Conv2d`).

    Raises:
        ValueError: a size, kernel, stride or pad that is not a positive (or, for pad,
            non-negative) int or pair; at the first call, an input that shows PyTorch's
            argument order (above).
        TypeError: a non-bool ``nobias`` (an int: PyTorch's order), a non-floating
            ``dtype`` or one of PyTorch's keywords.
    """

    @refuses_pytorch_keywords(CONV_KEYWORDS)
    def __init__(
        self,
        out_channels: int,
        kernel_size: Pair,
        stride: Pair = 1,
        pad: Pair = 0,
        nobias: bool = False,
        dtype: Any = "float32",
        in_channels: int | None = None,
        *,
        initialW: Any = None,
        initial_bias: Any = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        size_arg(self, "out_channels", out_channels)
        size_arg(self, "in_channels", in_channels, optional=True)
        check_settings(self, nobias, dtype, (out_channels, kernel_size, stride, pad))
        conv_args(name, kernel_size, stride, pad)
        self._initialW = _init.check(initialW, name, "initialW")
        initial_bias = _init.check(initial_bias, name, "initial_bias")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.pad, self.dtype = kernel_size, stride, pad, dtype
        self.W = Parameter(None, name="W")
        if in_channels is not None:
            self._init_W()
        self.b = None if nobias else bias_param(self, initial_bias, out_channels, dtype)

    def _w_shape(self, c: int | None, oc: int, kh: int, kw: int) -> tuple[int | None, ...]:
        raise NotImplementedError

    def _init_W(self, like: Any = None) -> None:
        c, oc = self.in_channels, self.out_channels
        kh, kw = pair(self.kernel_size)
        shape = self._w_shape(c, oc, kh, kw)
        if self._initialW is None:
            scale = (1 / (c * kh * kw)) ** 0.5
            self.W.data = randn(backend_like(like), shape, self.dtype, scale)
        else:  # fans as for a convolution, whatever the kernel's layout
            fans = (c * kh * kw, oc * kh * kw)
            init, name = self._initialW, type(self).__name__
            self.W.data = _init.generate(init, shape, self.dtype, like, name, "initialW", fans)

    def sizing_dtype(self) -> Any:
        """``dtype``: what ``W`` is drawn in at the first call, or cast to when loaded unsized."""
        return self.dtype

    def sizing_shapes(self) -> dict[str, tuple[int | None, ...]]:
        """``W`` in the layout of the class, in_channels from the first input when not given."""
        kh, kw = pair(self.kernel_size)
        return {"W": self._w_shape(self.in_channels, self.out_channels, kh, kw)}

    def _conv(self, x: Any) -> Variable:
        raise NotImplementedError

    def extra_repr(self) -> str:
        text = (
            f"in={self.in_channels}, out={self.out_channels}, kernel={self.kernel_size}, "
            f"stride={self.stride}, pad={self.pad}"
        )
        return text + (", nobias=True" if self.b is None else "")

    def forward(self, x: ArrayLike) -> Variable:
        """Apply the convolution, sizing ``W`` from ``x``'s channel axis on the first call.

        Args:
            x: input of shape (N, C, H, W).

        Returns:
            The output, of shape (N, out_channels, OH, OW).
        """
        x = layer_input(self, x, 2, "4-D (N, C, H, W)")
        if self.W.data is None and x.ndim == 4:
            check_conv_first_input(self, tuple(x.shape))
        return sized_call(self, x, "in_channels", 1, "axis 1 of x", self._init_W, self._conv)


class Conv2d(_ConvBase):
    """2-D convolution layer; ``W`` is (out_channels, in_channels, KH, KW).

    Takes the arguments of its base class (``out_channels``, ``kernel_size``, ``stride``,
    ``pad``, ``nobias``, ``dtype``, ``in_channels``, ``initialW``, ``initial_bias``).

    The order is DeZero's: PyTorch's ``nn.Conv2d(1, 16, 3)`` is ``Conv2d(16, 3,
    in_channels=1)``. A call in PyTorch's order is refused with that spelling in the
    message: an int ``nobias`` (PyTorch's ``padding``) at once; at the first call, while
    ``in_channels`` is read from the input, a kernel larger than the padded input, or an
    input with exactly ``out_channels`` channels together with a kernel over 7 or a stride
    over 2 (what ``nn.Conv2d(in, out, kernel)`` read as ``(out_channels, kernel_size,
    stride)`` leaves). Giving ``in_channels`` says the order is DeZero's and lifts the
    last check. PyTorch's keywords (``padding=``, ``bias=``) are refused likewise.

    Examples:
        >>> import numpy as np
        >>> Conv2d(8, 3, pad=1)(np.ones((1, 3, 5, 5), dtype=np.float32)).shape
        (1, 8, 5, 5)
    """

    in_channels = InputSize(1)

    def _w_shape(self, c: int | None, oc: int, kh: int, kw: int) -> tuple[int | None, ...]:
        return (oc, c, kh, kw)

    def _conv(self, x: Any) -> Variable:
        return F.conv2d(x, self.W, self.b, self.stride, self.pad)


class Deconv2d(_ConvBase):
    """2-D transposed convolution layer; ``W`` is (in_channels, out_channels, KH, KW).

    Takes the same arguments as :class:`Conv2d`, in the same order: PyTorch's
    ``nn.ConvTranspose2d(16, 8, 4)`` is ``Deconv2d(8, 4, in_channels=16)``. Conv2d's checks
    for PyTorch's order apply, but for the kernel size (a transposed convolution's kernel
    may be larger than its input).

    Examples:
        >>> import numpy as np
        >>> Deconv2d(2, 2, stride=2)(np.ones((1, 3, 4, 4), dtype=np.float32)).shape
        (1, 2, 8, 8)
    """

    in_channels = InputSize(0)

    def _w_shape(self, c: int | None, oc: int, kh: int, kw: int) -> tuple[int | None, ...]:
        return (c, oc, kh, kw)

    def _conv(self, x: Any) -> Variable:
        return F.deconv2d(x, self.W, self.b, self.stride, self.pad)


__all__ = ["Conv2d", "Deconv2d"]
