"""Losses and metrics: mean_squared_error, softmax/sigmoid/binary cross-entropy, accuracy."""

from __future__ import annotations

import math
from typing import Any

from zerograd import Constant, Function, Variable, no_grad
from zerograd.backends import (
    backend_of,
    device_of,
    get_array_module,
    refuse_complex,
    sum_dtype_of,
)
from zerograd.func import batch_values
from zerograd.functions import DivideByCount, clip, exp, get_item, log, mean, reshape, sum
from zerograd.functions.arithmetic import ValueMask
from zerograd.functions.ops import defines
from zerograd.typing import ArrayLike
from zerograd.utils import data_of as _data
from zerograd.utils import size_of

from ..kernels import kernels_of
from ..kernels.generic import labels_as
from .activation import Softmax, relu
from .arrays import (
    Cast,
    array_arg,
    as_float,
    constant_max,
    float_data,
    int_bounds,
    label_rows,
    needs_grad,
)
from .pytorch_names import (
    BINARY_CROSS_ENTROPY_KEYWORDS,
    CROSS_ENTROPY_KEYWORDS,
    MSE_KEYWORDS,
    SIGMOID_CROSS_ENTROPY_KEYWORDS,
    refuses_pytorch_keywords,
)

# why the losses and accuracy refuse complex data (zerograd.backends.refuse_complex)
_LOSS_IS_REAL = "a loss is a real number to minimize, and complex values give none"
_ARGMAX_IS_REAL = "its arg-max compares scores, and complex numbers have no order"


def _like(value: Any, x: Any) -> Any:
    """A reduced scalar as a 0-d array of ``x``'s dtype (numpy 1.x promotes scalar / int)."""
    return backend_of(x).asarray(value, dtype=x.dtype)


def _broadcast_shape(s0: tuple, s1: tuple) -> tuple | None:
    """The shape ``s0`` and ``s1`` broadcast to (numpy's rules), or None if they do not."""
    n = max(len(s0), len(s1))
    s0, s1 = (1,) * (n - len(s0)) + s0, (1,) * (n - len(s1)) + s1
    if any(a != b and 1 not in (a, b) for a, b in zip(s0, s1)):
        return None
    return tuple(max(a, b) if 0 not in (a, b) else 0 for a, b in zip(s0, s1))


def _paired_shape(op: str, x0: Any, x1: Any) -> tuple:
    """The shape of ``x0 - x1``, refusing operands that would not pair element with element.

    Broadcasting (3, 1) against (3,) would compare every prediction with every target and
    give a silently wrong loss: it gives more elements than either operand holds. Shapes
    that only differ by axes of length 1 with one element, such as (1, 1) and (1,) (the
    book's step 59), or one target row for every prediction, (N, C) and (C,), pass.
    """
    s0, s1 = (tuple(getattr(_data(x), "shape", ())) for x in (x0, x1))
    if s0 == s1:
        return s0
    shape = _broadcast_shape(s0, s1)
    if shape is None or math.prod(shape) > max(math.prod(s0), math.prod(s1)):
        raise ValueError(
            f"{op}: x0 of shape {s0} and x1 of shape {s1} differ; give predictions and "
            f"targets the same shape (reshape one of them, e.g. x1.reshape{s0}), since "
            f"broadcasting them would compare every prediction with every target."
        )
    return shape


class MeanSquaredError(Function):
    """``sum((x0 - x1)**2) / len(x0)`` in one graph node (integers computed as floats)."""

    vjp_reads_outputs = False

    def forward(self, x0: Any, x1: Any) -> Any:
        diff = float_data(x0) - float_data(x1)  # before subtracting: uint8 would wrap
        # float16: added and divided by the batch size in float32, rounded once
        return _like(backend_of(diff).sum(diff * diff, divisor=diff.shape[0]), diff)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> tuple[Any, Any]:
        """Return ``(g, -g)`` with ``g = (x0 - x1) * (2 * gy / len(x0))``."""
        x0, x1 = xs
        diff = x0 - x1
        gx = diff * (gy * (2.0 / diff.shape[0]))  # the 0-d factor first: one full-size product
        s0, s1 = self.inputs[0].shape, self.inputs[1].shape
        gx1 = -gx if needs_grad(self.inputs[1]) else None
        if s0 != s1:  # operands that broadcast (see _paired_shape): each gets its own shape
            gx = xp.sum_to(gx, s0) if gx.shape != s0 else gx
            gx1 = xp.sum_to(gx1, s1) if gx1 is not None and gx1.shape != s1 else gx1
        return gx, gx1


