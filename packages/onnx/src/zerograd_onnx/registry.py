"""The op table: which converter writes each Function class as ONNX nodes.

Every function of :mod:`zerograd.functions` and :mod:`zerograd_nn.functional` that ONNX
can express is in :data:`CONVERTERS`. The gradient-only functions (``GetItemGrad``,
``Conv2DGradW``, ``Pooling2DGrad``, ``Pooling2DWithIndexes``) and the train-mode ones
(dropout's mask, batch norm's running-statistics update) are not: an exported forward runs
in test mode and computes no gradient. A function of your own gets a converter with
:func:`register`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import overload

import zerograd.functions as ZF
import zerograd_nn.functional as F
from zerograd import Function
from zerograd.checks import callable_arg
from zerograd_nn.functional import normalization as _batch_norm
from zerograd_nn.functional.arrays import AsFloat, Cast

from .context import OpContext
from .ops import activation, arithmetic, conv, linear, loss, normalization, pooling, reduction
from .ops import shape as shapes
from .ops.base import emits

Converter = Callable[[OpContext], None]

# The test-mode half of batch_norm; zerograd-nn keeps the class private, and this is the
# one name of it that zerograd-onnx reads (see the report of issue 41).
_Standardized = _batch_norm._Standardized

CONVERTERS: dict[type[Function], Converter] = {
    # arithmetic and elementwise math (ops/arithmetic.py)
    ZF.Add: arithmetic.elementwise("Add"),
    ZF.Sub: arithmetic.elementwise("Sub"),
    ZF.Mul: arithmetic.elementwise("Mul"),
    ZF.Div: arithmetic.elementwise("Div"),
    ZF.Neg: arithmetic.elementwise("Neg"),
    ZF.Pow: arithmetic.power,
    ZF.PowVar: arithmetic.elementwise("Pow"),
    ZF.Square: arithmetic.square,
    ZF.Exp: arithmetic.elementwise("Exp"),
    ZF.Log: arithmetic.elementwise("Log"),
    ZF.Sin: arithmetic.elementwise("Sin"),
    ZF.Cos: arithmetic.elementwise("Cos"),
    ZF.Tanh: arithmetic.elementwise("Tanh"),
    ZF.Sqrt: arithmetic.elementwise("Sqrt"),
    ZF.Clip: arithmetic.clip,
    AsFloat: arithmetic.as_float,
    Cast: arithmetic.as_float,
    # shapes (ops/shape.py)
    ZF.Reshape: shapes.reshape,
    ZF.Transpose: shapes.transpose,
    ZF.GetItem: shapes.get_item,
    ZF.BroadcastTo: shapes.broadcast_to,
    ZF.SumTo: shapes.sum_to,
    ZF.Concatenate: shapes.concatenate,
    ZF.Stack: shapes.stack,
    # reductions (ops/reduction.py)
    ZF.Sum: reduction.reduction("ReduceSum"),
    ZF.Mean: reduction.reduction("ReduceMean"),  # mean of float16 data
    ZF.Max: reduction.reduction("ReduceMax"),
    ZF.Min: reduction.reduction("ReduceMin"),
    # matrix products (ops/linear.py)
    ZF.MatMul: arithmetic.elementwise("MatMul"),
    F.Linear: linear.linear,
    # activations (ops/activation.py)
    F.Sigmoid: arithmetic.elementwise("Sigmoid"),
    F.ReLU: arithmetic.elementwise("Relu"),
    F.LeakyReLU: activation.leaky_relu,
    F.Softmax: activation.softmax,
    F.LogSoftmax: activation.log_softmax,
    # convolutions (ops/conv.py)
    F.Conv2d: conv.conv2d,
    F.Deconv2d: conv.deconv2d,
    F.Im2col: conv.im2col,
    F.Col2im: conv.col2im,
    # pooling (ops/pooling.py)
    F.Pooling: pooling.max_pooling,
    F.AveragePooling: pooling.average_pooling,
    # batch norm in test mode (ops/normalization.py); dropout in test mode is no function
    _Standardized: normalization.standardize,
    # losses (ops/loss.py)
    F.MeanSquaredError: loss.mean_squared_error,
    F.SoftmaxCrossEntropy: loss.softmax_cross_entropy,
}
"""``{Function class: converter}``: the table :func:`zerograd_onnx.export` reads."""

_builtin = dict(CONVERTERS)


def converter_for(fn: Function) -> Converter | None:
    """The converter of ``fn``'s class (its exact class: a subclass may compute otherwise)."""
    return CONVERTERS.get(type(fn))


