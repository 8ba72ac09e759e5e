"""Helpers shared by the functional ops: sizes, pairs, axes, and the raw im2col/col2im.

Everything here works on backend arrays (never Variables) through the array module
``xp`` of the input, so any registered backend (numpy, cupy, ...) fits.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

from zerograd import Function, Variable, as_array
from zerograd.backends import backend_of, device_of, get_array_module
from zerograd.utils import conv_outsize, data_of, pair
from zerograd.utils import int_like as _int_like
from zerograd.utils import normalize_axis as _normalize_axes
from zerograd.variable import Constant


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
    """``x`` converted to float64 when it holds integers or bools; the gradient passes through."""

    def forward(self, x: Any) -> Any:
        """Compute AsFloat's output from backend arrays.

        Args:
            x: the input array.

        Returns:
            The output array.
        """
        return float_data(x)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return ``gy``: the conversion passes the gradient through."""
        return gy


def as_float(x: Any, op: str, name: str = "x") -> Variable:
    """Argument ``name`` of ``op`` as a Variable of floating-point data.

    Integer or bool data is converted (through :class:`AsFloat`); floating data is kept.

    Args:
        x: the argument (Variable, array, list or number).
        op: the calling function's name, for error messages.
        name: the argument's name, for error messages.

    Returns:
        A Variable holding floating-point data.

    Raises:
        TypeError: ``x`` is not a numeric array, Variable, list or number.
    """
    if not isinstance(x, Variable) or x.data is None:
        x = Variable(array_arg(op, name, x))
    if backend_of(x.data).dtype_kind(x.dtype) in "fc":
        return x
    return AsFloat()(x)


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


def positive_int(op: str, name: str, v: Any) -> int:
    """``v`` as an int >= 1 (numpy integers too; bools and floats are refused).

    Args:
        op: the function or constructor to name in the error, e.g. ``"Linear"``.
        name: the argument's name.
        v: the value given.

    Returns:
        ``v`` as a Python int.

    Raises:
        TypeError: ``v`` is not an integer.
        ValueError: ``v`` is below 1.

    Examples:
        >>> positive_int("Linear", "out_size", 3)
        3
    """
    if not _int_like(v):
        raise TypeError(f"{op}: {name} must be a positive int, got {v!r} ({type(v).__name__})")
    n = operator.index(v)
    if n < 1:
        raise ValueError(f"{op}: {name} must be a positive int (>= 1), got {n}")
    return n


