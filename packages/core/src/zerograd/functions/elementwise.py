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
    """Elementwise ``exp(x)``; used by :func:`exp`."""

    def forward(self, x: Any) -> Any:
        """Return e raised to the power of ``x``, elementwise.

        Args:
            x: The input array (integer data computes in floating point).

        Returns:
            An array of ``x``'s shape.
        """
        return get_array_module(x).exp(_float(x))

    def backward(self, gy: Variable) -> Variable:
        """Return the input's gradient, ``gy * exp(x)`` (from the output).

        Args:
            gy: The output's gradient.

        Returns:
            The gradient of ``x``.
        """
        return gy * self.outputs[0]()


class Log(Function):
    """Elementwise natural logarithm; used by :func:`log`."""

    def forward(self, x: Any) -> Any:
        """Return the natural logarithm of ``x``, elementwise.

        Args:
            x: The input array (integer data computes in floating point).

        Returns:
            An array of ``x``'s shape.
        """
        return get_array_module(x).log(_float(x))

    def backward(self, gy: Variable) -> Variable:
        """Return the input's gradient, ``gy / x``.

        Args:
            gy: The output's gradient.

        Returns:
            The gradient of ``x``.
        """
        return gy / self.inputs[0]


# The gradients of sin, cos and tanh are fused into one Function each (one graph node
# instead of two or three); their own backward keeps every order differentiable.


class Sin(Function):
    """Elementwise sine; used by :func:`sin`."""

    def forward(self, x: Any) -> Any:
        """Return the sine of ``x``, elementwise.

        Args:
            x: The input array (integer data computes in floating point).

        Returns:
            An array of ``x``'s shape.
        """
        return get_array_module(x).sin(_float(x))

    def backward(self, gy: Variable) -> Variable:
        """Return the input's gradient, ``gy * cos(x)`` (one :class:`SinGrad` node).

        Args:
            gy: The output's gradient.

        Returns:
            The gradient of ``x``.
        """
        return SinGrad()(self.inputs[0], gy)


class SinGrad(Function):
    """gx = gy * cos(x)."""

    def forward(self, x: Any, gy: Any) -> Any:
        """Return ``gy * cos(x)``.

        Args:
            x: The input of the sine.
            gy: The gradient of the original function's output.

        Returns:
            The original input's gradient array.
        """
        return gy * get_array_module(x).cos(_float(x))

    def backward(self, g: Variable) -> tuple[Variable, Variable]:
        """Return the gradients of ``x`` and ``gy`` (for higher-order gradients).

        Args:
            g: The gradient of this function's output.

        Returns:
            A tuple ``(gx, ggy)``.
        """
        x, gy = self.inputs
        return -g * gy * sin(x), g * cos(x)


class Cos(Function):
    """Elementwise cosine; used by :func:`cos`."""

    def forward(self, x: Any) -> Any:
        """Return the cosine of ``x``, elementwise.

        Args:
            x: The input array (integer data computes in floating point).

        Returns:
            An array of ``x``'s shape.
        """
        return get_array_module(x).cos(_float(x))

    def backward(self, gy: Variable) -> Variable:
        """Return the input's gradient, ``-gy * sin(x)`` (one :class:`CosGrad` node).

        Args:
            gy: The output's gradient.

        Returns:
            The gradient of ``x``.
        """
        return CosGrad()(self.inputs[0], gy)


class CosGrad(Function):
    """gx = -gy * sin(x)."""

    def forward(self, x: Any, gy: Any) -> Any:
        """Return ``-gy * sin(x)``.

        Args:
            x: The input of the cosine.
            gy: The gradient of the original function's output.

        Returns:
            The original input's gradient array.
        """
        return -gy * get_array_module(x).sin(_float(x))

    def backward(self, g: Variable) -> tuple[Variable, Variable]:
        """Return the gradients of ``x`` and ``gy`` (for higher-order gradients).

        Args:
            g: The gradient of this function's output.

        Returns:
            A tuple ``(gx, ggy)``.
        """
        x, gy = self.inputs
        return -g * gy * cos(x), -g * sin(x)


class Tanh(Function):
    """Elementwise hyperbolic tangent; used by :func:`tanh`."""

    def forward(self, x: Any) -> Any:
        """Return the hyperbolic tangent of ``x``, elementwise.

        Args:
            x: The input array (integer data computes in floating point).

        Returns:
            An array of ``x``'s shape.
        """
        return get_array_module(x).tanh(_float(x))

    def backward(self, gy: Variable) -> Variable:
        """Return the input's gradient, ``gy * (1 - y**2)`` (one :class:`TanhGrad` node).

        Args:
            gy: The output's gradient.

        Returns:
            The gradient of ``x``.
        """
        return TanhGrad()(self.outputs[0](), gy)


class TanhGrad(Function):
    """gx = gy * (1 - y * y), from the output y."""

    def forward(self, y: Any, gy: Any) -> Any:
        """Return ``gy * (1 - y * y)`` in ``gy``'s dtype.

        Args:
            y: The output of the tanh.
            gy: The gradient of the original function's output.

        Returns:
            The original input's gradient array.
        """
        gx = gy * (1 - y * y)
        # numpy 1.x promotes 0-d float32 with a Python int to float64
        return gx if gx.dtype == gy.dtype else backend_of(gy).astype(gx, gy.dtype)

    def backward(self, g: Variable) -> tuple[Variable, Variable]:
        """Return the gradients of ``y`` and ``gy`` (for higher-order gradients).

        Args:
            g: The gradient of this function's output.

        Returns:
            A tuple ``(gy, ggy)``.
        """
        y, gy = self.inputs
        return -2 * g * gy * y, g * (1 - y * y)


