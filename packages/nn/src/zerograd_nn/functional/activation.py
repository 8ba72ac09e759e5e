"""Activations: sigmoid, relu, leaky_relu, softmax, log_softmax (and the ``_simple`` forms).

Each fused op writes its derivative once, as a ``vjp`` that the engine runs on arrays
(first order) or on Variables (higher orders).
"""

from __future__ import annotations

from typing import Any

from zerograd import Function, Variable
from zerograd.backends import ORDERS_VALUES, backend_of, get_array_module, refuse_complex
from zerograd.checks import axis as normalize_axis
from zerograd.checks import axis_or_dim, real_number
from zerograd.functions import exp, sum
from zerograd.functions.arithmetic import ValueMask
from zerograd.functions.ops import defines, op
from zerograd.typing import ArrayLike
from zerograd.utils import size_of

from ..kernels import kernels_of
from .arrays import as_float, constant_max, float_data, in_float32
from .pytorch_names import LEAKY_RELU_KEYWORDS, refuses_pytorch_keywords


def _keep(y: Any, x: Any) -> Any:
    """``y`` in ``x``'s dtype (numpy 1.x promotes 0-d float32 combined with Python numbers).

    ``x`` and ``y`` are backend arrays (``y`` may be a numpy scalar), or both Variables,
    whose arithmetic keeps the dtype, so that only arrays are ever cast.
    """
    return y if y.dtype == x.dtype else backend_of(x).astype(y, x.dtype)


class _Activation(Function):
    """What the activations' functions share: their input's and result's description."""

    _doc_sections = """
        Args:
            x: the input (a Variable, an array or a list).

        Returns:
            A Variable of ``x``'s shape (floating point, also for integer ``x``).
        """


class Sigmoid(_Activation):
    """Logistic sigmoid ``1 / (1 + exp(-x))``, accurate in both tails (0 where exp overflows)."""

    vjp_reads_inputs = False

    def forward(self, x: Any) -> Any:
        x = float_data(x)
        return _keep(kernels_of(x).sigmoid(x), x)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``gy * y * (1 - y)``, the input's gradient, from the output."""
        if xp.graph:
            return _keep(gy * y * (1 - y), gy)
        return _keep(kernels_of(y).sigmoid_grad(y, gy), gy)  # one launch on a GPU


sigmoid = op(Sigmoid, example=("sigmoid(np.array([0.0])).data", "array([0.5])"))


def sigmoid_simple(x: ArrayLike) -> Variable:
    """``1 / (1 + exp(-x))`` built from elementary functions (the book's first version).

    Args:
        x: the input (a Variable, an array or a list).

    Returns:
        A Variable of ``x``'s shape (floating point, also for integer ``x``).
    """
    x = as_float(x, "sigmoid_simple")
    return 1 / (1 + exp(-x))


class ReLU(_Activation):
    """``max(x, 0)`` elementwise; the gradient passes where ``x > 0``."""

    _doc_sections = """
        Args:
            x: the input (a Variable, an array or a list).

        Returns:
            A Variable of ``x``'s shape and dtype.
        """

    vjp_reads_inputs = False

    def forward(self, x: Any) -> Any:
        refuse_complex("relu", x, ORDERS_VALUES)
        return _keep(get_array_module(x).maximum(x, 0), x)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``gy`` where ``y > 0`` (where ``x > 0``: ``y = max(x, 0)``), else 0."""
        if xp.graph:  # a Function of y: a static-graph replay computes it anew
            return gy * xp.apply(ValueMask(_positive, gy.dtype), y)
        return kernels_of(y).relu_grad(y, gy)


def _positive(a: Any) -> Any:
    """Where ``a > 0``: the mask of ReLU's and leaky ReLU's derivatives."""
    return a > 0


relu = op(ReLU, example=("relu(np.array([-1.0, 2.0])).data", "array([0., 2.])"))


class LeakyReLU(_Activation):
    """``x`` where positive, ``slope * x`` elsewhere (floating point for integer ``x``).

    Args:
        slope: the factor for negative inputs.

    Raises:
        TypeError: ``slope`` is not a real number.
    """

    vjp_reads_outputs = False

    def __init__(self, slope: float = 0.2) -> None:
        self.slope = real_number("leaky_relu", "slope", slope)

    def forward(self, x: Any) -> Any:
        refuse_complex("leaky_relu", x, ORDERS_VALUES)
        x = float_data(x)
        return _keep(get_array_module(x).where(x > 0, x, x * self.slope), x)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``gy`` where ``x > 0``, else ``slope * gy``."""
        if xp.graph:  # a Function of x: a static-graph replay computes it anew
            return gy * (
                xp.apply(ValueMask(_positive, gy.dtype), xs[0]) * (1.0 - self.slope) + self.slope
            )
        x = xs[0]
        backend = backend_of(x)  # of x: a 0-d comparison is a numpy scalar, of no backend
        scale = backend.astype(x > 0, gy.dtype) * (1.0 - self.slope) + self.slope
        if scale.dtype != gy.dtype:  # numpy 1.x: 0-d float32 with a Python float
            scale = backend.astype(scale, gy.dtype)
        return gy * scale