def conv_args(
    op: str, kernel_size: Any, stride: Any, pad: Any
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    """``(kh, kw), (sh, sw), (ph, pw)`` checked: kernel and stride >= 1, pad >= 0.

    Args:
        op: the calling function's name, for error messages.
        kernel_size: an int or a pair.
        stride: an int or a pair.
        pad: an int or a pair.

    Returns:
        The three pairs.

    Raises:
        ValueError: one of them is not an int or a pair of ints, or is out of range.
    """
    (kh, kw), (sh, sw), (ph, pw) = (
        pair(kernel_size, what=f"{op}: kernel_size"),
        pair(stride, what=f"{op}: stride"),
        pair(pad, what=f"{op}: pad"),
    )
    if kh < 1 or kw < 1 or sh < 1 or sw < 1 or ph < 0 or pw < 0:
        raise ValueError(
            f"{op}: kernel_size {(kh, kw)} and stride {(sh, sw)} must be >= 1 and pad "
            f"{(ph, pw)} >= 0"
        )
    return (kh, kw), (sh, sw), (ph, pw)


def get_conv_outsize(input_size: int, kernel_size: int, stride: int, pad: int) -> int:
    """Output length of a convolution along one axis: ``(in + 2*pad - k) // stride + 1``.

    DeZero's name for :func:`zerograd.utils.conv_outsize`.

    Args:
        input_size: the input length.
        kernel_size: the kernel length.
        stride: the stride.
        pad: the padding on each side.

    Returns:
        The output length.

    Examples:
        >>> get_conv_outsize(4, 3, 1, 1)
        4
    """
    return conv_outsize(input_size, kernel_size, stride, pad)


def get_deconv_outsize(size: int, k: int, s: int, p: int) -> int:
    """Output length of a transposed convolution along one axis: ``s*(size-1) + k - 2p``.

    Args:
        size: the input length.
        k: the kernel length.
        s: the stride.
        p: the padding.

    Returns:
        The output length.
    """
    return s * (size - 1) + k - 2 * p


def normalize_axis(axis: int, ndim: int, op: str) -> int:
    """``axis`` (negative allowed) as a non-negative axis of an ``ndim``-dim input.

    Args:
        axis: the axis given.
        ndim: the input's number of dimensions.
        op: the calling function's name, for error messages.

    Returns:
        The axis in ``0..ndim - 1``.

    Raises:
        TypeError: ``axis`` is not an int.
        ValueError: the input is 0-d, or ``axis`` is out of range.
    """
    if type(axis) is int and 0 <= axis < ndim:
        return axis  # already normalized (the common case: no checks to run)
    if not _int_like(axis):
        raise TypeError(f"{op}: axis must be an int, got {axis!r}")
    axis = operator.index(axis)
    if ndim == 0:
        raise ValueError(
            f"{op}: the input is 0-d, it has no axis {axis}; give an array of shape (N, ...)."
        )
    return _normalize_axes(axis, ndim, op)[0]


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


def real_number(op: str, name: str, v: Any) -> float:
    """``v`` as a float when it is a real number (numpy scalars too, never a bool).

    Args:
        op: the calling function's name, for error messages.
        name: the argument's name.
        v: the value given.

    Returns:
        ``v`` as a float.

    Raises:
        TypeError: ``v`` is not a real number.
    """
    if isinstance(v, bool) or not isinstance(v, (int, float)) and getattr(v, "ndim", 1) != 0:
        raise TypeError(f"{op}: {name} must be a real number, got {v!r}")
    try:
        return float(v)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: {name} must be a real number, got {v!r}") from None


def logsumexp(x: Any, axis: int = 1) -> Any:
    """``log(sum(exp(x), axis, keepdims=True))`` on a raw array, without overflow.

    Args:
        x: a backend array.
        axis: the axis to reduce.

    Returns:
        An array with ``axis`` kept as length 1.
    """
    xp = get_array_module(x)
    m = xp.max(x, axis=axis, keepdims=True)
    return m + xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True))