def _mse_operands(op: str, x0: Any, x1: Any) -> tuple[Variable, Variable]:
    x0, x1 = as_float(x0, op, "x0", next_to=x1), as_float(x1, op, "x1", next_to=x0)
    refuse_complex(op, x0, _LOSS_IS_REAL)
    refuse_complex(op, x1, _LOSS_IS_REAL)
    shape = _paired_shape(op, x0, x1)
    if not shape:
        raise ValueError(
            f"{op}: x0 and x1 are 0-d; the loss divides by the batch size len(x0), so give "
            f"arrays of shape (N, ...)."
        )
    if shape[0] == 0:
        raise ValueError(f"{op}: x0 and x1 of shape {shape} hold an empty batch")
    return x0, x1


def _over_batch(loss: Variable, n: int) -> Variable:
    """``sum(loss) / n``: DeZero's loss over a batch of ``n`` examples, ``loss`` of shape (n, ...).

    float16 is ``sum(mean(loss, axis=0))``, the same number: the mean over the batch adds
    in float32 and divides by ``n`` there (:func:`~zerograd.functions.mean`), so neither a
    sum past 65,504 nor a batch past 65,504 (``inf`` in float16) makes the loss ``inf``, 0
    or nan; its gradient is ``gy / n`` rounded once. Other dtypes keep ``sum(loss) / n``.
    """
    if sum_dtype_of(loss.data) is None:
        return sum(loss) / n
    return sum(mean(loss, axis=0))


@defines()
def mean_squared_error_simple(x0: ArrayLike, x1: ArrayLike) -> Variable:
    """``sum((x0 - x1) ** 2) / len(x0 - x1)`` from elementary functions.

    Args:
        x0: predictions, shape (N, ...).
        x1: targets of the same shape (see :func:`mean_squared_error` for the shapes that
            may differ).

    Returns:
        A 0-d Variable.
    """
    x0, x1 = _mse_operands("mean_squared_error_simple", x0, x1)
    diff = x0 - x1
    return _over_batch(diff**2, len(diff))


@defines(MeanSquaredError)
@refuses_pytorch_keywords(MSE_KEYWORDS)
def mean_squared_error(x0: ArrayLike, x1: ArrayLike) -> Variable:
    """Sum of squared differences divided by the batch size (DeZero's definition).

    The batch size is ``len(x0 - x1)``: ``len(x0)`` when the shapes are equal. float16 is
    added, and divided by the batch size, in float32 and rounded once (PyTorch's way): a
    batch past 65,504 rows keeps a finite loss.

    Args:
        x0: predictions, shape (N, ...).
        x1: targets of the same shape. Shapes may differ only where broadcasting pairs each
            prediction with one target: (1, 1) with (1,), or (N, C) with one target row (C,).

    Returns:
        A 0-d Variable (floating point, also for integer inputs).

    Raises:
        ValueError: the shapes would broadcast to more elements than either operand holds
            (every prediction compared with every target, e.g. (3, 1) with (3,)), or they
            do not broadcast, or the inputs are 0-d or empty.

    Examples:
        >>> import numpy as np
        >>> mean_squared_error(np.array([1.0, 2.0]), np.array([0.0, 0.0])).data
        array(2.5)
    """
    return MeanSquaredError()(*_mse_operands("mean_squared_error", x0, x1))


mse_loss = mean_squared_error
"""PyTorch's name (``F.mse_loss``) for :func:`mean_squared_error`, with DeZero's meaning:
the sum of squared differences divided by the batch size ``len(x0)``. PyTorch's default
(``reduction='mean'``) divides by the number of elements; the two agree for one output per
example, shape (N,) or (N, 1). For PyTorch's number on (N, D): ``mse_loss(x0, x1) / D``."""