@overload
def register(
    function_class: type[Function], converter: None = None, *, ops: tuple[str, ...] | list[str] = ()
) -> Callable[[Converter], Converter]: ...


@overload
def register(
    function_class: type[Function], converter: Converter, *, ops: tuple[str, ...] | list[str] = ()
) -> Converter: ...


# overloaded, so that a type checker knows which form returns what: with the union alone,
# @register(Cls, ops=(...)) was "incompatible type Callable[[Any], Any]; expected OpContext"
def register(
    function_class: type[Function],
    converter: Converter | None = None,
    *,
    ops: tuple[str, ...] | list[str] = (),
) -> Callable[[Converter], Converter] | Converter:
    """Give a Function class of your own a converter (or replace one), for ``export``.

    The converter receives an :class:`~zerograd_onnx.OpContext` and adds the ONNX nodes
    that compute ``ctx.outputs`` from ``ctx.inputs``, reading the function's settings from
    what its constructor stored on ``ctx.fn``. Use it as a decorator or call it directly.

    Args:
        function_class: a subclass of :class:`zerograd.Function`.
        converter: the converter; omitted, ``register`` returns a decorator.
        ops: the ONNX operators the converter adds (shown by :func:`supported`).

    Returns:
        The converter (or, without one, the decorator that registers it).

    Raises:
        TypeError: ``function_class`` is not a Function subclass, ``converter`` is not
            callable, or ``ops`` is not a tuple (or list) of operator names.

    Examples:
        >>> import zerograd
        >>> class Double(zerograd.Function):
        ...     def forward(self, x):
        ...         return 2 * x
        >>> @register(Double, ops=("Add",))
        ... def double(ctx):
        ...     (x,) = ctx.inputs
        ...     ctx.node("Add", [x, x], ctx.outputs[0])
        >>> unregister(Double)
    """
    if not (isinstance(function_class, type) and issubclass(function_class, Function)):
        raise TypeError(
            f"zerograd_onnx.register: function_class must be a subclass of zerograd.Function, "
            f"got {function_class!r}"
        )
    if (
        isinstance(ops, str)
        or not isinstance(ops, (tuple, list))
        or not all(isinstance(op, str) for op in ops)
    ):  # a bare "Add" would list its letters as the operators
        raise TypeError(
            f'zerograd_onnx.register: ops must be a tuple of ONNX operator names ("Add",), '
            f"got {ops!r}"
        )

    def add(fn: Converter) -> Converter:
        callable_arg("zerograd_onnx.register", "the converter", fn)
        if ops and not hasattr(fn, "onnx_ops"):
            emits(*ops)(fn)
        CONVERTERS[function_class] = fn
        return fn

    return add if converter is None else add(converter)


def unregister(function_class: type[Function]) -> None:
    """Forget the converter :func:`register` gave ``function_class`` (built-ins come back).

    Args:
        function_class: a class passed to :func:`register` before.
    """
    if function_class in _builtin:
        CONVERTERS[function_class] = _builtin[function_class]
    else:
        CONVERTERS.pop(function_class, None)


def supported() -> dict[type[Function], tuple[str, ...]]:
    """``{Function class: the ONNX operators its converter may add}``, in table order.

    Returns:
        The mapping (registered classes of your own included).

    Examples:
        >>> import zerograd_nn.functional as F
        >>> supported()[F.Conv2d]
        ('Conv',)
    """
    return {cls: tuple(getattr(fn, "onnx_ops", ())) for cls, fn in CONVERTERS.items()}


__all__ = ["register", "supported", "unregister"]
