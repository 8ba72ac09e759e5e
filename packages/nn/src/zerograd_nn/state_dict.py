"""State dicts: a layer's parameters as ``{dotted name: array}``, and loading them back.

Names follow the attribute path, as PyTorch's do: ``'l1.W'`` for a sub-layer's parameter,
``'layers.0.W'`` for a layer held in a list or tuple attribute. A Parameter reachable by two
paths (tied weights) appears once, under the first path in definition order: the names of
:meth:`Layer.named_params`, which weight files (:mod:`zerograd_nn.weights`) write with
DeZero's ``/`` separator.

Loading is all or nothing: every name, shape and dtype is checked, every array converted to
its parameter's backend and dtype, and only then is any parameter changed.

>>> import numpy as np
>>> from zerograd_nn.models import MLP
>>> model = MLP((3, 2))
>>> _ = model(np.ones((1, 4), np.float32))
>>> list(model.state_dict())
['l0.W', 'l0.b', 'l1.W', 'l1.b']
>>> twin = MLP((3, 2))
>>> twin.load_state_dict(model.state_dict())
LoadResult(missing=[], unexpected=[])
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from zerograd import Variable
from zerograd.backends import as_array_of, backend_of, get_backend
from zerograd.checks import flag

from .archives import CHECKPOINT_MEMBER, STORED_KINDS
from .conversion import fitted, planned_dtypes, planned_shapes, sized_like, unfit_shape
from .listing import joined, listed
from .ties import tied_loads

__all__ = ["LoadResult", "load_state_dict", "state_dict"]


class LoadResult(NamedTuple):
    """What :meth:`Layer.load_state_dict` skipped (always empty when ``strict=True``)."""

    missing: list[str]
    unexpected: list[str]


def state_dict(layer: Any) -> dict[str, Any]:
    """``{dotted name: copy of the array}`` for every Parameter that has data.

    The arrays are copies on the parameters' backends: training on does not change them.
    Parameters of a lazily sized layer that has not seen an input yet have no data and
    are left out.

    Args:
        layer: a Layer or Model.

    Returns:
        A new dict of array copies.
    """
    out = {}
    for name, p in layer.named_params().items():
        if p.data is not None:
            out[name] = backend_of(p.data).astype(p.data, p.data.dtype)  # a copy
    return out


def _as_array(value: Any) -> Any:
    return value.data if isinstance(value, Variable) else value


def _numeric(value: Any) -> bool:
    """An array of a kind a parameter is saved and loaded with (the archives' table)."""
    dtype = getattr(value, "dtype", None)
    if dtype is None or not hasattr(value, "shape"):
        return False
    try:
        return backend_of(value).dtype_kind(dtype) in STORED_KINDS
    except Exception:  # noqa: BLE001 - an array type no backend owns
        return False


def load_state_dict(
    layer: Any, d: Mapping[str, Any], strict: bool = True, *, owner: str = "Layer"
) -> LoadResult:
    """Set ``layer``'s parameters from ``d`` (see :meth:`Layer.load_state_dict`).

    Args:
        layer: a Layer or Model.
        d: ``{dotted name: array}`` as :func:`state_dict` returns.
        strict: require exactly the same names.
        owner: the class name used in error messages.

    Returns:
        The missing and unexpected names.

    Raises:
        TypeError: ``d`` is not a mapping.
        ValueError: ``d`` does not fit ``layer``; nothing changed.
    """
    commit, _, result = prepare_load(layer, d, strict, owner=owner)
    commit()
    return result


def _file_arrays(missing: list, unexpected: list) -> str | None:
    """Say which file's arrays a dict whose names differ from the model's is, and its loader.

    ``np.load`` of a weight file has DeZero's ``'l0/W'`` names, of a checkpoint its
    description member; None for anything else.
    """
    if CHECKPOINT_MEMBER in unexpected:
        return (
            "a checkpoint's arrays: load the file with "
            "zerograd_nn.checkpoint.load_checkpoint(path, model=...)."
        )
    if missing and {k.replace("/", ".") for k in unexpected} >= set(missing):
        k = missing[0]
        return (
            f"a weight file's names ({k.replace('.', '/')!r} for {k!r}): load the file with "
            f"load_weights(path)."
        )
    return None


def prepare_load(
    layer: Any, d: Mapping[str, Any], strict: bool = True, *, owner: str = "Layer"
) -> tuple[Callable[[], None], dict[int, Any], LoadResult]:
    """Check and convert everything :func:`load_state_dict` needs, changing nothing.

    Takes the arguments of :func:`load_state_dict`.

    Returns:
        ``(commit, new, result)``: ``commit()`` assigns (and cannot fail); ``new`` maps
        ``id(param)`` to the array it will hold.

    Raises:
        TypeError: ``d`` is not a mapping, or ``strict`` is not True or False (numpy's bools count).
        ValueError: ``d`` does not fit ``layer``.
    """
    op = f"{owner}.load_state_dict"
    strict = flag(op, "strict", strict)
    if isinstance(d, (str, bytes, os.PathLike)):
        raise TypeError(
            f"{op}(d): d is a path ({d!r}), not a state dict (the mapping state_dict() "
            f"returns); to load a file, use load_weights(path) for a weight file or "
            f"zerograd_nn.checkpoint.load_checkpoint(path, model=...) for a checkpoint."
        )
    if not isinstance(d, Mapping):
        raise TypeError(
            f"{op}(d): d must be a mapping of parameter names to arrays (as state_dict() "
            f"returns), got {type(d).__name__}."
        )
    params = layer.named_params()
    missing = [k for k, p in params.items() if k not in d and p.data is not None]
    unexpected = [k for k in d if k not in params]
    problems = []
    if strict and missing:
        problems.append(f"missing: {listed(missing)}")
    if strict and unexpected:
        problems.append(f"not in the model: {listed(unexpected)}")
    names_only = bool(problems)  # strict=False helps only when names alone differ
    shapes = planned_shapes(layer)
    for k, p in params.items():
        if k not in d:
            continue
        a = _as_array(d[k])
        if not _numeric(a):
            what = getattr(a, "dtype", type(a).__name__)
            problems.append(f"{k}: expected a numeric array, got {what}")
            names_only = False
        elif p.data is not None and tuple(a.shape) != tuple(p.data.shape):
            problems.append(f"{k}: model {tuple(p.data.shape)}, given {tuple(a.shape)}")
            names_only = False
        elif p.data is None and (why := unfit_shape(a.shape, shapes.get(id(p)))):
            problems.append(f"{k}: given {tuple(a.shape)}, {why}")
            names_only = False
    if problems:
        advice = (
            " or strict=False to load the names that match."
            if names_only
            else " (strict=False skips only names, never a parameter of another shape "
            "or dtype: leave such parameters out of the state dict)."
            if strict
            else "."
        )
        if names_only and (file := _file_arrays(missing, unexpected)):
            advice = f"; these are {file}"  # strict=False would load none of them
        else:
            advice = f"; pass the state_dict() of the same architecture{advice}"
        raise ValueError(
            f"{op}: the state dict does not fit {type(layer).__name__} ({joined(problems)}). "
            f"Nothing was changed{advice}"
        )
    default = next(
        (backend_of(p.data) for p in params.values() if p.data is not None), get_backend()
    )
    planned = planned_dtypes(layer)
    new = {}
    for k, p in params.items():
        if k not in d:
            continue
        a = _as_array(d[k])
        if p.data is None and id(p) in planned:  # the dtype its layer would size it in
            new[k] = sized_like(a, default, planned[id(p)], repr(k), op)
            continue
        if p.data is None:  # takes the given dtype, in a copy of its own
            x = as_array_of(a, default)
            new[k] = default.astype(x, x.dtype)
            continue
        new[k] = fitted(a, p.data, repr(k), op)  # a copy: never shared with the caller

    try:
        new = tied_loads(params, new)
    except ValueError as e:
        raise ValueError(f"{op}: {e}. Nothing was changed.") from None

    def commit() -> None:  # nothing here can fail: the model changes all at once
        for k, a in new.items():
            params[k].data = a

    by_id = {id(params[k]): a for k, a in new.items()}
    return commit, by_id, LoadResult(list(missing), list(unexpected))