def _refuse_one_hot(op: str, scores: str, x_shape: tuple, t: Any) -> None:
    """Refuse labels ``t`` shaped like the (N, classes) scores: one-hot rows, not class ids."""
    if len(x_shape) == 2 and x_shape[1] > 1 and tuple(t.shape) == tuple(x_shape):
        raise ValueError(
            f"{op}: labels t of shape {tuple(t.shape)} have the shape of the scores {scores} "
            f"{tuple(x_shape)}, but this function takes one class id per row, shape "
            f"({x_shape[0]},). For one-hot labels: pass `t.argmax(axis=1)`."
        )


def _check_labels(op: str, x: Any, t: Any) -> Any:
    t = array_arg(op, "labels t", t, like=x.data)
    _refuse_one_hot(op, "x", tuple(x.shape), t)
    if x.ndim != 2:
        raise ValueError(f"{op}: expected scores x of shape (N, classes), got {tuple(x.shape)}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(
            f"{op}: scores x of shape {tuple(x.shape)} hold no "
            f"{'rows' if x.shape[0] == 0 else 'classes'}; the mean loss over an empty batch is "
            f"undefined."
        )
    if backend_of(t).dtype_kind(t.dtype) not in "iu":
        raise TypeError(
            f"{op}: labels t must be integers (class ids), got dtype {t.dtype}; convert them "
            f"with t.astype('int64')."
        )
    if size_of(t) != x.shape[0]:
        raise ValueError(
            f"{op}: {size_of(t)} labels for {x.shape[0]} rows of scores {tuple(x.shape)}"
        )
    if t.ndim != 1:  # labels given as they are stay the same array (a static graph's input)
        t = get_array_module(t).reshape(t, (-1,))
    return t


def _check_label_range(op: str, x_shape: tuple, t: Any) -> None:
    """Refuse labels outside ``0..classes - 1``, which indexing would not refuse clearly.

    numpy raises an IndexError of its own, and CuPy wraps out-of-range indices around
    silently. A Function's forward calls it, so that a static-graph replay checks each
    batch too.
    """
    if not t.shape[0]:
        return
    lo, hi = int_bounds(t)
    if lo < 0 or hi >= x_shape[1]:
        raise ValueError(
            f"{op}: labels must be class ids in 0..{x_shape[1] - 1} for scores of shape "
            f"{tuple(x_shape)}, got labels from {lo} to {hi}; check the number of classes."
        )


class SoftmaxCrossEntropy(Function):
    """Mean cross-entropy of scores against integer labels, via log-sum-exp."""

    vjp_reads_outputs = False

    check_values_of = (1,)  # the labels' values; the scores' shape

    def check(self, x: Any, t: Any) -> None:
        _check_label_range("softmax_cross_entropy", x.shape, t)

    def forward(self, x: Any, t: Any) -> Any:
        self.check(x, t)
        x = float_data(x)
        wide = _wide_scores(x)
        rows, kept = kernels_of(wide).cross_entropy_rows_kept(wide, t)
        y = _row_mean(rows, x)
        self.ctx = kept  # kept for the first-order vjp, until it runs
        return y

    def kernel(self, x: Any, t: Any) -> Any:
        # a replay's kernel keeps nothing, so its vjp computes the softmax again; dropping
        # the recording's kept arrays leaves the attributes as the kernel would
        y = _mean_cross_entropy  # a replay runs check first
        self.ctx = None
        return y

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> tuple[Any, None]:
        """Return ``(softmax(x) - onehot(t)) * gy / N`` for the scores; labels get None."""
        n, classes = self.inputs[0].shape
        narrow = sum_dtype_of(xs[0]) is not None  # float16: computed in float32 (N > 65504)
        if not xp.graph:  # first order: one kernel (no one-hot array on numpy)
            x = float_data(xs[0])
            kept, self.ctx = self.ctx, None  # the kernel may write over it: used once
            if not narrow:
                return kernels_of(x).cross_entropy_grad(x, xs[1], _like(gy / n, x), kept), None
            wide = _wide_scores(x)
            scale = _like(backend_of(gy).astype(gy, wide.dtype) / n, wide)
            grad = kernels_of(wide).cross_entropy_grad(wide, xs[1], scale, kept)
            return backend_of(x).astype(grad, x.dtype), None
        p = xp.apply(Softmax(1), xs[0])  # exact even where logsumexp rounds; floats for ints
        scale = xp.apply(DivideByCount(n), gy) if narrow else gy / n
        # the one-hot rows as a Function of the labels: a static-graph replay makes them
        # from each call's labels (made in Python from t.data, they were a constant)
        hot = xp.apply(ValueMask(label_rows, p.dtype, classes), xs[1])
        return (p - hot) * scale, None


