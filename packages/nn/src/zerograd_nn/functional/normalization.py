"""Batch normalization and dropout: the ops whose behaviour depends on ``Config.train``."""

from __future__ import annotations

import warnings
from typing import Any

from zerograd import Config, Function, Variable
from zerograd.backends import backend_of, get_array_module, refuse_complex, sum_dtype_of
from zerograd.checks import real_number
from zerograd.func import BatchedVariable
from zerograd.functions import mean as _mean
from zerograd.functions import reshape, sqrt
from zerograd.functions.ops import defines
from zerograd.typing import ArrayLike
from zerograd.utils import data_of as _raw

from .arrays import Cast, array_arg, as_float
from .pytorch_names import BATCH_NORM_KEYWORDS, DROPOUT_KEYWORDS, refuses_pytorch_keywords


def _store(target: Any, value: Any) -> None:
    """Write new running statistics: replace a Variable's data, or fill an array in place.

    Either way they keep their dtype, as an in-place fill does: a float64 batch must not
    widen a float32 layer's statistics (and every test-mode output after it).
    """
    if isinstance(target, Variable):
        old = target.data
        if value.dtype != old.dtype:
            value = backend_of(old).astype(value, old.dtype)
        target.data = value
        return
    backend = backend_of(target)
    try:
        backend.assign(target, value)
    except TypeError as e:  # immutable arrays (JAX): only a Variable's data can be replaced
        raise _immutable_statistics(backend, f" ({e})") from None


def _immutable_statistics(backend: Any, why: str = "") -> TypeError:
    """The error for running statistics held as arrays of a backend that never writes any."""
    return TypeError(
        f"batch_norm: the running statistics are plain {backend.name!r} arrays, which "
        f"cannot be updated in place{why}; pass them as Variables or Parameters, as "
        f"zerograd_nn.layers.BatchNorm does. Nothing was changed."
    )


def _widened(stats: Any) -> Any:
    """float16 running statistics as float32 (updated, or applied, there and rounded once)."""
    wide = sum_dtype_of(stats)
    return stats if wide is None else backend_of(stats).astype(stats, wide)


def train_mode_in_vmap_error(n: int) -> TypeError:
    """The error for train-mode batch norm inside vmap (a batch of ``n``).

    Raised before any statistic changes: run once per sample, the update would move the
    running statistics once for each sample, and batched statistics (an ensemble) have no
    one array to write. torch.func's vmap refuses it too.
    """
    return TypeError(
        f"batch_norm in train mode inside vmap (a batch of {n}): it would update the "
        f"running statistics once per sample. Inside vmap use test mode (model.eval(), or "
        f"`with zerograd.test_mode():`), or call the layer outside vmap on the whole batch. "
        f"Nothing was changed."
    )


class RunningStatistics(Function):
    """Moves batch_norm's running statistics toward a batch's (train mode); no gradient.

    A Function, so that a static-graph replay updates them as the eager step does.

    Args:
        mean: the running mean (an array, or a Variable whose data is replaced).
        var: the running variance.
        decay: how much of the running statistics each batch keeps.
        adjust: the factor making the batch variance unbiased.
    """

    vjp_reads_inputs = False  # no gradient: its derivative reads nothing
    vjp_reads_outputs = False

    def __init__(self, mean: Any, var: Any, decay: float, adjust: float) -> None:
        self.mean, self.var, self.decay, self.adjust = mean, var, decay, adjust

    def forward(self, mu: Any, v: Any) -> Any:
        mean, var, decay = self.mean, self.var, self.decay
        xp = get_array_module(mu)
        c = _raw(mean).shape[0]
        m0, v0 = _widened(_raw(mean)), _widened(_raw(var))
        new_mean = m0 * decay + xp.reshape(mu, (c,)) * (1 - decay)
        new_var = v0 * decay + xp.reshape(v, (c,)) * ((1 - decay) * self.adjust)
        old_mean = backend_of(_raw(mean)).astype(_raw(mean), _raw(mean).dtype)  # a copy
        _store(mean, new_mean)
        try:
            _store(var, new_var)
        except Exception:
            _store(mean, old_mean)  # a failure changes nothing
            raise
        return mu

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> tuple[None, None]:
        return None, None