class Square(Function):
    """Elementwise ``x ** 2``; used by :func:`square`."""

    def forward(self, x: Any) -> Any:
        """Return ``x * x``, elementwise.

        Args:
            x: The input array.

        Returns:
            An array of ``x``'s shape and dtype.
        """
        return x * x

    def backward(self, gy: Variable) -> Variable:
        """Return the input's gradient, ``2 * x * gy``.

        Args:
            gy: The output's gradient.

        Returns:
            The gradient of ``x``.
        """
        return 2 * self.inputs[0] * gy


class Sqrt(Function):
    """Elementwise square root; used by :func:`sqrt`."""

    def forward(self, x: Any) -> Any:
        """Return the square root of ``x``, elementwise.

        Args:
            x: The input array (integer data computes in floating point).

        Returns:
            An array of ``x``'s shape.
        """
        return get_array_module(x).sqrt(_float(x))

    def backward(self, gy: Variable) -> Variable:
        """Return the input's gradient, ``gy / (2 * sqrt(x))`` (from the output).

        Args:
            gy: The output's gradient.

        Returns:
            The gradient of ``x``.
        """
        return gy / (2 * self.outputs[0]())


class Clip(Function):
    """Limit values to ``[x_min, x_max]``; used by :func:`clip`.

    Args:
        x_min: The lower bound, or None for none.
        x_max: The upper bound, or None for none.
    """

    def __init__(self, x_min: Any, x_max: Any) -> None:
        self.x_min, self.x_max = x_min, x_max

    def forward(self, x: Any) -> Any:
        """Return ``x`` with its values limited to ``[x_min, x_max]``.

        Args:
            x: The input array.

        Returns:
            An array of ``x``'s shape.
        """
        return get_array_module(x).clip(x, self.x_min, self.x_max)

    def backward(self, gy: Variable) -> Variable:
        """Return the input's gradient: ``gy`` within the bounds, zero where ``x`` was clipped.

        Args:
            gy: The output's gradient.

        Returns:
            The gradient of ``x``.
        """
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
    """Compute e raised to the power of ``x``, elementwise.

    Args:
        x: A Variable, array, scalar or list; integer data computes in floating point.

    Returns:
        A Variable of ``x``'s shape.

    Examples:
        >>> import numpy as np
        >>> exp(np.array(0.0))
        variable(1.0)
    """
    return Exp()(x)


def log(x: Any) -> Variable:
    """Compute the natural logarithm of ``x``, elementwise.

    Args:
        x: A Variable, array, scalar or list; integer data computes in floating point.

    Returns:
        A Variable of ``x``'s shape.

    Examples:
        >>> import numpy as np
        >>> log(np.array(1.0))
        variable(0.0)
    """
    return Log()(x)


def sin(x: Any) -> Variable:
    """Compute the sine of ``x`` (radians), elementwise.

    Args:
        x: A Variable, array, scalar or list; integer data computes in floating point.

    Returns:
        A Variable of ``x``'s shape.

    Examples:
        >>> import numpy as np
        >>> sin(np.array(0.0))
        variable(0.0)
    """
    return Sin()(x)


def cos(x: Any) -> Variable:
    """Compute the cosine of ``x`` (radians), elementwise.

    Args:
        x: A Variable, array, scalar or list; integer data computes in floating point.

    Returns:
        A Variable of ``x``'s shape.

    Examples:
        >>> import numpy as np
        >>> cos(np.array(0.0))
        variable(1.0)
    """
    return Cos()(x)


def tanh(x: Any) -> Variable:
    """Compute the hyperbolic tangent of ``x``, elementwise.

    Args:
        x: A Variable, array, scalar or list; integer data computes in floating point.

    Returns:
        A Variable of ``x``'s shape.

    Examples:
        >>> import numpy as np
        >>> tanh(np.array(0.0))
        variable(0.0)
    """
    return Tanh()(x)


def square(x: Any) -> Variable:
    """Compute ``x ** 2``, elementwise.

    Args:
        x: A Variable, array, scalar or list; integer data computes in floating point.

    Returns:
        A Variable of ``x``'s shape.

    Examples:
        >>> import numpy as np
        >>> square(np.array(3.0))
        variable(9.0)
    """
    return Square()(x)


def sqrt(x: Any) -> Variable:
    """Compute the square root of ``x``, elementwise.

    Args:
        x: A Variable, array, scalar or list; integer data computes in floating point.

    Returns:
        A Variable of ``x``'s shape.

    Examples:
        >>> import numpy as np
        >>> sqrt(np.array(4.0))
        variable(2.0)
    """
    return Sqrt()(x)


def clip(x: Any, x_min: Any, x_max: Any) -> Variable:
    """Limit values to ``[x_min, x_max]``; the gradient is zero where ``x`` was clipped.

    Either bound may be None (no limit on that side), as in ``numpy.clip``.

    Args:
        x: A Variable, array, scalar or list.
        x_min: The lower bound (a number or an array), or None.
        x_max: The upper bound (a number or an array), or None.

    Returns:
        A Variable of ``x``'s shape.

    Raises:
        TypeError: A bound is not a number, an array or None, or both are None.

    Examples:
        >>> import numpy as np
        >>> clip(np.array([-2.0, 0.5, 3.0]), 0.0, 1.0)
        variable([0.  0.5 1. ])
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
