"""Pooling: max pooling (pooling, pooling_simple) and average_pooling.

Max pooling pads with ``-inf``, so padding never wins the max. **Winners:** the gradient
of a window goes, whole, to one element, PyTorch's (CPU and CUDA): its first maximum in
row-major window order (the element ``argmax`` picks, as in Chainer), except that a
window holding nan pools to nan and its last nan takes the gradient, and a window of
``-inf`` only gives it to its first element of the input, never to padding. ``pooling``
and ``pooling_simple`` follow the same rule. (``max``/``min`` reductions keep DeZero's
rule instead: every tied element gets the gradient.) The gradient's own backward re-reads
``ggx`` at the same positions, so every order is defined. As in PyTorch, ``pad`` may be at
most half the kernel, so that every window holds at least one element of the input.
"""

from __future__ import annotations

from typing import Any

from zerograd import Config, Function, Variable
from zerograd.backends import (
    ORDERS_VALUES,
    backend_of,
    device_of,
    get_array_module,
    refuse_complex,
    sum_dtype_of,
)
from zerograd.func import batch_values
from zerograd.functions import DivideByCount, get_item, reshape, transpose
from zerograd.functions.ops import defines
from zerograd.typing import ArrayLike, Pair

from ..kernels import kernels_of
from .arrays import array_arg
from .conv import Col2im, Im2col
from .geometry import conv_geometry
from .pytorch_names import (
    AVERAGE_POOLING_KEYWORDS,
    POOLING_KEYWORDS,
    refuses_pytorch_keywords,
)


def _windows(geometry: tuple) -> list[tuple[slice, ...]]:
    """For each kernel offset, the strided slice of the padded image it reads."""
    (kh, kw), (sh, sw), _, (oh, ow) = geometry
    return [
        (
            slice(None),
            slice(None),
            slice(j, j + sh * (oh - 1) + 1, sh),
            slice(i, i + sw * (ow - 1) + 1, sw),
        )
        for j in range(kh)
        for i in range(kw)
    ]


def _image(x: Any, op: str) -> Variable:
    """``x`` as a Variable holding a 4-D (N, C, H, W) array; a clear error otherwise."""
    x = x if isinstance(x, Variable) and x.data is not None else Variable(array_arg(op, "x", x))
    if x.ndim != 4:
        raise ValueError(f"{op}: expected a 4-D input (N, C, H, W), got shape {tuple(x.shape)}")
    return x


def _geometry(op: str, shape: tuple, kernel_size: Any, stride: Any, pad: Any) -> tuple:
    """:func:`conv_geometry`, refusing a pad larger than half the kernel.

    A window of padding only would pool to ``-inf`` or to zero.
    """
    geometry = conv_geometry(op, shape, kernel_size, stride, pad)
    (kh, kw), _, (ph, pw), _ = geometry
    if 2 * ph > kh or 2 * pw > kw:
        raise ValueError(
            f"{op}: pad {(ph, pw)} must be at most half the kernel {(kh, kw)}; otherwise "
            f"some windows hold padding only. Use pad <= kernel_size // 2."
        )
    return geometry


def _pad(x: Any, geometry: tuple, value: float) -> Any:
    ph, pw = geometry[2]
    if not (ph or pw):
        return x
    return kernels_of(x).pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), value)


def _tiles(geometry: tuple, shape: tuple) -> bool:
    """Whether the windows tile the image: stride = kernel, no padding, nothing left over."""
    k, s, p, (oh, ow) = geometry
    return k == s and p == (0, 0) and tuple(shape[2:]) == (oh * k[0], ow * k[1])


def _tiled_max(xp: Any, x: Any, geometry: tuple) -> Any:
    """Each window's maximum, where the windows tile ``x`` and are not 1x1.

    Over each window's rows first, as whole image rows (contiguous), then over its
    columns: a third faster than the maximum of the KH*KW strided views on numpy, and the
    same values.
    """
    (kh, kw), _, _, (oh, ow) = geometry
    n, c = x.shape[:2]
    x6 = xp.reshape(x, (n, c, oh, kh, ow, kw))
    rows = x6[:, :, :, 0, ...]  # the standard wants the "..."
    for r in range(1, kh):
        rows = xp.maximum(rows, x6[:, :, :, r, ...])
    y = rows[..., 0]
    for q in range(1, kw):
        y = xp.maximum(y, rows[..., q])
    return y


def _offset_dtype(xp: Any, count: int) -> Any:
    """The integer dtype of a window's offsets (``count`` elements per window)."""
    return xp.int8 if count <= 127 else xp.int64


