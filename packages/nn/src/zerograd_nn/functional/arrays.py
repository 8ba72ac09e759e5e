"""Array helpers shared by the functional ops: argument arrays, float conversion, sums.

Everything here works on backend arrays (never Variables, except where it says) through
the array module of the input, so any registered backend (numpy, cupy, ...) fits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zerograd import Function, Variable, as_array, no_grad
from zerograd.backends import backend_of, device_of, get_array_module, sum_dtype_of
from zerograd.functions import max as max_of
from zerograd.utils import data_of
from zerograd.variable import Constant

from ..kernels.generic import labels_as


def needs_grad(v: Any) -> bool:
    """False for operands given as raw arrays/scalars (their gradient is unreachable).

    Args:
        v: an input Variable of a Function.

    Returns:
        True unless ``v`` is a Constant made from a raw operand.
    """
    return type(v) is not Constant


def float_data(x: Any) -> Any:
    """``x`` itself when it is floating point, else ``x`` as float64 (numpy's default float).

    Float functions of integer or bool data compute in floating point: never truncate.

    Args:
        x: a backend array.

    Returns:
        A floating-point (or complex) array.
    """
    backend = backend_of(x)
    if backend.dtype_kind(x.dtype) in "fc":
        return x
    return backend.astype(x, backend.xp.float64)


class AsFloat(Function):
    """``x`` converted to float64 when it holds integers or bools; the gradient passes through.

    Args:
        dtype: the float dtype to convert to instead (a dtype of ``x``'s backend), or None
            for float64.
    """

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def __init__(self, dtype: Any = None) -> None:
        self.dtype = dtype

    def forward(self, x: Any) -> Any:
        if self.dtype is None or backend_of(x).dtype_kind(x.dtype) in "fc":
            return float_data(x)
        return backend_of(x).astype(x, self.dtype)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``gy``: the conversion passes the gradient through."""
        return gy


class Cast(Function):
    """``x`` as another float ``dtype``; the gradient is cast back to ``x``'s dtype.

    How a float16 function computes in float32 and rounds once where it is built from
    other functions (batch_norm): cast up, compute, cast down; the backward's sums then
    add in float32 too, and each gradient is rounded once.

    Args:
        dtype: the dtype to convert to (a dtype of ``x``'s backend).
    """

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype

    def forward(self, x: Any) -> Any:
        self.ctx = x.dtype
        return backend_of(x).astype(x, self.dtype)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``gy`` cast to the input's dtype."""
        return xp.apply(Cast(self.ctx), gy)


def as_float(x: Any, op: str, name: str = "x", next_to: Any = None) -> Variable:
    """Argument ``name`` of ``op`` as a Variable of floating-point data.

    Integer or bool data is converted (through :class:`AsFloat`) to float64, or, next to
    floating-point data, to the dtype numpy's ``x - next_to`` has (uint8 next to float32 is
    float32, int64 float64); floating data is kept.

    Args:
        x: the argument (Variable, array, list or number).
        op: the calling function's name, for error messages.
        name: the argument's name, for error messages.
        next_to: the other operand of a function of two (a Variable, an array or anything
            else, which counts as not floating), or None.

    Returns:
        A Variable holding floating-point data.

    Raises:
        TypeError: ``x`` is not a numeric array, Variable, list or number.
    """
    if not isinstance(x, Variable) or x.data is None:
        x = Variable(array_arg(op, name, x))
    backend = backend_of(x.data)
    if backend.dtype_kind(x.dtype) in "fc":
        return x
    other = getattr(next_to, "dtype", None)
    if other is None or type(data_of(next_to)) is not type(x.data):
        return AsFloat()(x)
    if backend.dtype_kind(other) != "f":
        return AsFloat()(x)
    try:
        dtype = backend.xp.result_type(x.dtype, other)
    except TypeError:  # array-API backends refuse to promote mixed kinds: the float's dtype
        dtype = other
    return AsFloat(dtype)(x)


def add_into(y: Any, b: Any) -> Any:
    """``y + b``, written into ``y``'s own memory where the backend's arrays are mutable.

    For a forward's fresh result that nothing else holds yet (a matmul's output gets its
    bias): no second array of ``y``'s size. The standard's in-place ``+=`` keeps ``y``'s
    dtype, so it is used only when ``b`` has that dtype (otherwise the promoted ``y + b``);
    arrays without in-place operators (JAX) make ``+=`` a plain ``y + b``.

    Args:
        y: a fresh backend array, unshared.
        b: an array that broadcasts to ``y``'s shape.

    Returns:
        The sum (``y`` itself where it was written in place).
    """
    if b.dtype != y.dtype:
        return y + b
    y += b
    return y


def array_arg(op: str, name: str, v: Any, like: Any = None) -> Any:
    """The array behind argument ``v`` of ``op``.

    A Variable's data or a backend array as is; a list or Python number converted (on
    ``like``'s backend); anything else a TypeError. Used where a function reads shapes or
    values itself, before any zerograd Function would check its inputs.

    Args:
        op: the calling function's name, for error messages.
        name: the argument's name.
        v: the value given.
        like: an array whose backend converted values go to (None: the default backend).

    Returns:
        A backend array.

    Raises:
        TypeError: ``v`` is not a numeric array, a Variable, a list or a number.
    """
    a = data_of(v)
    if isinstance(a, (list, tuple, int, float)) or getattr(a, "ndim", None) == 0:
        try:  # lists, Python and numpy scalars; 0-d arrays of a backend stay as they are
            backend_of(a)
        except TypeError:
            a = backend_of(like).asarray(a) if like is not None else as_array(a)
    try:
        backend = backend_of(a)
    except TypeError:
        backend = None
    if backend is None or backend.dtype_kind(a.dtype) not in "biufc":
        got = f"an array of dtype {a.dtype}" if backend is not None else type(a).__name__
        raise TypeError(f"{op}: {name} must be a numeric array, a Variable or a list, got {got}")
    return a


def int_bounds(t: Any) -> tuple[int, int]:
    """The least and the greatest value of the non-empty integer array ``t``, read at once.

    Unsigned arrays wider than 8 bits are compared as int64, since PyTorch has no min or max
    for uint16 .. uint64 (a uint64 beyond int64's range reads as negative: still refused by
    a range check).

    Returns:
        ``(lo, hi)`` as Python ints, with one transfer to the host (a GPU waits once).
    """
    backend = backend_of(t)
    xp = backend.xp
    if backend.dtype_kind(t.dtype) == "u" and t.dtype != backend.resolve_dtype("uint8"):
        t = backend.astype(t, "int64")
    lo, hi = backend.to_numpy(xp.stack([xp.min(t), xp.max(t)])).tolist()
    return int(lo), int(hi)


def refuse_variable(name: str, x: Any, instead: str) -> None:
    """Refuse a Variable given to ``name``, a helper of raw arrays that records no graph.

    Every backend would fail its own way deep inside (or numpy would read the values and
    drop the graph), so the error names the helper and what to use.

    Raises:
        TypeError: ``x`` is a Variable.
    """
    if isinstance(x, Variable):
        raise TypeError(
            f"F.{name}: x is a Variable; this helper takes a raw array and records no graph: "
            f"pass x.data, or use {instead} on the Variable"
        )


def logsumexp(x: Any, axis: int = 1) -> Any:
    """``log(sum(exp(x), axis, keepdims=True))`` on a raw array, without overflow.

    The sum of float16 exponentials is added in float32 (``Backend.sum``).

    Args:
        x: a backend array.
        axis: the axis to reduce.

    Returns:
        An array with ``axis`` kept as length 1.

    Raises:
        TypeError: ``x`` is a Variable (``F.log_softmax`` records a graph).
    """
    refuse_variable("logsumexp", x, "F.log_softmax")
    xp = get_array_module(x)
    m = xp.max(x, axis=axis, keepdims=True)
    return m + xp.log(backend_of(x).sum(xp.exp(x - m), (axis % x.ndim,), True))


def constant_max(x: Variable, axis: Any) -> Any:
    """The maximum of ``x`` along ``axis`` (kept as length 1), as a constant array.

    What a softmax built from elementary functions subtracts first (it cancels in the
    value and the gradient). Computed by zerograd's ``max`` without a graph rather than
    from ``x.data``, so that inside ``vmap``, where ``x.data`` stands for one sample and
    has no values to read, it is each sample's maximum (a batched array).

    Raises:
        TypeError, ValueError: ``axis`` is not an axis of ``x`` (as ``max`` raises them).
    """
    with no_grad():
        return max_of(x, axis=axis, keepdims=True).data


def in_float32(f: Callable[..., Any], x: Any, *args: Any) -> Any:
    """``f(x, *args)``, a float narrower than float32 computed in float32 and rounded once.

    For a softmax, a log-softmax or a loss, whose sums PyTorch adds in float32 and whose
    result it rounds once: float16 ``x`` is cast to float32 (``sum_dtype_of``), ``f`` runs
    there, and its result is cast back to ``x``'s dtype. Other dtypes run ``f`` as it is.

    Args:
        f: a function of a backend array (and ``args``) returning one array.
        x: a backend array.
        *args: passed on to ``f``.

    Returns:
        ``f``'s result, in ``x``'s dtype where ``x`` was cast.
    """
    wide = sum_dtype_of(x)
    if wide is None:
        return f(x, *args)
    b = backend_of(x)
    return b.astype(f(b.astype(x, wide), *args), x.dtype)


def onehot(t: Any, n_classes: int, dtype: Any) -> Any:
    """Rows of ``eye(n_classes)`` picked by integer labels ``t``, as ``dtype``.

    Args:
        t: integer labels (a backend array).
        n_classes: the number of classes.
        dtype: the result's dtype.

    Returns:
        An array of shape ``t.shape + (n_classes,)``.
    """
    return backend_of(t).astype(label_rows(t, n_classes), dtype)


def label_rows(t: Any, n_classes: int) -> Any:
    """:func:`onehot`'s rows as booleans: True where the column is the row's label.

    Args:
        t: integer labels (a backend array).
        n_classes: the number of classes.

    Returns:
        A bool array of shape ``t.shape + (n_classes,)``.
    """
    xp = get_array_module(t)
    classes = xp.arange(n_classes, device=device_of(t))
    t = labels_as(backend_of(t), t, classes.dtype)
    return classes == xp.reshape(t, t.shape + (1,))