# the registry holds the function F exports: the generated one, wrapped
leaky_relu = defines(LeakyReLU)(refuses_pytorch_keywords(LEAKY_RELU_KEYWORDS)(op(LeakyReLU)))


class Softmax(_Activation):
    """Softmax along ``axis`` (DeZero's default 1; negative axes count from the end).

    float16 is computed in float32 and rounded once, as PyTorch computes it: its sums of
    exponentials added in float16 stopped at 2048 along a long axis.

    Args:
        axis: the axis to normalize over.
        dim: PyTorch's name for ``axis`` (give one of them).
    """

    vjp_reads_inputs = False

    def __init__(self, axis: int = 1, *, dim: int | None = None) -> None:
        self.axis = axis_or_dim("softmax", axis, dim, 1)

    def forward(self, x: Any) -> Any:
        axis = normalize_axis(self.axis, x.ndim, "softmax")
        x = float_data(x)
        self.ctx = axis  # past the checks: what follows cannot refuse
        if size_of(x) == 0:  # nothing to normalize (max of an empty axis is undefined)
            return backend_of(x).astype(x, x.dtype)
        return in_float32(kernels_of(x).softmax, x, axis)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``y * gy - y * sum(y * gy, axis)``, the input's gradient, from the output."""
        gx = y * gy
        return gx - y * xp.sum(gx, axis=self.ctx, keepdims=True)


def softmax_simple(x: ArrayLike, axis: int = 1) -> Variable:
    """``exp(x) / sum(exp(x), axis)`` from elementary functions.

    The maximum along ``axis`` is subtracted first (a constant: softmax does not change
    when every input shifts by the same amount), so large inputs do not overflow.

    Args:
        x: the input (a Variable, an array or a list).
        axis: the axis to normalize over.

    Returns:
        A Variable of ``x``'s shape (floating point, also for integer ``x``).
    """
    x = as_float(x, "softmax_simple")
    xd = x.data
    if isinstance(axis, int):  # numpy integers and tuples are left to sum's checks
        axis = normalize_axis(axis, xd.ndim, "softmax_simple")
    if size_of(xd):
        try:
            x = x - constant_max(x, axis)
        except (TypeError, ValueError):  # a bad axis: sum below names it
            pass
    y = exp(x)
    return y / sum(y, axis=axis, keepdims=True)


softmax = op(Softmax, example=("softmax(np.array([[0.0, 0.0]])).data", "array([[0.5, 0.5]])"))


class LogSoftmax(_Activation):
    """``log(softmax(x, axis))`` computed without overflow or log(0).

    float16 is computed in float32 and rounded once, as :class:`Softmax`.

    Args:
        axis: the axis to normalize over.
        dim: PyTorch's name for ``axis`` (give one of them).
    """

    vjp_reads_inputs = False

    def __init__(self, axis: int = 1, *, dim: int | None = None) -> None:
        self.axis = axis_or_dim("log_softmax", axis, dim, 1)

    def forward(self, x: Any) -> Any:
        axis = normalize_axis(self.axis, x.ndim, "log_softmax")
        x = float_data(x)
        self.ctx = axis  # past the checks: what follows cannot refuse
        if size_of(x) == 0:
            return backend_of(x).astype(x, x.dtype)
        return in_float32(_log_softmax, x, axis)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``gy - exp(y) * sum(gy, axis)``, the input's gradient, from the output."""
        return gy - xp.exp(y) * xp.sum(gy, axis=self.ctx, keepdims=True)


def _log_softmax(x: Any, axis: int) -> Any:
    # (x - m) - log(sum(exp(x - m))), PyTorch's order: x - (m + log(...)) rounded the log
    # into m, so logits of 1e30 gave 0 instead of -log(C), and a gradient of 1 - C
    xp = get_array_module(x)
    z = x - xp.max(x, axis=axis, keepdims=True)
    return z - xp.log(backend_of(x).sum(xp.exp(z), (axis,), True))


log_softmax = op(LogSoftmax)

# literal, so that type checkers see the names (a test checks it against the ops defined here)
__all__ = [
    "sigmoid",
    "relu",
    "leaky_relu",
    "softmax",
    "log_softmax",
    "LeakyReLU",
    "LogSoftmax",
    "ReLU",
    "Sigmoid",
    "Softmax",
    "sigmoid_simple",
    "softmax_simple",
]
