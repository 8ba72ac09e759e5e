"""The arithmetic operators: add, sub, mul, div, neg, pow."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ..backends import backend_of, get_array_module
from ..function import Function
from ..typing import ArrayLike
from ..utils import data_of
from ..variable import Constant, Variable
from .ops import defines, op


class _Binary(Function):
    """A two-input elementwise op ``op(x0, x1)`` with numpy broadcasting.

    A forward's context (``ctx``) is None unless it broadcast or promoted: then ``(shape0,
    shape1, promoted)``, the inputs' shapes and whether it computed on promoted copies. Gradients
    of Constant operands are never computed. Subclasses define ``grad0(xp, gy, x0, x1,
    y)`` and ``grad1(...)``: each input's gradient before broadcasting is undone, on the
    namespace ``xp`` as :meth:`Function.vjp` describes.
    """

    __slots__ = ()

    op: Callable[[Any, Any], Any]
    _doc_sections = """
        Returns:
            A Variable of the broadcast shape.
        """

    true_division = False  # integer operands compute in floating point, and a Python int
    # beyond integer data's dtype is an operand (function._constant: numpy 2's int8 / 300)

    def forward(self, x0: Any, x1: Any) -> Any:
        """Return ``op(x0, x1)``, broadcasting as numpy does.

        Args:
            x0: The first input array.
            x1: The second input array.

        Returns:
            The result array.

        Raises:
            ValueError: The shapes do not broadcast.
        """
        try:
            y = self.op(x0, x1)
        except (TypeError, ValueError) as exc:
            return self._retry(x0, x1, exc)
        s0, s1 = x0.shape, x1.shape
        self.ctx = None if s0 == s1 else _broadcast_context(s0, s1)
        return y

    def _retry(self, x0: Any, x1: Any, exc: Exception) -> Any:
        """The failure path of forward: name the shapes, or promote and try once more."""
        if isinstance(exc, ValueError):
            if _broadcastable(x0.shape, x1.shape):
                raise exc
            raise ValueError(
                f"{type(self).__name__}: shapes {tuple(x0.shape)} and {tuple(x1.shape)} do not "
                f"broadcast (numpy rules: align from the right, each axis equal or 1)."
            ) from None
        # array-API backends refuse mixed kinds (int with float, bool with int) and integer
        # true division: promote as numpy does
        p0, p1 = _promote(x0, x1, self.true_division)
        if p0 is x0 and p1 is x1:
            raise exc
        y = self.op(p0, p1)
        self.ctx = (x0.shape, x1.shape, True)
        return y

    def kernel(self, x0: Any, x1: Any) -> Any:
        ctx = self.ctx
        return None if ctx is not None and ctx[2] else self.op

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> tuple[Any, Any]:
        """Return both inputs' gradients, summed back to the inputs' shapes."""
        x0, x1 = xs
        c0, c1 = self._in  # (a Constant is always kept: the check needs no stand-ins)
        try:
            gx0 = None if type(c0) is Constant else self.grad0(xp, gy, x0, x1, y)
            gx1 = None if type(c1) is Constant else self.grad1(xp, gy, x0, x1, y)
        except TypeError as exc:
            x0, x1 = in_gradient_dtype(xp, gy, exc, x0, x1)
            gx0 = None if type(c0) is Constant else self.grad0(xp, gy, x0, x1, y)
            gx1 = None if type(c1) is Constant else self.grad1(xp, gy, x0, x1, y)
        ctx = self.ctx
        if ctx is None:
            return gx0, gx1
        s0, s1, _ = ctx  # undo broadcasting where it happened (x * 2.0: on the scalar only)
        if gx0 is not None and gx0.shape != s0:
            gx0 = xp.sum_to(gx0, s0)
        if gx1 is not None and gx1.shape != s1:
            gx1 = xp.sum_to(gx1, s1)
        return gx0, gx1

    def grad0(self, xp: Any, gy: Any, x0: Any, x1: Any, y: Any) -> Any:
        """Return the gradient of ``x0``; each subclass defines it."""
        raise NotImplementedError

    def grad1(self, xp: Any, gy: Any, x0: Any, x1: Any, y: Any) -> Any:
        """Return the gradient of ``x1``; each subclass defines it."""
        raise NotImplementedError


_contexts: dict = {}  # shape0 -> {shape1: (shape0, shape1, False)}


def _broadcast_context(s0: tuple, s1: tuple) -> tuple:
    """``(s0, s1, False)``, one tuple per pair of shapes met.

    ``x * 2.0`` broadcasts every time: sharing its context spares the graph one object per
    operation for the cyclic collector to track (and to traverse at every collection).
    """
    by1 = _contexts.get(s0)
    if by1 is None:
        if len(_contexts) >= 1024:  # (a program of ever-new shapes keeps no more than this)
            _contexts.clear()
        by1 = _contexts[s0] = {}
    ctx = by1.get(s1)
    if ctx is None:
        if len(by1) >= 64:
            by1.clear()
        ctx = by1[s1] = (s0, s1, False)
    return ctx


def _reflected(sign: str) -> str:
    return f"Compute ``x1 {sign} x0`` (the reflected form behind ``2.0 {sign} x``)."


class Add(_Binary):
    """Compute ``x0 + x1``, broadcasting as numpy does."""

    __slots__ = ()

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    op = operator.add
    fuses_as = "add"

    def grad0(self, xp: Any, gy: Any, x0: Any, x1: Any, y: Any) -> Any:
        return gy

    grad1 = grad0


add = op(
    Add,
    methods=("__add__", "__radd__"),
    example=("add(np.array([1.0, 2.0]), 1.0)", "variable([2. 3.])"),
)


class Sub(_Binary):
    """Compute ``x0 - x1``, broadcasting as numpy does."""

    __slots__ = ()

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    op = operator.sub
    fuses_as = "sub"

    def grad0(self, xp: Any, gy: Any, x0: Any, x1: Any, y: Any) -> Any:
        return gy

    def grad1(self, xp: Any, gy: Any, x0: Any, x1: Any, y: Any) -> Any:
        return -gy


sub = op(Sub, methods=("__sub__",))
rsub = op(Sub, "rsub", doc=_reflected("-"), methods=("__rsub__",), swapped=True)


class Mul(_Binary):
    """Compute ``x0 * x1``, broadcasting as numpy does."""

    __slots__ = ()

    vjp_reads_outputs = False

    op = operator.mul
    fuses_as = "mul"

    def grad0(self, xp: Any, gy: Any, x0: Any, x1: Any, y: Any) -> Any:
        return gy * x1

    def grad1(self, xp: Any, gy: Any, x0: Any, x1: Any, y: Any) -> Any:
        return gy * x0


mul = op(Mul, methods=("__mul__", "__rmul__"))


class Div(_Binary):
    """Compute ``x0 / x1``, broadcasting as numpy does; integers divide in floating point."""

    __slots__ = ()

    op = operator.truediv
    fuses_as = "div"
    true_division = True

    def grad0(self, xp: Any, gy: Any, x0: Any, x1: Any, y: Any) -> Any:
        return gy / x1

    def grad1(self, xp: Any, gy: Any, x0: Any, x1: Any, y: Any) -> Any:
        # -gy * x0 / x1**2 from the output: x1 * x1 overflows (float16 past 256) or
        # underflows to 0 where the gradient itself is finite
        return -gy * y / x1


div = op(
    Div,
    methods=("__truediv__",),
    example=("div(np.array([1, 2]), 2)", "variable([0.5 1. ])"),
)
rdiv = op(Div, "rdiv", doc=_reflected("/"), methods=("__rtruediv__",), swapped=True)


class Neg(Function):
    """Compute ``-x``."""

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    fuses_as = "neg"

    def forward(self, x: Any) -> Any:
        return -x

    def kernel(self, x: Any) -> Any:
        return operator.neg

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        return -gy


neg = op(Neg, methods=("__neg__",))


class Pow(Function):
    """``x ** c`` for a constant exponent ``c`` (DeZero's Pow); used by :func:`pow`.

    Args:
        c: The exponent, a Python number.
    """

    vjp_reads_outputs = False

    def __init__(self, c: Any) -> None:
        self.c = c

    def forward(self, x: Any) -> Any:
        try:
            return x**self.c
        except TypeError:  # an array-API backend refusing int ** float
            if not isinstance(self.c, float):
                raise
            return _to_float(x) ** self.c

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return the input's gradient, ``c * x ** (c - 1) * gy`` (zero for ``c == 0``)."""
        (x,) = xs
        c = self.c
        if c == 0:  # x ** 0 is constant: 0 * 0 ** -1 would make it nan at x = 0
            return gy * 0
        try:
            return c * x ** (c - 1) * gy
        except TypeError as exc:
            (x,) = in_gradient_dtype(xp, gy, exc, x)
            return c * x ** (c - 1) * gy


class PowVar(_Binary):
    """``x0 ** x1`` where the exponent is a Variable too; used by :func:`pow` and :func:`rpow`.

    At a zero base the gradients are PyTorch's: zero for the base where the exponent is 0
    (``x ** 0`` is constant) and zero for the exponent where it is 0 or more (``0 ** c`` is
    constant for ``c > 0``), where the formulas would give ``0 * inf``.
    """

    op = operator.pow

    def grad0(self, xp: Any, gy: Any, x0: Any, x1: Any, y: Any) -> Any:
        # x ** 0 is constant, but x1 * x0 ** -1 is 0 * inf where 1 / x0 overflows (0, and
        # subnormals such as float64's 5e-324): there alone the base is lifted to 1, so
        # the next order's d/dx1 keeps x0 ** -1 everywhere else
        zero = (
            xp.apply(ValueMask(_lifted_base, data_of(gy).dtype), x0, x1)  # replays compute it
            if xp.graph
            else _mask_of(_lifted_base, gy, x0, x1)
        )
        # a constant exponent stays one: as a Variable, x1 - 1 would get a gradient at the
        # next order, through log(x0), nan (and numpy's warning) for a negative base
        a0, a1 = data_of(x0), data_of(x1)
        backend = backend_of(a0)
        k0, k1 = backend.dtype_kind(a0.dtype), backend.dtype_kind(a1.dtype)
        # an integer exponent of a float base minus a 1 of the output's dtype: minus the
        # number 1, uint8's 0 wraps to 255 (0 * x ** 255: nan where that overflows), int8's
        # -128 to 127, and bool's - 1 is int64 (float64 for a float32 x)
        one = backend.asarray(1, dtype=data_of(gy).dtype) if k1 in "biu" and k0 in "fc" else 1
        e = a1 - one if type(x1) is Constant and not xp.graph else x1 - one
        if k0 in "biu" and k1 in "biu":  # integers: x ** -1 raises, so x ** 0 where x1 == 0
            e = e + (
                xp.apply(ValueMask(_zero_exponent, data_of(e).dtype), x0, x1)
                if xp.graph
                else _mask_of(_zero_exponent, e, x0, x1)
            )
        if type(x1) is Constant and xp.graph:
            # made by Functions, so that a replay computes it from its own x1, and wrapped
            # as a Constant, so that it stays one
            e = Constant(e.data)
        return gy * x1 * (x0 + zero) ** e

    def grad1(self, xp: Any, gy: Any, x0: Any, x1: Any, y: Any) -> Any:
        # 0 ** c, c >= 0: y * log(0) is nan or -inf
        zero = (
            xp.apply(ValueMask(_zero_base, data_of(gy).dtype), x0, x1)  # replays compute it
            if xp.graph
            else _mask_of(_zero_base, gy, x0, x1)
        )
        return gy * y * xp.log(x0 + zero)


def _lifted_base(a0: Any, a1: Any) -> Any:
    """Where PowVar's d/dx0 lifts the base: a zero exponent, a base whose inverse overflows."""
    return (a1 == 0) & _inverse_overflows(a0)


def _zero_exponent(a0: Any, a1: Any) -> Any:
    """Where PowVar's d/dx0 of integers raises the base to 0, not -1: a zero exponent."""
    return a1 == 0


def _zero_base(a0: Any, a1: Any) -> Any:
    """Where PowVar's d/dx1 lifts the base to 1: ``0 ** c`` with ``c >= 0``."""
    return (a0 == 0) & (a1 >= 0)


def _mask_of(where: Callable[..., Any], gy: Any, x0: Any, x1: Any) -> Any:
    """``where(x0, x1)`` as ones and zeros of ``gy``'s dtype, on arrays (first order)."""
    a0, a1 = data_of(x0), data_of(x1)
    return _mask(a0, where(a0, a1), gy)


def _inverse_overflows(a: Any) -> Any:
    """Where ``a ** -1`` is infinite or nearly: 0, and the smallest subnormals of a float."""
    if backend_of(a).dtype_kind(a.dtype) not in "fc":
        return a == 0
    # finfo is the array API's: numpy's, CuPy's, array-api-strict's; half the largest
    # value's inverse leaves no base whose inverse rounds up to inf
    return abs(a) <= 2 / float(get_array_module(a).finfo(a.dtype).max)


class ValueMask(Function):
    """``where(*xs, *settings)`` as ones and zeros of ``dtype``: a mask as a Function.

    A derivative that masks its gradient by the values (ReLU's ``y > 0``, max's ``x == y``)
    applies this when it runs on Variables (``create_graph=True``) rather than computing
    the mask from ``.data``: a static-graph replay then computes the mask from each call's
    arrays, where an array made in Python would be a constant kept from the recordings
    (and two recordings whose masks happen to agree would freeze it). The mask has no
    gradient.

    Args:
        where: a function of the input arrays (and ``settings``) returning booleans; a
            function defined once, not a new lambda, so that two recordings agree.
        dtype: the mask's dtype.
        *settings: numbers ``where`` takes after the arrays (clip's bounds).
    """

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def __init__(self, where: Callable[..., Any], dtype: Any, *settings: Any) -> None:
        self.where, self.dtype, self.settings = where, dtype, settings

    def forward(self, *xs: Any) -> Any:
        backend = backend_of(xs[0])  # of an array: a 0-d comparison may be a numpy scalar
        return backend.astype(backend.asarray(self.where(*xs, *self.settings)), self.dtype)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return None for every input: a mask is constant where it is defined."""
        return None if len(xs) == 1 else (None,) * len(xs)


def _mask(a: Any, where: Any, gy: Any) -> Any:
    """``where`` (booleans) as 1.0 and 0.0 in ``gy``'s dtype, an array of ``a``'s backend."""
    backend = backend_of(a)
    return backend.astype(backend.asarray(where), data_of(gy).dtype)


def in_gradient_dtype(xp: Any, gy: ArrayLike, exc: TypeError, *xs: Any) -> tuple:
    """``xs`` in ``gy``'s dtype, after a first-order vjp's arithmetic raised ``exc``.

    An integer input whose result fed a float function gets a float gradient; numpy mixes
    the kinds silently, array-API backends refuse them. Called only from that failure, so
    the common path pays nothing.

    Args:
        xp: The vjp's namespace.
        gy: The output's gradient.
        exc: The TypeError the mixed-kind arithmetic raised (raised again for Variables).
        *xs: The input arrays.

    Returns:
        The inputs cast to ``gy``'s dtype.

    Raises:
        TypeError: ``exc``, when it was not a mixed-kind refusal of the array engine.
    """
    if xp.graph or not hasattr(gy, "dtype"):
        raise exc
    return tuple(_to_float(x, gy) for x in xs)


def _broadcastable(s0: tuple, s1: tuple) -> bool:
    return all(a == b or a == 1 or b == 1 for a, b in zip(reversed(s0), reversed(s1)))


def _to_float(x: Any, like: Any = None) -> Any:
    """Return ``x`` in ``like``'s dtype, or in its backend's default float dtype."""
    backend = backend_of(x)
    dtype = like.dtype if like is not None else backend.asarray(0.0).dtype
    return backend.astype(x, dtype)


def _promote(x0: Any, x1: Any, true_division: bool) -> tuple[Any, Any]:
    """Promote as numpy does, for a backend that refused mixed kinds.

    Bool or integer next to a float becomes that float, bool next to an integer that
    integer, and both integers a float for true division. Returns the inputs unchanged
    when none applies.
    """
    b = backend_of(x0)
    k0, k1 = b.dtype_kind(x0.dtype), b.dtype_kind(x1.dtype)
    inexact0, inexact1 = k0 in "fc", k1 in "fc"
    if inexact0 and not inexact1:
        return x0, _to_float(x1, x0)
    if inexact1 and not inexact0:
        return _to_float(x0, x1), x1
    if not inexact0 and not inexact1:
        if true_division:
            return _to_float(x0), _to_float(x1)
        if k0 == "b" and k1 != "b":
            return b.astype(x0, x1.dtype), x1
        if k1 == "b" and k0 != "b":
            return x0, b.astype(x1, x0.dtype)
    return x0, x1


@defines(Pow, PowVar, methods=("__pow__",))
def pow(x: ArrayLike, c: Any) -> Variable:
    """Compute ``x ** c``.

    Args:
        x: A Variable, array, scalar or list.
        c: The exponent: a Python number (DeZero's form) or a Variable or array.

    Returns:
        A Variable of the broadcast shape.

    Examples:
        >>> import numpy as np
        >>> pow(np.array(3.0), 2)
        variable(9.0)
    """
    if isinstance(c, (int, float)):
        return Pow(c)(x)
    return PowVar()(x, c)


@defines(PowVar, methods=("__rpow__",))
def rpow(x: ArrayLike, c: Any) -> Variable:
    """Compute ``c ** x`` (the reflected form behind ``2.0 ** x``).

    Args:
        x: A Variable, array, scalar or list.
        c: The base.

    Returns:
        A Variable of the broadcast shape.
    """
    return PowVar()(c, x)


# literal, so that type checkers see the names (a test checks it against the ops defined here)
__all__ = [
    "add",
    "sub",
    "rsub",
    "mul",
    "div",
    "rdiv",
    "neg",
    "pow",
    "rpow",
    "Add",
    "Div",
    "Mul",
    "Neg",
    "Pow",
    "PowVar",
    "Sub",
]
