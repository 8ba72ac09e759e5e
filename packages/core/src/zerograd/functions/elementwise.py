"""Elementwise math: exp, log, sin, cos, tanh, square, sqrt, clip."""

from __future__ import annotations

from typing import Any

from ..backends import backend_of, get_array_module
from ..function import Function
from ..variable import Variable

_floating: dict = {}  # dtype -> whether it is a floating (or complex) dtype


def _float(x: Any) -> Any:
    """``x`` when its dtype is floating; else ``x`` in its backend's default float dtype.

    numpy computes exp/sin/... of int8, uint8, int16 and bool data in float16 or float32;
    zerograd follows torch and the array API instead: integer data computes in the default
    float dtype (numpy's float64), and backends that refuse integer input get a float.
    """
    dtype = x.dtype
    ok = _floating.get(dtype)
    if ok is None:
        ok = _floating[dtype] = backend_of(x).dtype_kind(dtype) in "fc"
    if ok:
        return x
    backend = backend_of(x)
    return backend.astype(x, backend.asarray(0.0).dtype)


class Exp(Function):
    def forward(self, x: Any) -> Any:
        return get_array_module(x).exp(_float(x))

    def backward(self, gy: Variable) -> Variable:
        return gy * self.outputs[0]()


class Log(Function):
    def forward(self, x: Any) -> Any:
        return get_array_module(x).log(_float(x))

    def backward(self, gy: Variable) -> Variable:
        return gy / self.inputs[0]


# The gradients of sin, cos and tanh are fused into one Function each (one graph node
# instead of two or three); their own backward keeps every order differentiable.


class Sin(Function):
    def forward(self, x: Any) -> Any:
        return get_array_module(x).sin(_float(x))

    def backward(self, gy: Variable) -> Variable:
        return SinGrad()(self.inputs[0], gy)


class SinGrad(Function):
    """gx = gy * cos(x)."""

    def forward(self, x: Any, gy: Any) -> Any:
        return gy * get_array_module(x).cos(_float(x))

    def backward(self, g: Variable) -> tuple[Variable, Variable]:
        x, gy = self.inputs
        return -g * gy * sin(x), g * cos(x)


class Cos(Function):
    def forward(self, x: Any) -> Any:
        return get_array_module(x).cos(_float(x))

    def backward(self, gy: Variable) -> Variable:
        return CosGrad()(self.inputs[0], gy)


class CosGrad(Function):
    """gx = -gy * sin(x)."""

    def forward(self, x: Any, gy: Any) -> Any:
        return -gy * get_array_module(x).sin(_float(x))

    def backward(self, g: Variable) -> tuple[Variable, Variable]:
        x, gy = self.inputs
        return -g * gy * cos(x), -g * sin(x)


class Tanh(Function):
    def forward(self, x: Any) -> Any:
        return get_array_module(x).tanh(_float(x))

    def backward(self, gy: Variable) -> Variable:
        return TanhGrad()(self.outputs[0](), gy)


class TanhGrad(Function):
    """gx = gy * (1 - y * y), from the output y."""

    def forward(self, y: Any, gy: Any) -> Any:
        gx = gy * (1 - y * y)
        # numpy 1.x promotes 0-d float32 with a Python int to float64
        return gx if gx.dtype == gy.dtype else backend_of(gy).astype(gx, gy.dtype)

    def backward(self, g: Variable) -> tuple[Variable, Variable]:
        y, gy = self.inputs
        return -2 * g * gy * y, g * (1 - y * y)


class Square(Function):
    def forward(self, x: Any) -> Any:
        return x * x

    def backward(self, gy: Variable) -> Variable:
        return 2 * self.inputs[0] * gy


class Sqrt(Function):
    def forward(self, x: Any) -> Any:
        return get_array_module(x).sqrt(_float(x))

    def backward(self, gy: Variable) -> Variable:
        return gy / (2 * self.outputs[0]())


class Clip(Function):
    def __init__(self, x_min: Any, x_max: Any) -> None:
        self.x_min, self.x_max = x_min, x_max

    def forward(self, x: Any) -> Any:
        return get_array_module(x).clip(x, self.x_min, self.x_max)

    def backward(self, gy: Variable) -> Variable:
        x = self.inputs[0].data
        lo, hi = self.x_min, self.x_max
        if lo is None:  # one bound may be None, as in numpy.clip
            mask = x <= hi
        elif hi is None:
            mask = x >= lo
        else:
            mask = (x >= lo) & (x <= hi)
        return gy * backend_of(x).astype(mask, gy.dtype)


def exp(x: Any) -> Variable:
    """Elementwise e**x."""
    return Exp()(x)


def log(x: Any) -> Variable:
    """Elementwise natural logarithm."""
    return Log()(x)


def sin(x: Any) -> Variable:
    """Elementwise sine."""
    return Sin()(x)


def cos(x: Any) -> Variable:
    """Elementwise cosine."""
    return Cos()(x)


def tanh(x: Any) -> Variable:
    """Elementwise hyperbolic tangent."""
    return Tanh()(x)


def square(x: Any) -> Variable:
    """Elementwise x**2."""
    return Square()(x)


def sqrt(x: Any) -> Variable:
    """Elementwise square root."""
    return Sqrt()(x)


def clip(x: Any, x_min: Any, x_max: Any) -> Variable:
    """Limit values to ``[x_min, x_max]``; the gradient is zero where ``x`` was clipped.

    Either bound may be None (no limit on that side), as in ``numpy.clip``.

    Raises:
        TypeError: a bound is not a number, an array or None, or both are None.
    """
    for name, bound in (("x_min", x_min), ("x_max", x_max)):
        if (
            bound is not None
            and not isinstance(bound, (int, float))
            and not hasattr(bound, "dtype")
        ):
            raise TypeError(
                f"clip: {name} must be a number, an array or None, got {bound!r} "
                f"({type(bound).__name__})"
            )
    if x_min is None and x_max is None:
        raise TypeError("clip: give at least one of x_min and x_max (both are None)")
    return Clip(x_min, x_max)(x)
