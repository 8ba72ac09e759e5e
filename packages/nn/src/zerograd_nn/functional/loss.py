"""Losses and metrics: mean_squared_error, softmax/sigmoid/binary cross-entropy, accuracy."""

from __future__ import annotations

from typing import Any

from zerograd import Function, Variable, as_variable
from zerograd.backends import backend_of, device_of, get_array_module
from zerograd.functions import clip, exp, get_item, log, sum

from .activation import relu, softmax
from .utils import as_float, float_data, logsumexp, onehot, recording


def _data(x: Any) -> Any:
    return x.data if isinstance(x, Variable) else x


def _like(value: Any, x: Any) -> Any:
    """A reduced scalar as a 0-d array of ``x``'s dtype (numpy 1.x promotes scalar / int)."""
    return backend_of(x).asarray(value, dtype=x.dtype)


def _same_shape(op: str, x0: Any, x1: Any) -> None:
    """Refuse operands of different shapes: broadcasting (3, 1) against (3,) would compare
    every prediction with every target and give a silently wrong loss."""
    s0, s1 = (tuple(getattr(_data(x), "shape", ())) for x in (x0, x1))
    if s0 != s1:
        raise ValueError(
            f"{op}: x0 of shape {s0} and x1 of shape {s1} differ; give predictions and "
            f"targets the same shape (reshape one of them, e.g. x1.reshape{s0}), since "
            f"broadcasting them would compare every prediction with every target."
        )


class MeanSquaredError(Function):
    """``sum((x0 - x1)**2) / len(x0)`` in one graph node (integers computed as floats)."""

    def forward(self, x0: Any, x1: Any) -> Any:
        diff = float_data(x0) - float_data(x1)  # before subtracting: uint8 would wrap
        xp = get_array_module(diff)
        return _like(xp.sum(diff * diff) / diff.shape[0], diff)

    def backward(self, gy: Variable) -> tuple[Variable, Variable]:
        x0, x1 = self.inputs
        diff = x0 - x1
        gx = gy * diff * (2.0 / diff.shape[0])
        return gx, -gx


def _mse_operands(op: str, x0: Any, x1: Any) -> tuple[Variable, Variable]:
    x0, x1 = as_float(x0), as_float(x1)
    _same_shape(op, x0, x1)
    if x0.ndim == 0:
        raise ValueError(
            f"{op}: x0 and x1 are 0-d; the loss divides by the batch size len(x0), so give "
            f"arrays of shape (N, ...)."
        )
    if x0.shape[0] == 0:
        raise ValueError(f"{op}: x0 and x1 of shape {x0.shape} hold an empty batch")
    return x0, x1


def mean_squared_error_simple(x0: Any, x1: Any) -> Variable:
    """``sum((x0 - x1) ** 2) / len(x0)`` from elementary functions."""
    x0, x1 = _mse_operands("mean_squared_error_simple", x0, x1)
    diff = x0 - x1
    return sum(diff**2) / len(diff)


def mean_squared_error(x0: Any, x1: Any) -> Variable:
    """Sum of squared differences divided by the batch size ``len(x0)`` (DeZero's definition).

    Args:
        x0: predictions, shape (N, ...).
        x1: targets of the same shape (they never broadcast).

    Returns:
        A 0-d Variable (floating point, also for integer inputs).

    Raises:
        ValueError: the shapes differ, or the inputs are 0-d or empty.

    Examples:
        >>> import numpy as np
        >>> mean_squared_error(np.array([1.0, 2.0]), np.array([0.0, 0.0])).data
        array(2.5)
    """
    return MeanSquaredError()(*_mse_operands("mean_squared_error", x0, x1))


def _check_labels(op: str, x: Any, t: Any) -> Any:
    t = _data(t)
    if x.ndim != 2:
        raise ValueError(f"{op}: expected scores x of shape (N, classes), got {x.shape}")
    if backend_of(t).dtype_kind(t.dtype) not in "iu":
        raise TypeError(
            f"{op}: labels t must be integers (class ids), got dtype {t.dtype}; convert them "
            f"with t.astype('int64')."
        )
    if t.size != x.shape[0]:
        raise ValueError(f"{op}: {t.size} labels for {x.shape[0]} rows of scores {x.shape}")
    xp = get_array_module(t)
    t = xp.reshape(t, (-1,))
    if t.size:
        lo, hi = int(xp.min(t)), int(xp.max(t))
        if lo < 0 or hi >= x.shape[1]:
            raise ValueError(
                f"{op}: labels must be class ids in 0..{x.shape[1] - 1} for scores of shape "
                f"{x.shape}, got labels from {lo} to {hi}; check the number of classes."
            )
    return t