def _wide_scores(x: Any) -> Any:
    """Float scores ``x`` as the loss computes them: float16 as float32 (``sum_dtype_of``).

    PyTorch computes a float16 cross-entropy in float32 and rounds the loss once; in float16
    a batch of more than 65,504 rows was ``inf`` and the loss nan.
    """
    wide = sum_dtype_of(x)
    return x if wide is None else backend_of(x).astype(x, wide)


def _mean_cross_entropy(x: Any, t: Any) -> Any:
    """The mean over the rows of ``logsumexp(x[i]) - x[i, t[i]]`` (labels checked)."""
    x = float_data(x)
    wide = _wide_scores(x)
    return _row_mean(kernels_of(wide).cross_entropy_rows(wide, t), x)


def _row_mean(rows: Any, x: Any) -> Any:
    """The mean of the per-row losses of ``x``, as a 0-d array of ``x``'s dtype.

    The rows are added, and divided by their number, in float32 for float16 (Backend.sum).
    """
    return _like(backend_of(rows).sum(rows, divisor=x.shape[0]), x)


@defines()
def softmax_cross_entropy_simple(x: ArrayLike, t: ArrayLike) -> Variable:
    """Mean of ``-log softmax(x)[t]`` from elementary functions, through log-sum-exp.

    Each row's maximum is subtracted first (a constant: it cancels in the gradient), so
    logits of any size give the exact loss and a finite gradient.

    Args:
        x: scores, shape (N, classes).
        t: integer labels, shape (N,).

    Returns:
        A 0-d Variable.
    """
    x = as_float(x, "softmax_cross_entropy_simple")
    refuse_complex("softmax_cross_entropy_simple", x, _LOSS_IS_REAL)
    t = _check_labels("softmax_cross_entropy_simple", x, t)
    _check_label_range("softmax_cross_entropy_simple", x.shape, t)
    n = x.shape[0]
    shifted = x - constant_max(x, 1)
    log_p = shifted - log(sum(exp(shifted), axis=1, keepdims=True))
    tlog_p = get_item(log_p, (get_array_module(t).arange(n, device=device_of(t)), t))
    return -1 * _over_batch(tlog_p, n)


@defines(SoftmaxCrossEntropy)
@refuses_pytorch_keywords(CROSS_ENTROPY_KEYWORDS)
def softmax_cross_entropy(x: ArrayLike, t: ArrayLike) -> Variable:
    """Mean cross-entropy of scores ``x`` (N, classes) against integer labels ``t`` (N,).

    Computed through log-sum-exp, so large scores neither overflow nor take log(0). The
    labels' range is checked on every call, a static-graph replay's included. On a GPU
    that reads their minimum and maximum back: eagerly it waits for the queued forward
    (0.3 to 0.46 ms of a step on an H200), in a replay it runs before any of the replay's
    work and waits for nothing queued (about 0.12 ms). float16 scores are computed in
    float32 and the loss and its gradient rounded once (PyTorch's way).

    Args:
        x: scores, shape (N, classes).
        t: integer labels, shape (N,).

    Returns:
        A 0-d Variable.

    Raises:
        ValueError: ``x`` is not (N, classes) or is empty, or ``t`` does not hold one class id
            in ``0..classes - 1`` per row (one-hot labels of shape (N, classes) included:
            pass ``t.argmax(axis=1)``).
        TypeError: ``t`` is not integer.

    Examples:
        >>> import numpy as np
        >>> float(softmax_cross_entropy(np.zeros((2, 4)), np.array([0, 3])).data)  # log(4)
        1.3862943611198906
    """
    if not isinstance(x, Variable):
        x = Variable(array_arg("softmax_cross_entropy", "scores x", x))
    refuse_complex("softmax_cross_entropy", x, _LOSS_IS_REAL)
    return SoftmaxCrossEntropy()(x, _check_labels("softmax_cross_entropy", x, t))


