"""The arithmetic operators: add, sub, mul, div, neg, pow."""

from __future__ import annotations

from typing import Any

from ..function import Function
from ..variable import Constant, Variable, as_array
from .broadcast import sum_to


def _other(x: Any, other: Any) -> Variable:
    """Wrap a raw operand as a Constant matching ``x``'s backend and dtype."""
    if isinstance(other, Variable):
        return other
    return Constant(as_array(other, like=x.data if isinstance(x, Variable) else x))


class _Binary(Function):
    """A two-input elementwise op; ``shapes`` is set only when the forward broadcast."""

    shapes: tuple | None = None

    def _note_shapes(self, x0: Any, x1: Any) -> None:
        if x0.shape != x1.shape:  # stored only then: no per-op dict in the common case
            self.shapes = (x0.shape, x1.shape)


def _unbroadcast(gx0: Any, gx1: Any, f: _Binary) -> tuple[Any, Any]:
    """Sum gradients back to their inputs' shapes where the forward broadcast them."""
    if f.shapes is not None:
        s0, s1 = f.shapes
        if gx0 is not None:
            gx0 = sum_to(gx0, s0)
        if gx1 is not None:
            gx1 = sum_to(gx1, s1)
    return gx0, gx1


class Add(_Binary):
    def forward(self, x0: Any, x1: Any) -> Any:
        self._note_shapes(x0, x1)
        return x0 + x1

    def backward(self, gy: Variable) -> tuple[Variable, Variable]:
        x0, x1 = self.inputs
        return _unbroadcast(
            None if type(x0) is Constant else gy, None if type(x1) is Constant else gy, self
        )


class Sub(_Binary):
    def forward(self, x0: Any, x1: Any) -> Any:
        self._note_shapes(x0, x1)
        return x0 - x1

    def backward(self, gy: Variable) -> tuple[Variable, Variable]:
        x0, x1 = self.inputs
        return _unbroadcast(
            None if type(x0) is Constant else gy, None if type(x1) is Constant else -gy, self
        )


class Mul(_Binary):
    def forward(self, x0: Any, x1: Any) -> Any:
        self._note_shapes(x0, x1)
        return x0 * x1

    def backward(self, gy: Variable) -> tuple[Variable, Variable]:
        x0, x1 = self.inputs
        return _unbroadcast(
            None if type(x0) is Constant else gy * x1,
            None if type(x1) is Constant else gy * x0,
            self,
        )


class Div(_Binary):
    def forward(self, x0: Any, x1: Any) -> Any:
        self._note_shapes(x0, x1)
        return x0 / x1

    def backward(self, gy: Variable) -> tuple[Variable, Variable]:
        x0, x1 = self.inputs
        gx0 = gy / x1
        return _unbroadcast(
            None if type(x0) is Constant else gx0,
            None if type(x1) is Constant else -gx0 * x0 / x1,
            self,
        )


class Neg(Function):
    def forward(self, x: Any) -> Any:
        return -x

    def backward(self, gy: Variable) -> Variable:
        return -gy


class Pow(Function):
    """``x ** c`` for a constant exponent ``c`` (DeZero's Pow)."""

    def __init__(self, c: Any) -> None:
        self.c = c

    def forward(self, x: Any) -> Any:
        return x**self.c

    def backward(self, gy: Variable) -> Variable:
        (x,) = self.inputs
        c = self.c
        return c * x ** (c - 1) * gy


class PowVar(_Binary):
    """``x0 ** x1`` where the exponent is a Variable too."""

    def forward(self, x0: Any, x1: Any) -> Any:
        self._note_shapes(x0, x1)
        return x0**x1

    def backward(self, gy: Variable) -> tuple[Variable, Variable]:
        from .elementwise import log

        x0, x1 = self.inputs
        y = self.outputs[0]()
        gx0 = None if type(x0) is Constant else gy * x1 * x0 ** (x1 - 1)
        gx1 = None if type(x1) is Constant else gy * y * log(x0)
        return _unbroadcast(gx0, gx1, self)


def add(x0: Any, x1: Any) -> Variable:
    """``x0 + x1`` with broadcasting."""
    return Add()(x0, _other(x0, x1))


def sub(x0: Any, x1: Any) -> Variable:
    """``x0 - x1`` with broadcasting."""
    return Sub()(x0, _other(x0, x1))


def rsub(x0: Any, x1: Any) -> Variable:
    """``x1 - x0`` (the reflected form)."""
    return Sub()(_other(x0, x1), x0)


def mul(x0: Any, x1: Any) -> Variable:
    """``x0 * x1`` with broadcasting."""
    return Mul()(x0, _other(x0, x1))


def div(x0: Any, x1: Any) -> Variable:
    """``x0 / x1`` with broadcasting."""
    return Div()(x0, _other(x0, x1))


def rdiv(x0: Any, x1: Any) -> Variable:
    """``x1 / x0`` (the reflected form)."""
    return Div()(_other(x0, x1), x0)


def neg(x: Any) -> Variable:
    """``-x``."""
    return Neg()(x)


def pow(x: Any, c: Any) -> Variable:
    """``x ** c``; ``c`` a Python number (DeZero) or a Variable/array."""
    if isinstance(c, (int, float)):
        return Pow(c)(x)
    return PowVar()(x, _other(x, c))


def rpow(x: Any, c: Any) -> Variable:
    """``c ** x`` (the reflected form)."""
    return PowVar()(_other(x, c), x)
