"""Elementwise math: exp, log, sin, cos, tanh, square, sqrt, clip.

Each forward returns an array of its input's shape; integer and bool data compute in
floating point (a float function never truncates).
"""

from __future__ import annotations

from typing import Any

from ..backends import ORDERS_VALUES, backend_of, get_array_module, refuse_complex
from ..function import Function
from .arithmetic import ValueMask, in_gradient_dtype
from .ops import op

# array type -> {dtype: whether it is floating (or complex)}: a dtype is looked up among its
# own library's dtypes only (array-api-strict warns when its dtypes meet numpy's)
_floating: dict[type, dict] = {}
_last_float: Any = None  # the dtype last found floating: the usual case is one identity test


def _float(x: Any) -> Any:
    """``x`` when its dtype is floating; else ``x`` in its backend's default float dtype.

    numpy computes exp/sin/... of int8, uint8, int16 and bool data in float16 or float32;
    zerograd follows torch and the array API instead: integer data computes in the default
    float dtype (numpy's float64), and backends that refuse integer input get a float.
    """
    global _last_float
    dtype = x.dtype
    if dtype is _last_float:
        return x
    known = _floating.get(type(x))
    if known is None:
        known = _floating[type(x)] = {}
    ok = known.get(dtype)
    if ok is None:
        ok = known[dtype] = backend_of(x).dtype_kind(dtype) in "fc"
    if ok:
        _last_float = dtype
        return x
    backend = backend_of(x)
    return backend.astype(x, backend.asarray(0.0).dtype)


def _as_float(xp: Any, x: Any) -> Any:
    """``x`` in floating point, as forward computed with it.

    Only arrays need it: a Variable goes through zerograd's functions, which convert.
    """
    return x if xp.graph else _float(x)


class _Namesake(Function):
    """An elementwise function that its backend's function of the same name computes.

    ``math`` names it (the class's name in lower case: ``"exp"``): the function each
    subclass's forward calls on float input (the forwards call it by name, as the backend
    contract's check reads them).
    """

    __slots__ = ()

    math: str
    _doc_sections = """
        Args:
            x: A Variable, array, scalar or list; integer data computes in floating point.

        Returns:
            A Variable of ``x``'s shape.
        """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.math = cls.__name__.lower()

    def kernel(self, x: Any) -> Any:
        # integer input is converted first: only float input comes down to the namesake
        return getattr(get_array_module(x), self.math) if _float(x) is x else None


class Exp(_Namesake):
    """Compute e raised to the power of ``x``, elementwise."""

    __slots__ = ()

    fuses_as = "exp"
    vjp_reads_inputs = False

    def forward(self, x: Any) -> Any:
        return get_array_module(x).exp(_float(x))

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        return gy * y  # exp(x), from the output


exp = op(Exp, example=("exp(np.array(0.0))", "variable(1.0)"), in_vjp=True)


class Log(_Namesake):
    """Compute the natural logarithm of ``x``, elementwise."""

    __slots__ = ()

    fuses_as = "log"
    vjp_reads_outputs = False

    def forward(self, x: Any) -> Any:
        return get_array_module(x).log(_float(x))

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        return gy / _as_float(xp, xs[0])


log = op(Log, example=("log(np.array(1.0))", "variable(0.0)"), in_vjp=True)


class Sin(_Namesake):
    """Compute the sine of ``x`` (radians), elementwise."""

    __slots__ = ()

    fuses_as = "sin"
    vjp_reads_outputs = False

    def forward(self, x: Any) -> Any:
        return get_array_module(x).sin(_float(x))

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        return gy * xp.cos(_as_float(xp, xs[0]))


sin = op(Sin, example=("sin(np.array(0.0))", "variable(0.0)"), in_vjp=True)


class Cos(_Namesake):
    """Compute the cosine of ``x`` (radians), elementwise."""

    __slots__ = ()

    fuses_as = "cos"
    vjp_reads_outputs = False

    def forward(self, x: Any) -> Any:
        return get_array_module(x).cos(_float(x))

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        return -gy * xp.sin(_as_float(xp, xs[0]))


cos = op(Cos, example=("cos(np.array(0.0))", "variable(1.0)"), in_vjp=True)


class Tanh(_Namesake):
    """Compute the hyperbolic tangent of ``x``, elementwise."""

    __slots__ = ()

    fuses_as = "tanh"
    vjp_reads_inputs = False

    def forward(self, x: Any) -> Any:
        return get_array_module(x).tanh(_float(x))

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        return gy * (1 - y * y)  # from the output


tanh = op(Tanh, example=("tanh(np.array(0.0))", "variable(0.0)"), in_vjp=True)


class Sqrt(_Namesake):
    """Compute the square root of ``x``, elementwise."""

    __slots__ = ()

    fuses_as = "sqrt"
    vjp_reads_inputs = False

    def forward(self, x: Any) -> Any:
        return get_array_module(x).sqrt(_float(x))

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        return gy / (2 * y)  # 1 / (2 sqrt(x)), from the output


sqrt = op(Sqrt, example=("sqrt(np.array(4.0))", "variable(2.0)"), in_vjp=True)


class Square(Function):
    """Compute ``x ** 2``, elementwise."""

    vjp_reads_outputs = False
    _doc_sections = _Namesake._doc_sections

    def forward(self, x: Any) -> Any:
        return x * x

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        (x,) = xs
        try:
            return 2 * x * gy
        except TypeError as exc:
            (x,) = in_gradient_dtype(xp, gy, exc, x)
            return 2 * x * gy


square = op(Square, example=("square(np.array(3.0))", "variable(9.0)"))


class Clip(Function):
    """Limit values to ``[x_min, x_max]``; the gradient is zero where ``x`` was clipped.

    Either bound may be None (no limit on that side), as in ``numpy.clip``.

    Args:
        x_min: The lower bound (a number or an array), or None.
        x_max: The upper bound (a number or an array), or None.

    Raises:
        TypeError: A bound is not a number, an array or None, or both are None; ``x`` is
            complex (complex numbers have no order).
    """

    vjp_reads_outputs = False

    def __init__(self, x_min: Any, x_max: Any) -> None:
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
        self.x_min, self.x_max = x_min, x_max

    def forward(self, x: Any) -> Any:
        refuse_complex("clip", x, ORDERS_VALUES)
        return get_array_module(x).clip(x, self.x_min, self.x_max)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        if xp.graph:  # a Function of x: a static-graph replay computes it anew
            return gy * xp.apply(ValueMask(_within, gy.dtype, self.x_min, self.x_max), xs[0])
        x = xs[0]
        return gy * backend_of(x).astype(_within(x, self.x_min, self.x_max), gy.dtype)


def _within(x: Any, lo: Any, hi: Any) -> Any:
    """Where ``lo <= x <= hi``, the mask of clip's derivative (one bound may be None)."""
    if lo is None:  # as in numpy.clip
        return x <= hi
    if hi is None:
        return x >= lo
    return (x >= lo) & (x <= hi)


clip = op(Clip, example=("clip(np.array([-2.0, 0.5, 3.0]), 0.0, 1.0)", "variable([0.  0.5 1. ])"))

# literal, so that type checkers see the names (a test checks it against the ops defined here)
__all__ = [
    "exp",
    "log",
    "sin",
    "cos",
    "tanh",
    "sqrt",
    "square",
    "clip",
    "Clip",
    "Cos",
    "Exp",
    "Log",
    "Sin",
    "Sqrt",
    "Square",
    "Tanh",
]