cross_entropy = softmax_cross_entropy
"""PyTorch's name (``F.cross_entropy``) for :func:`softmax_cross_entropy`: the mean over the
batch, from scores and integer class ids (one-hot or probability targets are refused)."""


def _targets_like(op: str, x: Variable, t: Any) -> Any:
    """Targets ``t`` as a Constant of ``x``'s shape and dtype; (N,) and (N, 1) fit each other."""
    t = array_arg(op, "targets t", t, like=x.data)
    refuse_complex(op, t, _LOSS_IS_REAL)  # astype below would drop the imaginary parts
    xs, ts = tuple(x.shape), tuple(t.shape)
    column = {len(xs), len(ts)} == {1, 2} and (xs + (1,))[:2] == (ts + (1,))[:2]  # (N,), (N, 1)
    if ts != xs and not column:
        raise ValueError(
            f"{op}: targets of shape {ts} do not match inputs {xs}; give one target per input, "
            f"in the same shape."
        )
    if x.ndim == 0 or x.shape[0] == 0:
        raise ValueError(
            f"{op}: inputs of shape {xs} hold no batch; the loss divides by the batch size "
            f"len(x), so give a non-empty array of shape (N, ...)."
        )
    if batch_values(t) is not t:  # per-sample targets inside vmap: no values, so no xp
        t = t.astype(x.dtype)
        return t if ts == xs else reshape(Constant(t), x.shape)
    # converted by Functions, so that a static-graph replay converts each call's targets
    # (converted here on arrays, they were a constant to the recordings)
    v = Cast(x.dtype)(t)
    return _constant(v if ts == xs else reshape(v, x.shape))


def _constant(v: Variable) -> Constant:
    """The array of ``v``, which Functions made from targets, as a Constant: no gradient."""
    return Constant(v.data)


@defines()
@refuses_pytorch_keywords(SIGMOID_CROSS_ENTROPY_KEYWORDS)
def sigmoid_cross_entropy(x: ArrayLike, t: ArrayLike) -> Variable:
    """Binary cross-entropy of logits ``x`` against 0/1 targets ``t``, summed / ``len(x)``.

    Uses ``relu(x) - x*t + log(1 + exp(-|x|))``, exact for any finite logit. The gradient
    is ``(sigmoid(x) - t) / len(x)`` at infinite logits too (PyTorch's); the loss of an
    infinite logit is ``inf`` for ``x = -inf, t = 1`` and nan for the other targets
    (``inf * 0``; PyTorch's is ``inf`` for ``x = inf, t = 0`` and nan for the others).
    float16 is summed over the batch and divided by ``len(x)`` in float32 (a mean over the
    batch axis, then a sum), so a batch past 65,504 rows keeps a finite loss.

    Args:
        x: logits, shape (N, ...).
        t: 0/1 targets of the same shape.

    Returns:
        A 0-d Variable.

    Raises:
        ValueError: the shapes differ, or the batch is empty.
    """
    x = as_float(x, "sigmoid_cross_entropy")
    refuse_complex("sigmoid_cross_entropy", x, _LOSS_IS_REAL)
    t = _targets_like("sigmoid_cross_entropy", x, t)
    r = relu(x)
    # -|x| as min(x, 0) - max(x, 0): -inf at x = inf (x - 2 * relu(x) was inf - inf, nan),
    # and its derivative at 0 is 1 (clip's bounds pass the gradient), so the gradient there
    # is sigmoid(0) - t
    neg_abs = clip(x, None, 0) - r
    loss = r - x * t + log(1 + exp(neg_abs))
    return _over_batch(loss, len(x))