def _winners(xp: Any, views: list, first: Any) -> tuple[Any, Any]:
    """Each window's maximum, and the offset of the element that takes its gradient.

    PyTorch's scan, in window order: an element takes over when it is above the maximum so
    far or is nan; so the first maximum wins a tie, the last nan wins over everything,
    and a window of ``-inf`` only keeps ``first`` (padding, ``-inf``, never takes over, and
    every element before ``first`` is padding).

    Args:
        xp: the arrays' namespace.
        views: one array per kernel offset, in row-major window order, all of one shape.
        first: each window's first offset that is not padding: 0, or an array of the
            offsets' dtype (:func:`_offset_dtype`) broadcastable to the views' shape.

    Returns:
        ``(y, winner)``: a new array of the windows' maxima (nan where a window holds nan)
        and an integer array of the winners' offsets, both of the views' shape.
    """
    backend = backend_of(views[0])
    dtype = _offset_dtype(xp, len(views))
    if isinstance(first, int):
        first = xp.asarray(first, dtype=dtype, device=device_of(views[0]))
    winner = xp.broadcast_to(first, views[0].shape)
    y = views[0]
    for offset in range(1, len(views)):
        # a contiguous copy: the three calls that read it run twice as fast on numpy
        v = xp.asarray(views[offset], copy=True)
        # takes over: above the maximum so far, or nan. The offsets that take over only
        # grow, so the last one is the largest (no xp.where: numpy's takes a branch per
        # element, ten times the time of these calls)
        takes = backend.astype((v > y) | (v != v), dtype)  # v != v: nan
        takes *= offset  # a new array: JAX's makes a new product
        winner = xp.maximum(winner, takes)
        y = xp.maximum(y, v)
    if len(views) == 1:
        y, winner = xp.asarray(y, copy=True), xp.asarray(winner, copy=True)  # no views
    return y, winner


