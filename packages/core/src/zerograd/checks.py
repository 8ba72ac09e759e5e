"""Argument checks, one rule for zerograd and its packages.

A wrong type is a TypeError, a wrong value a ValueError; numpy integers (and 0-d integer
arrays) are integers, bools and floats (``2.0``) are not. A leaf module: the backends
import it, so it imports nothing of zerograd.

Examples:
    >>> pair(3), normalize_axis(-1, 3, "sum"), positive_int("Linear", "out_size", 4)
    ((3, 3), (2,), 4)
    >>> positive_int("Linear", "out_size", 2.0)
    Traceback (most recent call last):
    TypeError: Linear: out_size must be a positive int, got 2.0 (float)
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any

__all__ = [
    "axis",
    "axis_or_dim",
    "callable_arg",
    "conv_args",
    "flag",
    "int_like",
    "integer",
    "is_real",
    "normalize_axis",
    "pair",
    "positive_int",
    "pytorch_alias",
    "pytorch_keyword_error",
    "real_number",
]


def int_like(v: Any) -> bool:
    """Whether ``v`` is a Python or numpy integer (or a 0-d integer array), never a bool.

    Args:
        v: Anything.

    Returns:
        True for integers that ``operator.index`` accepts.
    """
    if isinstance(v, bool) or getattr(getattr(v, "dtype", None), "kind", "i") not in "iu":
        return False
    try:
        operator.index(v)
    except TypeError:
        return False
    return True


def integer(owner: str, name: str, v: Any, low: int | None = None) -> int:
    """Return ``v`` as a Python int, at least ``low`` when one is given.

    Args:
        owner: the function or class to name in the error.
        name: the argument's name.
        v: the value given.
        low: the lowest accepted value (None: any).

    Returns:
        ``v`` as a Python int.

    Raises:
        TypeError: ``v`` is not an integer (a float such as ``2.0``, a bool, None, ...).
        ValueError: ``v`` is below ``low``.
    """
    what = "an int" if low is None else "a positive int" if low == 1 else f"an int >= {low}"
    if not int_like(v):
        raise TypeError(f"{owner}: {name} must be {what}, got {v!r} ({type(v).__name__})")
    n = operator.index(v)
    if low is not None and n < low:
        bound = " (>= 1)" if low == 1 else ""  # 0 counts as positive to some
        raise ValueError(f"{owner}: {name} must be {what}{bound}, got {n}")
    return n


def positive_int(owner: str, name: str, v: Any) -> int:
    """Return ``v`` as a Python int >= 1: ``integer(owner, name, v, low=1)``.

    Args:
        owner: the function or class to name in the error, e.g. ``"Linear"``.
        name: the argument's name.
        v: the value given.

    Returns:
        ``v`` as a Python int.

    Raises:
        TypeError: ``v`` is not an integer (a float such as ``2.0``, a bool, None, ...).
        ValueError: ``v`` is below 1.
    """
    return integer(owner, name, v, low=1)


def callable_arg(owner: str, name: str, v: Any, *, optional: bool = False, hint: str = "") -> Any:
    """``v`` checked as a callable (None passes too when ``optional``).

    Args:
        owner: who checks, as the message names it (``"Trainer"``).
        name: the argument (``"loss_fn"``).
        v: the value given.
        optional: whether None is allowed.
        hint: a word on what to give, put in parentheses after the requirement.

    Returns:
        ``v``.

    Raises:
        TypeError: ``v`` is not callable, naming its type and (the start of) its repr.
    """
    if callable(v) or (optional and v is None):
        return v
    wanted = "callable or None" if optional else "callable"
    if hint:
        wanted += f" ({hint})"
    raise TypeError(f"{owner}: {name} must be {wanted}, got {type(v).__name__} {v!r:.40}.")


def flag(owner: str, name: str, v: Any) -> bool:
    """Return ``v`` as a bool when it is True or False (numpy's bools count).

    A number, a string or None is refused rather than read by its truth: ``download=1``
    or ``train="test"`` would silently mean True.

    Args:
        owner: the function or class to name in the error.
        name: the argument's name.
        v: the value given.

    Returns:
        ``v`` as a Python bool.

    Raises:
        TypeError: ``v`` is not a bool.
    """
    if type(v).__name__ not in ("bool", "bool_"):  # numpy's, by name: this module imports none
        raise TypeError(f"{owner}: {name} must be True or False, got {v!r}")
    return bool(v)


def is_real(v: Any) -> bool:
    """Whether ``v`` is a real number.

    A Python or library number counts, and so does a 0-d array (or Variable) of integers
    or floats; bools, complex numbers, strings and 0-d arrays of other dtypes do not.
    """
    if isinstance(v, bool):
        return False
    if isinstance(v, numbers.Real):
        return True
    kind = getattr(getattr(v, "dtype", None), "kind", None)
    return getattr(v, "ndim", None) == 0 and kind is not None and kind in "iuf"


def real_number(
    owner: str, name: str, v: Any, low: float = -math.inf, high: float = math.inf
) -> float:
    """Return ``v`` as a float when it is a real number in ``[low, high]``.

    What :func:`is_real` accepts counts; nan does not.

    Args:
        owner: the function or class to name in the error.
        name: the argument's name.
        v: the value given.
        low: the lowest accepted value.
        high: the highest accepted value.

    Returns:
        ``v`` as a float.

    Raises:
        TypeError: ``v`` is not a real number.
        ValueError: ``v`` is nan or outside ``[low, high]``.
    """
    if not is_real(v):
        raise TypeError(f"{owner}: {name} must be a real number, got {v!r} ({type(v).__name__})")
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: {name} must be a real number, got {v!r}") from None
    if not low <= x <= high:  # nan fails both comparisons
        if low > -math.inf:
            where = f" in [{low:g}, {high:g}]" if high < math.inf else f" >= {low:g}"
        else:
            where = f" <= {high:g}" if high < math.inf else ", not nan"
        raise ValueError(f"{owner}: {name} must be a number{where}, got {v!r}")
    return x


def axis(axis: Any, ndim: int, op: str) -> int:
    """Return one ``axis`` (negative allowed) as a non-negative axis of an ``ndim``-dim input.

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
    if not int_like(axis):
        raise TypeError(f"{op}: axis must be an int, got {axis!r}")
    axis = operator.index(axis)
    if ndim == 0:
        raise ValueError(
            f"{op}: the input is 0-d, it has no axis {axis}; give an array of shape (N, ...)."
        )
    return normalize_axis(axis, ndim, op)[0]


def axis_or_dim(op: str, axis: Any, dim: Any, default: Any) -> Any:
    """The axis to use when a function takes numpy's ``axis`` and PyTorch's ``dim`` for it.

    Args:
        op: the calling function's name, for error messages.
        axis: the ``axis`` given (``default`` when left out).
        dim: the ``dim`` given (None when left out).
        default: ``axis``'s default.

    Returns:
        ``dim`` when given, else ``axis``.

    Raises:
        ValueError: both are given, with different values.

    Examples:
        >>> axis_or_dim("softmax", 1, 0, default=1), axis_or_dim("softmax", 1, None, default=1)
        (0, 1)
    """
    return pytorch_alias(op, "axis", axis, "dim", dim, default)


def pytorch_alias(op: str, name: str, value: Any, alias: str, given: Any, default: Any) -> Any:
    """The value of a parameter that PyTorch's users also pass under PyTorch's name.

    ``F.sum(x, dim=1, keepdim=True)`` is ``F.sum(x, axis=1, keepdims=True)``: the function
    takes ``alias`` (default None) beside ``name`` and calls this with both.

    Args:
        op: the calling function's name, for error messages.
        name: zerograd's parameter (``"axis"``).
        value: its value (``default`` when left out).
        alias: PyTorch's name for it (``"dim"``).
        given: the alias's value (None when left out).
        default: ``name``'s default.

    Returns:
        ``given`` when it is not None, else ``value``.

    Raises:
        ValueError: both are given, with different values.

    Examples:
        >>> pytorch_alias("sum", "keepdims", False, "keepdim", True, default=False)
        True
    """
    if given is None:
        return value
    if value is not default and value != default and value != given:
        raise ValueError(
            f"{op}: {name}={value!r} and {alias}={given!r} name the same argument ({alias} is "
            f"PyTorch's name for {name}); pass one of them."
        )
    return given


def pytorch_keyword_error(owner: str, key: str, hint: str) -> TypeError:
    """The error for PyTorch's keyword ``key`` given to ``owner`` (a function or a layer).

    One wording for every refused PyTorch keyword, core's and zerograd-nn's.

    Args:
        owner: the function or class to name (``"max"``, ``"Linear"``).
        key: PyTorch's keyword.
        hint: what to write instead.

    Returns:
        The TypeError to raise.

    Examples:
        >>> pytorch_keyword_error("max", "dim", "write axis=")
        TypeError("max: dim= is PyTorch's keyword, not zerograd's (DeZero's): write axis=.")
    """
    return TypeError(f"{owner}: {key}= is PyTorch's keyword, not zerograd's (DeZero's): {hint}.")


def normalize_axis(axis: Any, ndim: int, op: str) -> tuple[int, ...] | None:
    """Return ``axis`` (an int, a tuple of ints or None) as a sorted tuple of non-negative axes.

    Args:
        axis: The axis or axes; negative ones count from the end; None means all.
        ndim: The input's number of dimensions.
        op: The zerograd function to name in errors.

    Returns:
        The axes, or None for ``axis=None``.

    Raises:
        TypeError: ``axis`` is not None, an int or a tuple of ints (a bool is refused, as
            numpy refuses it: ``sum(x, True)`` meant ``keepdims=True``).
        ValueError: An axis is out of range, or named twice.

    Examples:
        >>> normalize_axis(-1, 3, "sum")
        (2,)
    """
    if axis is None:
        return None
    if type(axis) is int and -ndim <= axis < ndim:
        return (axis % ndim,)  # the common case
    given = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if bool in map(type, given):  # operator.index reads a bool as 0 or 1; numpy refuses it
        raise TypeError(
            f"{op}: axis must be None, an int or a tuple of ints, got {axis!r}; a bool is "
            f"not an axis (to keep the reduced axes, write keepdims=True)."
        )
    try:
        axes = tuple(map(operator.index, given))
    except TypeError:
        raise TypeError(
            f"{op}: axis must be None, an int or a tuple of ints, got {axis!r}"
        ) from None
    for a in axes:
        if not -ndim <= a < ndim:
            valid = f"valid: {-ndim}..{ndim - 1}" if ndim else "it has none: use axis=None"
            raise ValueError(
                f"{op}: axis {a} is out of range for an input of {ndim} dimensions ({valid})."
            )
    out = tuple(sorted(a % ndim for a in axes))
    if len(set(out)) != len(out):
        raise ValueError(_repeated_axis(op, axes, ndim, axis))
    return out


def _repeated_axis(op: str, axes: tuple[int, ...], ndim: int, axis: Any) -> str:
    """The message for ``axis`` (``axes``: its ints) naming one axis of ``ndim`` twice."""
    for j, b in enumerate(axes):
        for a in axes[:j]:
            if a % ndim == b % ndim:
                same = f"{a} is given twice" if a == b else f"{a} and {b} are both axis {a % ndim}"
                return (
                    f"{op}: axis {axis!r} names one axis twice ({same}, the input having {ndim} "
                    f"dimensions); give each axis once."
                )
    raise AssertionError("no repeated axis")  # (the caller found one)


def pair(x: Any, *, what: str = "pair") -> tuple[int, int]:
    """``x`` as a pair ``(h, w)``: an int is repeated, a pair passes through.

    Args:
        x: an int (numpy integers too) or a pair of them.
        what: the function and argument to name in the error, e.g. ``"pooling: stride"``.

    Returns:
        ``(h, w)`` as Python ints.

    Raises:
        TypeError: ``x`` is neither an int nor a sequence of ints (bools and floats such as
            ``2.0`` are refused).
        ValueError: ``x`` is a sequence of ints, but not of two.

    Examples:
        >>> pair(3), pair((2, 1))
        ((3, 3), (2, 1))
    """
    if type(x) is tuple and len(x) == 2 and type(x[0]) is int and type(x[1]) is int:
        return x  # already a pair (the common case: functions pass checked pairs on)
    if int_like(x):
        n = operator.index(x)
        return (n, n)
    if isinstance(x, (tuple, list)) and all(int_like(v) for v in x):
        if len(x) == 2:
            return (operator.index(x[0]), operator.index(x[1]))
        raise ValueError(f"{what}: expected an int or a pair of ints (h, w), got {len(x)}: {x!r}")
    raise TypeError(f"{what}: expected an int or a pair of ints (h, w), got {x!r}")


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
        TypeError: one of them is not an int or a pair of ints.
        ValueError: one of them is a sequence of other than two ints, or is out of range.

    Examples:
        >>> conv_args("conv2d", 3, 1, (1, 0))
        ((3, 3), (1, 1), (1, 0))
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