class SoftmaxCrossEntropy(Function):
    """Mean cross-entropy of scores against integer labels, via log-sum-exp."""

    def forward(self, x: Any, t: Any) -> Any:
        n = x.shape[0]
        x = float_data(x)
        xp = get_array_module(x)
        log_p = (x - logsumexp(x, axis=1))[xp.arange(n, device=device_of(x)), t]
        return _like(-xp.sum(log_p) / n, x)

    def backward(self, gy: Variable) -> tuple[Variable, None]:
        x, t = self.inputs
        n, classes = x.shape
        if not recording():
            xd = float_data(x.data)
            xp = get_array_module(xd)
            e = xp.exp(xd - xp.max(xd, axis=1, keepdims=True))
            p = e / xp.sum(e, axis=1, keepdims=True)  # exact even where logsumexp rounds
            p = p - onehot(t.data, classes, p.dtype)  # new array: immutable backends fit
            return Variable(p * (gy.data / n)), None
        p = softmax(x)
        return (p - onehot(t.data, classes, p.dtype)) * (gy / n), None


def softmax_cross_entropy_simple(x: Any, t: Any) -> Variable:
    """Mean of ``-log softmax(x)[t]`` from elementary functions, through log-sum-exp.

    Each row's maximum is subtracted first (a constant: it cancels in the gradient), so
    logits of any size give the exact loss and a finite gradient.
    """
    x = as_float(x)
    t = _check_labels("softmax_cross_entropy_simple", x, t)
    n = x.shape[0]
    xp = get_array_module(x.data)
    shifted = x - xp.max(x.data, axis=1, keepdims=True)
    log_p = shifted - log(sum(exp(shifted), axis=1, keepdims=True))
    tlog_p = get_item(log_p, (get_array_module(t).arange(n, device=device_of(t)), t))
    return -1 * sum(tlog_p) / n


def softmax_cross_entropy(x: Any, t: Any) -> Variable:
    """Mean cross-entropy of scores ``x`` (N, classes) against integer labels ``t`` (N,).

    Computed through log-sum-exp, so large scores neither overflow nor take log(0).
    """
    x = as_variable(x)
    return SoftmaxCrossEntropy()(x, _check_labels("softmax_cross_entropy", x, t))


def _targets_like(op: str, x: Variable, t: Any) -> Any:
    t = _data(t)
    if t.size != x.size:
        raise ValueError(f"{op}: targets of shape {t.shape} do not match inputs {x.shape}")
    xp = get_array_module(t)
    return backend_of(t).astype(xp.reshape(t, x.shape), x.dtype)


def sigmoid_cross_entropy(x: Any, t: Any) -> Variable:
    """Binary cross-entropy of logits ``x`` against 0/1 targets ``t``, summed / ``len(x)``.

    Uses ``relu(x) - x*t + log(1 + exp(-|x|))``, exact for any logit size.
    """
    x = as_float(x)
    t = _targets_like("sigmoid_cross_entropy", x, t)
    neg_abs = x - 2 * relu(x)  # -|x|
    loss = relu(x) - x * t + log(1 + exp(neg_abs))
    return sum(loss) / len(x)


def binary_cross_entropy(p: Any, t: Any) -> Variable:
    """Cross-entropy of probabilities ``p`` against 0/1 targets, summed / ``len(t)``.

    ``p`` is clipped to ``[1e-15, 0.999]`` first, as in DeZero.
    """
    p = as_float(p)
    t = _targets_like("binary_cross_entropy", p, t)
    p = clip(p, 1e-15, 0.999)
    tlog_p = t * log(p) + (1 - t) * log(1 - p)
    return -1 * sum(tlog_p) / len(t)


def accuracy(y: Any, t: Any) -> Variable:
    """Fraction of rows whose arg-max of ``y`` equals the label ``t``; no gradient."""
    y, t = _data(y), _data(t)
    if y.ndim < 2:
        raise ValueError(
            f"accuracy: expected scores y of shape (N, classes), got {tuple(y.shape)}; the "
            f"arg-max is taken over axis 1."
        )
    xp = get_array_module(y)
    pred = xp.argmax(y, axis=1)
    if pred.size != t.size:
        raise ValueError(
            f"accuracy: {pred.size} predictions from scores y of shape {tuple(y.shape)} but "
            f"{t.size} labels t of shape {tuple(t.shape)}; give one label per row of y."
        )
    pred = xp.reshape(pred, t.shape)
    b = backend_of(y)
    hits = b.astype(pred == t, y.dtype if b.dtype_kind(y.dtype) == "f" else "float64")
    return Variable(xp.mean(hits))