def conv_geometry(
    op: str, img_shape: tuple, kernel_size: Any, stride: Any, pad: Any
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    """Check a 4-D image shape and return ``(kh, kw), (sh, sw), (ph, pw), (oh, ow)``.

    Results are cached per argument set: convolutions and pooling ask for the same
    geometry on every call, and the checks cost more than the lookup.

    Args:
        op: the calling function's name, for error messages.
        img_shape: the input's shape (N, C, H, W).
        kernel_size: an int or a pair.
        stride: an int or a pair.
        pad: an int or a pair.

    Returns:
        The kernel, stride, pad and output-size pairs.

    Raises:
        ValueError: the shape is not 4-D, or the kernel does not fit the padded image.
    """
    if _plain(kernel_size) and _plain(stride) and _plain(pad):
        return _cached_geometry(op, tuple(img_shape), kernel_size, stride, pad)
    # only exact ints are keys: 2.0 and True equal 2 and 1 but must fail the checks
    return _conv_geometry(op, img_shape, kernel_size, stride, pad)


def _plain(v: Any) -> bool:
    """An exact Python int, or a pair of them."""
    return type(v) is int or (
        type(v) is tuple and len(v) == 2 and type(v[0]) is int and type(v[1]) is int
    )


def _conv_geometry(
    op: str, img_shape: tuple, kernel_size: Any, stride: Any, pad: Any
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    """:func:`conv_geometry` without the cache."""
    if len(img_shape) != 4:
        raise ValueError(f"{op}: expected a 4-D input (N, C, H, W), got shape {tuple(img_shape)}")
    (kh, kw), (sh, sw), (ph, pw) = conv_args(op, kernel_size, stride, pad)
    h, w = img_shape[2], img_shape[3]
    oh, ow = get_conv_outsize(h, kh, sh, ph), get_conv_outsize(w, kw, sw, pw)
    if oh < 1 or ow < 1:
        raise ValueError(
            f"{op}: a kernel of {(kh, kw)} with stride {(sh, sw)} and pad {(ph, pw)} does not "
            f"fit an input of height/width {(h, w)}; use a smaller kernel or more padding."
        )
    return (kh, kw), (sh, sw), (ph, pw), (oh, ow)


def im2col_array(
    img: Any,
    kernel_size: Any,
    stride: Any,
    pad: Any,
    to_matrix: bool = True,
    pad_value: float = 0.0,
) -> Any:
    """Unfold ``img`` (N, C, H, W) into patches (N, C, KH, KW, OH, OW).

    With ``to_matrix`` the result is (N*OH*OW, C*KH*KW). One strided slice per kernel
    offset, no loop over pixels. ``pad_value`` fills the border (``-inf`` for max pooling).

    Args:
        img: a backend array of shape (N, C, H, W).
        kernel_size: an int or a pair.
        stride: an int or a pair.
        pad: an int or a pair.
        to_matrix: return the 2-D matrix (else the 6-D array).
        pad_value: the value of the padding.

    Returns:
        The patches as a backend array.
    """
    xp = get_array_module(img)
    (kh, kw), (sh, sw), (ph, pw), (oh, ow) = conv_geometry(
        "im2col", img.shape, kernel_size, stride, pad
    )
    n, c = img.shape[:2]
    col = backend_of(img).im2col(img, (kh, kw), (sh, sw), (ph, pw), pad_value=pad_value)
    if to_matrix:
        col = xp.reshape(xp.permute_dims(col, (0, 4, 5, 1, 2, 3)), (n * oh * ow, -1))
    return col


def col2im_array(
    col: Any, img_shape: tuple, kernel_size: Any, stride: Any, pad: Any, to_matrix: bool = True
) -> Any:
    """Fold patches back into an image of ``img_shape``, adding overlapping entries.

    The adjoint of :func:`im2col_array`: ``col`` is (N, C, KH, KW, OH, OW), or
    (N*OH*OW, C*KH*KW) with ``to_matrix``.

    Args:
        col: the patches.
        img_shape: the image shape (N, C, H, W).
        kernel_size: an int or a pair.
        stride: an int or a pair.
        pad: an int or a pair.
        to_matrix: whether ``col`` is the 2-D matrix.

    Returns:
        A backend array of shape ``img_shape``.

    Raises:
        ValueError: ``col``'s shape does not fit ``img_shape`` and the geometry.
    """
    xp = get_array_module(col)
    (kh, kw), (sh, sw), (ph, pw), (oh, ow) = conv_geometry(
        "col2im", img_shape, kernel_size, stride, pad
    )
    n, c, h, w = img_shape
    if to_matrix and tuple(col.shape) == (n * oh * ow, c * kh * kw):
        col = xp.permute_dims(xp.reshape(col, (n, oh, ow, c, kh, kw)), (0, 3, 4, 5, 1, 2))
    elif to_matrix:
        raise ValueError(
            f"col2im: patches of shape {tuple(col.shape)} do not match image shape "
            f"{tuple(img_shape)} with kernel {(kh, kw)}, stride {(sh, sw)}, pad {(ph, pw)} "
            f"(expected the matrix {(n * oh * ow, c * kh * kw)})."
        )
    if tuple(col.shape) != (n, c, kh, kw, oh, ow):
        raise ValueError(
            f"col2im: patches of shape {tuple(col.shape)} do not match image shape "
            f"{tuple(img_shape)} with kernel {(kh, kw)}, stride {(sh, sw)}, pad {(ph, pw)} "
            f"(expected {(n, c, kh, kw, oh, ow)})."
        )
    return backend_of(col).col2im(col, tuple(img_shape), (kh, kw), (sh, sw), (ph, pw))


def onehot(t: Any, n_classes: int, dtype: Any) -> Any:
    """Rows of ``eye(n_classes)`` picked by integer labels ``t``, as ``dtype``.

    Args:
        t: integer labels (a backend array).
        n_classes: the number of classes.
        dtype: the result's dtype.

    Returns:
        An array of shape ``t.shape + (n_classes,)``.
    """
    xp = get_array_module(t)
    hot = xp.arange(n_classes, device=device_of(t)) == xp.reshape(t, t.shape + (1,))
    return backend_of(t).astype(hot, dtype)


_cached_geometry = functools.lru_cache(maxsize=1024)(_conv_geometry)
