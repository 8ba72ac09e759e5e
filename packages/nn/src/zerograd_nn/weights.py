"""Weight files: a layer's parameters as ordered, named arrays in an ``.npz`` archive.

* names are hierarchical, as in DeZero: ``'l1/W'``, ``'res2/a/conv1/W'``;
* the file is an archive of :mod:`zerograd_nn.archives`: plain numeric arrays only, no
  pickle, written atomically (:mod:`zerograd_nn.atomic`: a crash never leaves a
  half-written file), read only once its directory and headers have been checked;
* loading is all-or-nothing: the file is checked against the model (names, shapes), read
  whole, and only then does any parameter change.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from zerograd.backends import as_array_of, as_numpy, backend_of, get_backend

from .archives import (
    CHECKPOINT_MEMBER,
    STORED_KINDS,
    WeightFileError,
    npz_path,
    open_archive,
    stored_dtype_error,
    write_archive,
)
from .conversion import fitted, planned_dtypes, planned_shapes, sized_like, unfit_shape
from .listing import joined, listed
from .ties import tied_loads

__all__ = [
    "WeightFileError",
    "check_fit",
    "converted",
    "load_weights",
    "named_params",
    "read_weights",
    "save_weights",
]


def named_params(layer: Any) -> dict[str, Any]:
    """``{'l1/W': Parameter, ...}`` for ``layer``, in definition order.

    Args:
        layer: a Layer or Model.

    Returns:
        The weight-file names mapped to their Parameters.
    """
    return {name.replace(".", "/"): p for name, p in layer.named_params().items()}


def save_weights(layer: Any, path: str | os.PathLike) -> str:
    """Write ``layer``'s parameters to ``path`` (``.npz`` appended if missing).

    Fails, writing nothing, when a parameter has no data yet (a lazily sized layer that has
    not seen an input: run one forward pass, or give ``in_size``/``in_channels``), or when
    the directory does not exist.

    Args:
        layer: a Layer or Model.
        path: the file to write.

    Returns:
        The path written.

    Raises:
        WeightFileError: a parameter has no data yet.
        TypeError: a parameter's dtype is one weight files do not hold (complex).
        FileNotFoundError: the directory does not exist.
    """
    path = npz_path(path, "save_weights")
    params = named_params(layer)
    empty = [k for k, p in params.items() if p.data is None]
    if empty:
        raise WeightFileError(
            f"save_weights: parameters {empty} have no data yet (lazily sized layers that have "
            f"not seen an input; an RNN sizes h2h at its second step); run a forward pass "
            f"first, or pass in_size/in_channels."
        )
    arrays = {k: as_numpy(p.data) for k, p in params.items()}
    for k, a in arrays.items():
        error = stored_dtype_error("save_weights", f"parameter {k!r}", a.dtype)
        if error is not None:
            raise error
    return write_archive(path, arrays, "save_weights")


def check_fit(
    params: Mapping[str, Any],
    shapes: Mapping[str, tuple],
    kinds: Mapping[str, str],
    planned: Mapping[int, tuple] | None = None,
) -> list[str]:
    """The differences between a model's ``params`` and an archive's names/shapes/kinds.

    Args:
        params: ``{name: Parameter}`` of the model.
        shapes: ``{name: shape}`` of the archive.
        kinds: ``{name: dtype kind}`` of the archive.
        planned: ``{id(parameter): shape}`` for unsized parameters whose layer fixes some
            axes (:func:`~zerograd_nn.conversion.planned_shapes`); None: any shape.

    Returns:
        One line per problem (empty when everything fits).
    """
    missing = [k for k in params if k not in shapes]
    unexpected = [k for k in shapes if k not in params]
    diffs = [
        f"{k}: model {tuple(p.data.shape)}, file {tuple(shapes[k])}"
        for k, p in params.items()
        if k in shapes and p.data is not None and tuple(p.data.shape) != tuple(shapes[k])
    ]
    planned = planned or {}
    diffs += [
        f"{k}: file {tuple(shapes[k])}, {why}"
        for k, p in params.items()
        if k in shapes
        and p.data is None
        and (why := unfit_shape(shapes[k], planned.get(id(p)))) is not None
    ]
    bad = [f"{k}: dtype kind {c!r}" for k, c in kinds.items() if c not in STORED_KINDS]
    parts = []
    if missing:
        parts.append(f"missing in the file: {listed(missing)}")
    if unexpected:
        parts.append(f"not in the model: {listed(unexpected)}")
    if diffs:
        parts.append("shape differences: " + joined(diffs))
    if bad:
        parts.append("non-numeric arrays: " + joined(bad))
    return parts


def converted(
    params: Mapping[str, Any], arrays: Mapping[str, Any], planned: Mapping[int, Any] | None = None
) -> dict[str, Any]:
    """``arrays`` moved to each parameter's backend and dtype (unsized ones: the model's).

    Args:
        params: ``{name: Parameter}`` of the model.
        arrays: ``{name: numpy array}`` read from a file.
        planned: ``{id(parameter): dtype}`` for unsized parameters whose layer fixes their
            dtype (:func:`~zerograd_nn.conversion.planned_dtypes`); the others keep the
            file's.

    Returns:
        ``{name: backend array}`` ready to assign.

    Raises:
        WeightFileError: a value would become inf in its parameter's dtype.
    """
    default = next(
        (backend_of(p.data) for p in params.values() if p.data is not None), get_backend()
    )
    new = {}
    for k, p in params.items():
        a = arrays[k]
        if p.data is not None:
            try:
                new[k] = fitted(a, p.data, repr(k), "load_weights", private=True)
            except ValueError as exc:
                raise WeightFileError(str(exc)) from None
        elif planned and id(p) in planned:
            try:
                new[k] = sized_like(a, default, planned[id(p)], repr(k), "load_weights")
            except ValueError as exc:
                raise WeightFileError(str(exc)) from None
        else:
            new[k] = as_array_of(a, default)
    return new


def load_weights(layer: Any, path: str | os.PathLike) -> None:
    """Set ``layer``'s parameters from a file written by :func:`save_weights`.

    Names and shapes must match exactly; otherwise :class:`WeightFileError` lists the
    missing and unexpected names and the shape differences, and nothing is changed. They
    are checked from the archive's headers before any array is read. Arrays go to the
    backend of the parameter they replace and keep its dtype; a parameter with no data yet
    goes to the model's backend, in the dtype its layer would size it in (``Linear``'s
    ``dtype``), or the file's where the layer does not fix one (``BatchNorm``).

    Args:
        layer: a Layer or Model.
        path: the weight file.

    Raises:
        WeightFileError: the file does not fit ``layer`` or cannot be read, is a
            checkpoint (``load_checkpoint`` reads those), or ``path`` is a folder, a FIFO
            or a device.
        FileNotFoundError: no file at ``path``.
    """
    params = named_params(layer)
    with open_archive(path, "load_weights") as archive:
        members = archive.members
        if CHECKPOINT_MEMBER in members:
            raise WeightFileError(
                f"load_weights: {archive.path!r} is a checkpoint (save_checkpoint or a "
                f"Trainer's Snapshot wrote it), not a weight file; load it with "
                f"load_checkpoint(path, model=...) from zerograd_nn.checkpoint (its optimizer= "
                f"is optional). The model was not changed."
            )
        kinds = {k: m.dtype.kind for k, m in members.items()}
        shapes = {k: m.shape for k, m in members.items()}
        parts = check_fit(params, shapes, kinds, planned_shapes(layer))
        if parts:
            raise WeightFileError(
                f"load_weights: {archive.path!r} does not fit {type(layer).__name__} "
                f"({'; '.join(parts)}). The model was not changed."
            )
        arrays = archive.read(members)
    new = converted(params, arrays, planned_dtypes(layer))
    try:
        new = tied_loads(params, new)
    except ValueError as e:
        raise WeightFileError(
            f"load_weights: {archive.path!r} does not fit {type(layer).__name__}: {e}. "
            f"The model was not changed."
        ) from None
    for k, p in params.items():  # nothing below can fail: the model changes all at once
        p.data = new[k]


def read_weights(path: str | os.PathLike) -> dict[str, Any]:
    """Every array of a weight file as ``{name: numpy array}`` in file order.

    Args:
        path: the weight file.

    Returns:
        ``{name: numpy array}``.

    Raises:
        WeightFileError: the file is truncated, not an ``.npz`` archive, or holds anything
            but plain ``.npy`` arrays (pickled objects are refused).
    """
    with open_archive(path, "load_weights") as archive:
        return archive.read(archive.members)
