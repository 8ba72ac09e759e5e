"""What ``export`` and ``check`` share: the model, input arrays, names, the batch axis, outputs."""

from __future__ import annotations

import os
from typing import Any

from zerograd import Variable
from zerograd.backends import backend_of, get_array_module


def check_model(model: Any, op: str) -> None:
    """Refuse a ``model`` that cannot be called.

    Raises:
        TypeError: ``model`` is not callable.
    """
    if not callable(model):
        raise TypeError(f"{op}: model must be a Layer or a callable, got {model!r}")


def output_variables(out: Any, op: str) -> tuple[Variable, ...]:
    """What the model returned (a Variable, or a tuple or list of them) as a tuple.

    Raises:
        TypeError: something else, named.
    """
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    for i, y in enumerate(outs):
        if not isinstance(y, Variable):
            what = f"output {i} is" if isinstance(out, (tuple, list)) else "the model returned"
            raise TypeError(
                f"{op}: {what} {type(y).__module__}.{type(y).__qualname__}, not a Variable; "
                f"return the Variable (or a tuple of Variables) the forward computes: ONNX "
                f"outputs are tensors the graph computes."
            )
    return outs


def input_arrays(inputs: Any, op: str, what: str) -> tuple[Any, ...]:
    """``inputs`` (one array or Variable, or a tuple or list of them) as a tuple of arrays.

    Args:
        inputs: what the caller passed.
        op: the calling function's name, for messages.
        what: the argument's name, for messages.

    Returns:
        The backend arrays, in order.

    Raises:
        TypeError: an item is neither a Variable holding an array nor a backend array.
        ValueError: no inputs at all.
    """
    items = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    if not items:
        raise ValueError(f"{op}: {what} is empty; give the model's input arrays (one or a tuple)")
    arrays = []
    for i, item in enumerate(items):
        data = item.data if isinstance(item, Variable) else item
        try:
            backend_of(data)
        except TypeError:
            raise TypeError(
                f"{op}: {what}[{i}] is {type(item).__module__}.{type(item).__qualname__}, not an "
                f"array or a Variable holding one; pass arrays (numpy.asarray(...)) in a tuple."
            ) from None
        arrays.append(data)
    return tuple(arrays)


def value_names(names: Any, n: int, default: str, op: str, what: str) -> list[str]:
    """The names of ``n`` graph inputs or outputs: ``names`` checked, or the defaults.

    The defaults are ``default`` for one and ``default_0``, ``default_1``, ... for more.

    Raises:
        TypeError: ``names`` is not a list or tuple of strings.
        ValueError: it has another length than ``n``, an empty name or a repeated one.
    """
    if names is None:
        return [default] if n == 1 else [f"{default}_{i}" for i in range(n)]
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise TypeError(f"{op}: {what} must be a list or tuple of strings, got {names!r}")
    names = list(names)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{op}: {what} must hold strings, got {name!r}")
    if len(names) != n:
        raise ValueError(f"{op}: {what} names {len(names)} values {names} but there are {n}")
    if "" in names or len(set(names)) != len(names):
        raise ValueError(f"{op}: {what} {names} must be distinct, non-empty names")
    return names


def batch_size(arrays: tuple[Any, ...], op: str) -> int:
    """The common length of axis 0 of ``arrays`` (the batch axis of a dynamic-batch export).

    Raises:
        ValueError: an array is 0-d or empty along axis 0, or two lengths differ.
    """
    sizes = []
    for i, a in enumerate(arrays):
        if a.ndim == 0 or a.shape[0] == 0:
            raise ValueError(
                f"{op}: input {i} of shape {tuple(a.shape)} has no batch axis with rows; with "
                f"dynamic_batch=True axis 0 of every input is the batch. Give at least one row, "
                f"or pass dynamic_batch=False."
            )
        sizes.append(a.shape[0])
    if len(set(sizes)) > 1:
        raise ValueError(
            f"{op}: the inputs' batch sizes (axis 0) differ: {sizes}; with dynamic_batch=True "
            f"axis 0 of every input is the one batch axis. Pass dynamic_batch=False for inputs "
            f"without a shared batch."
        )
    return sizes[0]


def one_more_row(a: Any) -> Any:
    """``a`` with its first row repeated at the end: a batch one row larger."""
    return get_array_module(a).concat([a, a[:1]], axis=0)


def rows_in_another_order(a: Any) -> Any:
    """``a`` with its first row moved to the end (``a`` itself when it has no rows)."""
    if a.ndim == 0 or a.shape[0] < 2:
        return a
    return get_array_module(a).concat([a[1:], a[:1]], axis=0)


def file_path(path: Any, op: str) -> str:
    """``path`` (a string or ``os.PathLike``) as a string.

    Raises:
        TypeError: anything else.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{op}: path must be a string or os.PathLike, got {path!r}")
    return os.fspath(path)