_DEZERO_LOWEST = 1e-15
_lowest: dict[type, dict] = {}  # array type -> {dtype: binary_cross_entropy's lower clip}


def _lowest_probability(p: Any) -> float:
    """DeZero's lower clip of probabilities, 1e-15, or ``2**-14`` where ``p``'s dtype lacks it.

    float16 rounds 1e-15 to 0 (``log(p) * t`` was ``-inf * 0``, a nan loss), and log's
    derivative ``1 / p`` overflows it below ``2**-16`` (a nan gradient); its smallest normal
    number, ``2**-14``, has neither problem. Asked of the backend once per array type and
    dtype.
    """
    known = _lowest.setdefault(type(p), {})
    low = known.get(p.dtype)
    if low is None:
        tiny = float(backend_of(p).asarray(_DEZERO_LOWEST, dtype=p.dtype))
        low = known[p.dtype] = _DEZERO_LOWEST if tiny > 0.0 else 2.0**-14
    return low


@defines()
@refuses_pytorch_keywords(BINARY_CROSS_ENTROPY_KEYWORDS)
def binary_cross_entropy(p: ArrayLike, t: ArrayLike) -> Variable:
    """Cross-entropy of probabilities ``p`` against 0/1 targets, summed / ``len(t)``.

    ``p`` is clipped to ``[1e-15, 0.999]`` first, as in DeZero (float16, which has no
    1e-15, to ``[2**-14, 0.999]``): the loss is finite at 0 and 1, and its gradient is zero
    where ``p`` was clipped (PyTorch clamps the logarithms at -100 instead). float16 is
    summed and divided by ``len(t)`` in float32, as in :func:`sigmoid_cross_entropy`.

    Args:
        p: probabilities, shape (N, ...).
        t: 0/1 targets of the same shape.

    Returns:
        A 0-d Variable.

    Raises:
        ValueError: ``p`` holds values outside ``[0, 1]`` (not probabilities: apply
            ``sigmoid`` first, or use :func:`sigmoid_cross_entropy` on the scores).
    """
    p = as_float(p, "binary_cross_entropy", "p")
    refuse_complex("binary_cross_entropy", p, _LOSS_IS_REAL)
    t = _targets_like("binary_cross_entropy", p, t)
    if p.size:
        xp, every = get_array_module(p.data), batch_values(p.data)  # inside vmap: all samples
        lo, hi = float(xp.min(every)), float(xp.max(every))
        if not (0.0 <= lo and hi <= 1.0):  # nan fails too
            raise ValueError(
                f"binary_cross_entropy: p must be probabilities in [0, 1], got values from {lo} "
                f"to {hi}; apply sigmoid first, or use sigmoid_cross_entropy on the scores."
            )
    p = clip(p, _lowest_probability(p.data), 0.999)
    rest = 1 - t  # a Function of the Constant (inside vmap, t is a raw array)
    tlog_p = log(p) * t + log(1 - p) * (_constant(rest) if type(t) is Constant else rest)
    return -1 * _over_batch(tlog_p, t.shape[0])


class Accuracy(Function):
    """The fraction of rows of scores whose arg-max is the row's label: a metric, no gradient.

    A Function, so that a static-graph recording sees it as work on each call's scores and
    labels, which its replays do again: computed in Python from the scores' array, the
    fraction would be a value no replay could reproduce. :func:`accuracy` applies it with
    no graph.
    """

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    check_values_of = (1,)  # the labels' values; the scores' shape

    def check(self, y: Any, t: Any) -> None:
        _check_label_range("accuracy", y.shape, get_array_module(t).reshape(t, (-1,)))

    def forward(self, y: Any, t: Any) -> Any:
        self.check(y, t)
        return _hit_rate(y, t)

    def kernel(self, y: Any, t: Any) -> Any:
        return _hit_rate  # a replay runs check first

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> tuple[None, None]:
        """Return None for both: an arg-max has no gradient, nor have labels."""
        return None, None