class _Standardized(Function):
    """``(x - mean) / sqrt(var + eps)`` with the running statistics (batch_norm, test mode).

    The statistics are read when the forward runs, so that a static-graph replay uses
    their values of that time.

    Args:
        mean: the running mean (an array or a Variable).
        var: the running variance.
        eps: added to the variance.
        shape: the statistics' shape against ``x`` ((1, C), (1, C, 1, 1), ...).
    """

    vjp_reads_inputs = False  # gy * scale: the scale is saved in forward
    vjp_reads_outputs = False

    def __init__(self, mean: Any, var: Any, eps: float, shape: tuple) -> None:
        self.mean, self.var, self.eps, self.shape = mean, var, eps, shape

    def forward(self, x: Any) -> Any:
        xp = get_array_module(x)
        inv_std = 1 / xp.sqrt(_widened(_raw(self.var)) + self.eps)
        scale = xp.reshape(inv_std, self.shape)
        y = (x - xp.reshape(_widened(_raw(self.mean)), self.shape)) * scale
        self.ctx = scale
        return y

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        return gy * self.ctx


_FLOAT16_MAX = 65504.0  # the largest float16; a larger dropout scale is inf there


class _Dropout(Function):
    """Inverted dropout's train-mode mask, drawn in forward (a replay draws a fresh one).

    Args:
        ratio: the probability of zeroing an element.
    """

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def __init__(self, ratio: float) -> None:
        self.ratio = ratio

    def forward(self, x: Any) -> Any:
        # rand(*shape) draws as DeZero's xp.random.rand(*shape) does
        backend = backend_of(x)
        keep = backend.asarray(backend.rand(*x.shape) > self.ratio)  # 0-d stays an array
        scale = 1.0 / (1.0 - self.ratio)
        if scale <= _FLOAT16_MAX:  # every float dtype holds it
            mask = backend.astype(keep, x.dtype) * scale
        else:  # float16's scale is inf: 0 * inf made the dropped elements nan, not 0
            zero, big = (backend.asarray(v, dtype=x.dtype) for v in (0.0, scale))
            mask = backend.xp.where(keep, big, zero)
        y = x * mask
        self.ctx = mask
        return y

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        return gy * self.ctx