def _first_inputs(xp: Any, geometry: tuple, x: Any) -> Any:
    """Each window's first offset (row-major) that holds an input element, not padding.

    0 for every window without padding; an (OH, OW) array of :func:`_offset_dtype` where
    the padding reaches in.
    """
    (kh, kw), (sh, sw), (ph, pw), (oh, ow) = geometry
    if not (ph or pw):
        return 0
    dtype = _offset_dtype(xp, kh * kw)
    # the first input row of window row oy is ph - sh * oy rows in (when positive); columns
    # likewise: the offset is row * kw + column
    rows = [max(0, ph - sh * oy) * kw for oy in range(min(oh, -(-ph // sh)))]
    cols = [max(0, pw - sw * ox) for ox in range(min(ow, -(-pw // sw)))]
    device = device_of(x)
    row = xp.zeros((oh,), dtype=dtype, device=device)
    col = xp.zeros((ow,), dtype=dtype, device=device)
    if rows:
        row = xp.concat([xp.asarray(rows, dtype=dtype, device=device), row[len(rows) :]])
    if cols:
        col = xp.concat([xp.asarray(cols, dtype=dtype, device=device), col[len(cols) :]])
    return xp.reshape(row, (oh, 1)) + xp.reshape(col, (1, ow))


def _hits(xp: Any, winner: Any, kernel: tuple) -> Any:
    """Where each kernel offset is its window's winner: bools (N, C, KH, KW, OH, OW)."""
    n, c, oh, ow = winner.shape
    offsets = xp.arange(kernel[0] * kernel[1], dtype=winner.dtype, device=device_of(winner))
    return xp.reshape(winner, (n, c, 1, 1, oh, ow)) == xp.reshape(offsets, (1, 1) + kernel + (1, 1))


class _Windows(Function):
    """A function over the windows of an image (N, C, H, W): the pooling functions.

    Args:
        kernel_size: the window size, an int or a pair.
        stride: an int or a pair.
        pad: an int or a pair.
    """

    def __init__(self, kernel_size: Any, stride: Any = 1, pad: Any = 0) -> None:
        self.kernel_size, self.stride, self.pad = kernel_size, stride, pad


class Pooling(_Windows):
    """Max pooling; remembers each window's winner (see the module), for the backward."""

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def forward(self, x: Any) -> Any:
        refuse_complex("pooling", x, ORDERS_VALUES)
        xp = get_array_module(x)
        geometry = _geometry("pooling", x.shape, self.kernel_size, self.stride, self.pad)
        windows = _windows(geometry)
        xpad = _pad(x, geometry, float("-inf"))
        views = [xpad[w] for w in windows]
        if Config.enable_backprop:
            # each window's maximum and its winner's offset (N, C, OH, OW), one scan
            y, winner = _winners(xp, views, _first_inputs(xp, geometry, x))
            self.ctx = (x.shape, geometry, winner)
            return y
        self.ctx = None  # no backward will come: no winners
        if len(views) == 1:
            return xp.asarray(views[0], copy=True)  # never a view of the input
        if _tiles(geometry, x.shape):
            return _tiled_max(xp, x, geometry)
        y = xp.maximum(views[0], views[1])
        for v in views[2:]:
            y = xp.maximum(y, v)
        return y

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``gy`` sent to each window's winner (:class:`Pooling2DGrad`)."""
        return xp.apply(Pooling2DGrad(self), gy)


class _ByWinners(Function):
    """A function of the winners a forward :class:`Pooling` recorded (its derivatives).

    Args:
        pool: the forward Pooling function, whose recorded winners are used.
    """

    vjp_reads_inputs = False  # linear: its derivative reads only the pooling's winners
    vjp_reads_outputs = False

    def __init__(self, pool: Pooling) -> None:
        self.pool = pool


class Pooling2DGrad(_ByWinners):
    """Send ``gy`` to each window's winner, adding where windows overlap (linear in ``gy``)."""

    def forward(self, gy: Any) -> Any:
        xp = get_array_module(gy)
        n, c, oh, ow = gy.shape
        input_shape, (k, s, pad, _), winner = self.pool.ctx
        # each window's winner gets gy, in im2col's layout (N, C, KH, KW, OH, OW): one col2im
        col = backend_of(gy).astype(_hits(xp, winner, k), gy.dtype)  # written in place below
        col *= xp.reshape(gy, (n, c, 1, 1, oh, ow))  # JAX arrays: a new product
        return kernels_of(gy).col2im(col, tuple(input_shape), k, s, pad)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``gy`` read at each window's winner (:class:`Pooling2DWithIndexes`)."""
        return xp.apply(Pooling2DWithIndexes(self.pool), gy)


class Pooling2DWithIndexes(_ByWinners):
    """Pick, in each window of ``x``, the element at the recorded winner's position."""

    def forward(self, x: Any) -> Any:
        _, geometry, winner = self.pool.ctx
        xpad = _pad(x, geometry, 0.0)
        backend = backend_of(x)
        y = None
        for offset, win in enumerate(_windows(geometry)):
            term = xpad[win] * backend.astype(winner == offset, x.dtype)
            y = term if y is None else y + term
        return y

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``gy`` sent back to each window's winner (:class:`Pooling2DGrad`)."""
        return xp.apply(Pooling2DGrad(self.pool), gy)


@defines(Pooling, Pooling2DGrad, Pooling2DWithIndexes)
@refuses_pytorch_keywords(POOLING_KEYWORDS)
def pooling(x: ArrayLike, kernel_size: Pair, stride: Pair = 1, pad: Pair = 0) -> Variable:
    """2-D max pooling of x (N, C, H, W); ints or ``(h, w)`` pairs for every size.

    A window's gradient goes, whole, to its first maximum in row-major window order (the
    element ``argmax`` picks), as in :func:`pooling_simple` and PyTorch. A window holding
    nan pools to nan and gives its gradient to its last nan; a window of ``-inf`` only
    gives it to its first element of ``x``, never to padding. ``pad`` is at most half the
    kernel.

    Args:
        x: the input, shape (N, C, H, W).
        kernel_size: the window size, an int or a pair.
        stride: the stride, an int or a pair.
        pad: the zero padding, an int or a pair.

    Returns:
        A Variable of shape (N, C, OH, OW).

    Raises:
        ValueError: an input that is not 4-D, or a bad kernel, stride or pad.

    Examples:
        >>> import numpy as np
        >>> pooling(np.arange(16.0).reshape(1, 1, 4, 4), 2, 2).data.ravel()
        array([ 5.,  7., 13., 15.])
    """
    return Pooling(kernel_size, stride, pad)(x)


@defines()
def pooling_simple(x: ArrayLike, kernel_size: Pair, stride: Pair = 1, pad: Pair = 0) -> Variable:
    """Max pooling from im2col: each window's winner picked (the book's first version).

    Padding is ``-inf``. Same values and gradients as :func:`pooling`, ties, nan and
    ``-inf`` included.

    Args:
        x: input of shape (N, C, H, W).
        kernel_size: the window size, an int or a pair.
        stride: the stride, an int or a pair.
        pad: the padding, an int or a pair, at most half the kernel.

    Returns:
        A Variable of shape (N, C, OH, OW).

    Raises:
        ValueError: an input that is not 4-D, or a bad kernel, stride or pad.
    """
    x = _image(x, "pooling_simple")
    n, c = x.shape[:2]
    geometry = _geometry("pooling_simple", x.shape, kernel_size, stride, pad)
    (kh, kw), _, _, (oh, ow) = geometry
    col = reshape(Im2col(kernel_size, stride, pad, True, float("-inf"))(x), (-1, kh * kw))
    xp = get_array_module(batch_values(col.data))
    # the rows are the windows in (N, OH, OW, C) order: each one's first input offset
    first = _first_inputs(xp, geometry, batch_values(x.data))
    if not isinstance(first, int):
        first = xp.reshape(
            xp.broadcast_to(xp.reshape(first, (1, oh, ow, 1)), (n, oh, ow, c)), (-1,)
        )
    # the winners are picked by a Function, so that vmap batches the pick (the raw array
    # of a batched Variable has no values to read)
    picks = WinnerPicks(first)(col)
    y = get_item(reshape(col, (-1,)), picks.data)
    return transpose(reshape(y, (n, oh, ow, c)), (0, 3, 1, 2))


class WinnerPicks(Function):
    """Where each window's winner sits in im2col's windows: :func:`pooling_simple`'s index.

    The input holds windows, ``(..., R, K)``: R windows of K elements (``-inf`` padding).
    The output, integers ``(..., R)``, is each winner's position in the row-major
    flattening of the last two axes (window ``r``'s winner at ``r * K + offset``), chosen
    as :func:`pooling` chooses it (the first maximum of a tie, the last nan). Leading axes
    are independent (vmap's rule gives it the whole batch at once). An index: no gradient.

    Args:
        first: each window's first offset that is not padding: 0, or an integer array of
            shape ``(R,)``.
    """

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def __init__(self, first: Any) -> None:
        self.first = first

    def forward(self, col: Any) -> Any:
        """Return each window's winner as a position in the flattened windows."""
        xp = get_array_module(col)
        k = col.shape[-1]
        _, winner = _winners(xp, [col[..., j] for j in range(k)], self.first)
        rows = xp.arange(col.shape[-2], device=device_of(col))
        return rows * k + backend_of(winner).astype(winner, rows.dtype)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> None:
        """Return None: an index has no gradient."""
        return None


class AveragePooling(_Windows):
    """Average pooling over windows (padded zeros included in the mean).

    float16 windows are added, and divided by their size, in float32 and rounded once, as
    PyTorch averages them.
    """

    vjp_reads_inputs = False  # only the input's shape, which forward saves in ctx
    vjp_reads_outputs = False

    def forward(self, x: Any) -> Any:
        geometry = _geometry("average_pooling", x.shape, self.kernel_size, self.stride, self.pad)
        xpad = _pad(x, geometry, 0.0)
        windows = _windows(geometry)
        y = xpad[windows[0]]
        wide = sum_dtype_of(x)  # float16: added, and divided, in float32; rounded once
        if wide is not None:
            y = backend_of(x).astype(y, wide)
        for w in windows[1:]:
            y = y + xpad[w]
        y = y / len(windows)
        if wide is not None:
            y = backend_of(x).astype(y, x.dtype)
        self.ctx = x.shape  # the input's shape, for the vjp
        return y

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``gy / (KH * KW)`` spread over each window, overlaps added (col2im)."""
        n, c, oh, ow = gy.shape
        k, s, p = self.kernel_size, self.stride, self.pad
        input_shape = self.ctx
        kh, kw = conv_geometry("average_pooling", input_shape, k, s, p)[0]
        # a window of 256 x 256 is inf in float16: divided in float32 there
        gcol = xp.reshape(xp.apply(DivideByCount(kh * kw), gy), (n, c, 1, 1, oh, ow))
        gcol = xp.broadcast_to(gcol, (n, c, kh, kw, oh, ow))
        return xp.apply(Col2im(input_shape, k, s, p, False), gcol)


@defines(AveragePooling)
@refuses_pytorch_keywords(AVERAGE_POOLING_KEYWORDS)
def average_pooling(x: ArrayLike, kernel_size: Pair, stride: Pair = 1, pad: Pair = 0) -> Variable:
    """2-D average pooling; padded zeros count in the average (as in DeZero and Chainer).

    The arguments and the result's shape are :func:`pooling`'s.
    """
    return AveragePooling(kernel_size, stride, pad)(x)


# literal, so that type checkers see the names (a test checks it against the ops defined here)
__all__ = [
    "pooling",
    "pooling_simple",
    "average_pooling",
    "AveragePooling",
    "Pooling",
    "Pooling2DGrad",
    "Pooling2DWithIndexes",
]