def _hit_rate(y: Any, t: Any) -> Any:
    """The mean of ``argmax(y, axis=1) == t``, a 0-d array (``Accuracy.check`` not run).

    Of ``y``'s dtype for float scores, float64 for others.
    """
    xp = get_array_module(y)
    b = backend_of(y)
    # both flat: one row's 0-d label (a Python int) compared 0-d arrays into a numpy scalar
    pred = xp.reshape(xp.argmax(y, axis=1), (-1,))
    t = labels_as(b, t, pred.dtype)
    hits = pred == xp.reshape(t, (-1,))
    hits = b.astype(hits, y.dtype if b.dtype_kind(y.dtype) == "f" else "float64")
    return _like(xp.mean(hits), hits)


@defines(Accuracy)
def accuracy(y: ArrayLike, t: ArrayLike) -> Variable:
    """Fraction of rows whose arg-max of ``y`` equals the label ``t``; no gradient.

    The result has no creator, as DeZero's. Inside :func:`zerograd.static_graph` a replay
    computes it again from each call's scores and labels.

    Args:
        y: scores, shape (N, classes).
        t: integer labels, one per row.

    Returns:
        A 0-d Variable holding the fraction.

    Raises:
        ValueError: ``y`` is not (N, classes) or has no rows, has one column (a binary
            classifier's single score, whose arg-max is always 0: compare it with a
            threshold instead), the label count differs
            (one-hot labels of ``y``'s shape included: pass ``t.argmax(axis=1)``), or a
            label is not a class id in ``0..classes - 1``.
        TypeError: ``t`` is not integer.

    Examples:
        >>> import numpy as np
        >>> float(accuracy(np.array([[0.1, 0.9], [0.8, 0.2]]), np.array([1, 1])).data)
        0.5
    """
    y = array_arg("accuracy", "scores y", y)
    refuse_complex("accuracy", y, _ARGMAX_IS_REAL)
    t = array_arg("accuracy", "labels t", t, like=y)
    _refuse_one_hot("accuracy", "y", tuple(y.shape), t)
    if y.ndim < 2:
        raise ValueError(
            f"accuracy: expected scores y of shape (N, classes), got {tuple(y.shape)}; the "
            f"arg-max is taken over axis 1."
        )
    if y.shape[1] == 1:  # the arg-max of one column is 0 whatever the scores
        raise ValueError(
            f"accuracy: scores y of shape {tuple(y.shape)} have one column (one class): the "
            f"arg-max over axis 1 is always class 0. For a binary classifier's single score, "
            f"compare it with a threshold yourself: ((y.data > 0).reshape(t.shape) == t).mean() "
            f"for a logit (> 0.5 for a sigmoid's output); or give scores of two columns, one "
            f"per class."
        )
    n_pred, n_labels = y.shape[0] * math.prod(y.shape[2:]), size_of(t)
    if n_pred != n_labels:
        raise ValueError(
            f"accuracy: {n_pred} predictions from scores y of shape {tuple(y.shape)} but "
            f"{n_labels} labels t of shape {tuple(t.shape)}; give one label per row of y."
        )
    if n_pred == 0:
        raise ValueError(
            f"accuracy: scores y of shape {tuple(y.shape)} hold no rows; the accuracy of an "
            f"empty batch is undefined."
        )
    if backend_of(y).dtype_kind(t.dtype) not in "iu":
        raise TypeError(
            f"accuracy: labels t must be integers (class ids), got dtype {t.dtype}; convert "
            f"them with t.astype('int64')."
        )
    with no_grad():  # a metric: no graph, whatever the mode
        rate = Accuracy()(y, t)
    return Variable(rate.data)  # a leaf, as DeZero's (backward() seeds it)


# literal, so that type checkers see the names (a test checks it against the ops defined here)
__all__ = [
    "mean_squared_error_simple",
    "mean_squared_error",
    "softmax_cross_entropy_simple",
    "softmax_cross_entropy",
    "sigmoid_cross_entropy",
    "binary_cross_entropy",
    "accuracy",
    "Accuracy",
    "MeanSquaredError",
    "SoftmaxCrossEntropy",
    "mse_loss",
    "cross_entropy",
]