@defines()
@refuses_pytorch_keywords(BATCH_NORM_KEYWORDS)
def batch_norm(
    x: ArrayLike,
    gamma: ArrayLike,
    beta: ArrayLike,
    mean: ArrayLike,
    var: ArrayLike,
    decay: float = 0.9,
    eps: float = 2e-5,
) -> Variable:
    """Batch normalization of x (N, C), (N, C, L), (N, C, H, W), ... per channel C (axis 1).

    In train mode (``Config.train``) the batch statistics normalize ``x`` and the running
    statistics ``mean`` / ``var`` (arrays, updated in place, or Variables, whose data is
    replaced) move toward them: ``mean = decay*mean + (1-decay)*batch_mean`` and likewise
    ``var`` with the unbiased batch variance. In test mode the running statistics are used.
    Both modes are differentiable to any order in ``x``, ``gamma`` and ``beta``. float16
    ``x`` is computed in float32 (statistics, the backward's sums, the running statistics'
    update) and rounded once to float16, as PyTorch computes it.

    Args:
        x: the input, shape (N, C) or (N, C, ...): statistics are taken over every axis but
            the channels' (PyTorch's BatchNorm1d for (N, C, L), BatchNorm2d, BatchNorm3d).
        gamma: the scale per channel, shape (C,).
        beta: the shift per channel, shape (C,).
        mean: the running mean, shape (C,).
        var: the running variance, shape (C,).
        decay: how much of the running statistics each batch keeps.
        eps: added to the variance before the square root.

    Returns:
        A Variable of ``x``'s shape.

    Raises:
        ValueError: a shape does not match ``x``'s channels, ``decay`` or ``eps`` is out of
            range, or in train mode the batch is empty, a running statistic held as a plain
            array is read-only, or ``mean`` and ``var`` are one object.
        TypeError: a running statistic is not floating point (the update would truncate it),
            or ``x`` is complex (in both modes, before anything changes).

    Warns:
        UserWarning: in train mode, a batch with one value per channel (one example of
            shape (1, C)): the outputs are ``beta`` and the running variance shrinks, as
            in DeZero (PyTorch refuses such a batch).
    """
    x = as_float(x, "batch_norm")
    refuse_complex(
        "batch_norm",
        x,
        "its statistics are real numbers (the batch variance mean((x - mean)**2) is no "
        "variance of complex data, and the running statistics are real)",
    )
    if x.ndim < 2:
        raise ValueError(
            f"batch_norm: expected x of shape (N, C) or (N, C, ...) with the channels on axis "
            f"1, got {tuple(x.shape)}"
        )
    c = x.shape[1]
    if not isinstance(gamma, Variable):
        gamma = array_arg("batch_norm", "gamma", gamma, like=x.data)
    if not isinstance(beta, Variable):
        beta = array_arg("batch_norm", "beta", beta, like=x.data)
    for name, a in (("gamma", gamma), ("beta", beta), ("mean", mean), ("var", var)):
        shape = tuple(array_arg("batch_norm", name, a, like=x.data).shape)
        if shape != (c,):
            raise ValueError(
                f"batch_norm: {name} has shape {shape} but x {tuple(x.shape)} has {c} channels; "
                f"expected ({c},)."
            )
    for name, a in (("mean", mean), ("var", var)):
        if not isinstance(a, Variable) and not hasattr(a, "dtype"):
            raise TypeError(
                f"batch_norm: {name} must be an array or a Variable (the running statistics "
                f"are updated in place), got {type(a).__name__}"
            )
        stats = _raw(a)
        if backend_of(stats).dtype_kind(stats.dtype) != "f":
            raise TypeError(
                f"batch_norm: the running {name} has dtype {stats.dtype}, but the running "
                f"statistics are updated with fractional values, which it would truncate; "
                f"give floating-point arrays (e.g. {name}.astype('float32')). Nothing was "
                f"changed."
            )
    decay, eps = real_number("batch_norm", "decay", decay), real_number("batch_norm", "eps", eps)
    if not 0.0 <= decay <= 1.0 or not eps > 0.0:
        raise ValueError(
            f"batch_norm: decay must be in [0, 1] and eps > 0, got decay={decay} and eps={eps} "
            f"(a negative eps can make the variance negative: nan outputs)."
        )
    axes = (0, *range(2, x.ndim))  # every axis but the channels'
    shape = (1, c) + (1,) * (x.ndim - 2)
    if Config.train:
        if x.size == 0:
            raise ValueError(
                f"batch_norm: x of shape {tuple(x.shape)} is an empty batch: it has no statistics "
                f"to normalize with or to update the running ones from; skip it (or use test mode)."
            )
        if x.size == c:
            # DeZero (and Chainer, with a warning) compute it, and the book's GAN example
            # sizes its layers with one example; PyTorch refuses it
            warnings.warn(
                f"batch_norm: x of shape {tuple(x.shape)} holds one value per channel: its "
                f"variance is 0, so every output is beta and the running variance shrinks "
                f"toward 0 (by the factor decay={decay}). Train on batches of 2 or more (a "
                f"short last batch: DataLoader(..., drop_last=True)), or use test mode.",
                UserWarning,
                stacklevel=3,
            )
        for a in (mean, var):
            if isinstance(a, BatchedVariable):  # an ensemble's statistics (functional_call)
                raise train_mode_in_vmap_error(a.level.n)
        if mean is var:
            raise ValueError(
                "batch_norm: mean and var are one object, which train mode would update "
                "twice (the variance overwriting the mean); give two arrays (e.g. "
                "np.zeros(C) and np.ones(C)). Nothing was changed."
            )
        for name, a in (("mean", mean), ("var", var)):
            if not isinstance(a, Variable) and not backend_of(a).writable(a):
                if getattr(getattr(a, "flags", None), "writeable", None) is not False:
                    raise _immutable_statistics(backend_of(a))  # (JAX: no array is writable)
                raise ValueError(
                    f"batch_norm: the running {name} is a read-only array (a broadcast view, "
                    f"or flags.writeable False), which train mode updates in place; give a "
                    f"writable copy ({name}.copy()), or use test mode. Nothing was changed."
                )
    wide = sum_dtype_of(x.data)
    if wide is None:
        return _normalized(x, gamma, beta, mean, var, decay, eps, axes, shape)
    # float16: PyTorch's statistics, and its backward's sums over the batch, are float32
    # (xc * xc overflowed float16 past 256); everything is rounded once, at the end
    narrow = x.dtype
    x = Cast(wide)(x)
    params = [gamma, beta]
    for i, p in enumerate(params):
        if sum_dtype_of(p) is not None:
            params[i] = Cast(wide)(p)
        else:  # a float32 or float64 gamma or beta makes the output that wide, as before
            narrow = None
    y = _normalized(x, *params, mean, var, decay, eps, axes, shape)
    return y if narrow is None else Cast(narrow)(y)


def _normalized(
    x: Variable,
    gamma: Any,
    beta: Any,
    mean: Any,
    var: Any,
    decay: float,
    eps: float,
    axes: tuple,
    shape: tuple,
) -> Variable:
    """batch_norm past its checks: ``gamma * xhat + beta``, and the running statistics' update."""
    if Config.train:
        mu = _mean(x, axis=axes, keepdims=True)
        xc = x - mu
        v = _mean(xc * xc, axis=axes, keepdims=True)
        # 1 / sqrt, not ** -0.5: the power's derivative (v + eps) ** -1.5 overflows float16
        # (a constant channel's gradient was 0 * inf = nan)
        xhat = xc * (1 / sqrt(v + eps))
        m = x.size // shape[1]
        adjust = m / max(m - 1, 1)  # unbiased estimate of the variance (DeZero's for m = 1)
        RunningStatistics(mean, var, decay, adjust)(mu, v)
    else:
        xhat = _Standardized(mean, var, eps, shape)(x)
    return reshape(gamma, shape) * xhat + reshape(beta, shape)


batch_nrom = batch_norm
"""DeZero's spelling of :func:`batch_norm` (``dezero.functions.batch_nrom``), kept for the book."""


@defines()
@refuses_pytorch_keywords(DROPOUT_KEYWORDS)
def dropout(x: ArrayLike, dropout_ratio: float = 0.5) -> Variable:
    """Randomly zero elements in train mode (inverted dropout); identity in test mode.

    In train mode each element is zeroed with probability ``dropout_ratio`` and the rest
    are scaled by ``1 / (1 - dropout_ratio)``, so the expected value is unchanged. The
    scale is rounded to ``x``'s dtype first (PyTorch's way): float16 past ``0.999984`` has
    a scale of ``inf``, and keeps its elements as ``inf`` (dropped ones are 0).

    Args:
        x: the input (Variable, array or list).
        dropout_ratio: the probability of zeroing an element, in [0, 1).

    Returns:
        A Variable of ``x``'s shape (``x`` itself, as a Variable, in test mode).

    Raises:
        ValueError: ``dropout_ratio`` outside [0, 1).

    Examples:
        >>> import numpy as np
        >>> from zerograd import test_mode
        >>> with test_mode():
        ...     dropout(np.ones(3)).data
        array([1., 1., 1.])
    """
    x = as_float(x, "dropout")
    dropout_ratio = real_number("dropout", "dropout_ratio", dropout_ratio)
    if not 0.0 <= dropout_ratio < 1.0:
        raise ValueError(f"dropout: dropout_ratio must be in [0, 1), got {dropout_ratio}")
    if not Config.train:
        return x
    return _Dropout(dropout_ratio)(x)


# literal, so that type checkers see the names (a test checks it against the ops defined here)
__all__ = [
    "batch_norm",
    "dropout",
    "batch_nrom",
]
