"""Weight files: a layer's parameters as ordered, named arrays in an ``.npz`` archive.

* names are hierarchical, as in DeZero: ``'l1/W'``, ``'res2/a/conv1/W'``;
* no pickle: only plain numeric arrays are written, and files are read with
  ``allow_pickle=False``;
* saving is atomic: the archive is written to a temporary file in the target's directory,
  flushed to disk, then renamed over the target, so a crash never leaves a half-written file;
* loading is all-or-nothing: the whole file is read and checked against the model (names,
  shapes) before any parameter changes.

The ``.npz`` format is numpy's, so reading and writing use numpy through the numpy backend.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from typing import Any

from zerograd.backends import as_array_of, as_numpy, backend_of, get_backend


class WeightFileError(ValueError):
    """A weight file is unreadable, not a weight archive, or does not fit the model."""


def _numpy() -> Any:
    try:
        return get_backend("numpy").xp
    except Exception as exc:  # noqa: BLE001 - any registry error means "no numpy backend"
        raise WeightFileError(
            "weight files are numpy .npz archives: install the numpy backend "
            "(pip install zerograd-numpy) to save or load them"
        ) from exc


def named_params(layer: Any) -> dict[str, Any]:
    """``{'l1/W': Parameter, ...}`` for ``layer``, in definition order."""
    params: dict[str, Any] = {}
    layer._flatten_params(params)
    return params


def _npz_path(path: str | os.PathLike) -> str:
    path = os.fspath(path)
    return path if path.endswith(".npz") else path + ".npz"


def save_weights(layer: Any, path: str | os.PathLike) -> str:
    """Write ``layer``'s parameters to ``path`` (``.npz`` appended if missing); returns the path.

    Fails, writing nothing, when a parameter has no data yet (a lazily sized layer that has
    not seen an input: run one forward pass, or give ``in_size``/``in_channels``).
    """
    np = _numpy()
    params = named_params(layer)
    empty = [k for k, p in params.items() if p.data is None]
    if empty:
        raise WeightFileError(
            f"save_weights: parameters {empty} have no data yet (lazily sized layers that have "
            f"not seen an input); run one forward pass first, or pass in_size/in_channels."
        )
    arrays = {k: as_numpy(p.data) for k, p in params.items()}
    path = _npz_path(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                for key, a in arrays.items():
                    with zf.open(key + ".npy", "w", force_zip64=True) as out:
                        np.lib.format.write_array(out, np.asarray(a), allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)
    return path


def _fsync_dir(directory: str) -> None:
    """Make the rename durable (best effort; not every platform can open a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_weights(path: str | os.PathLike) -> dict[str, Any]:
    """Every array of a weight file as ``{name: numpy array}`` in file order.

    Raises :class:`WeightFileError` when the file is truncated, not an ``.npz`` archive,
    or holds anything but plain arrays (pickled objects are refused).
    """
    np = _numpy()
    path = os.fspath(path)
    if not os.path.exists(path) and os.path.exists(path + ".npz"):
        path += ".npz"
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_weights: no weight file at {path!r}")
    try:
        npz = np.load(path, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - every failure here means "not a weight file"
        raise WeightFileError(
            f"load_weights: {path!r} is not a readable .npz weight file ({type(exc).__name__}: "
            f"{exc}); it may be truncated or of another format. Save it again with "
            f"save_weights()."
        ) from exc
    if not hasattr(npz, "files"):
        raise WeightFileError(
            f"load_weights: {path!r} holds a single array, not an .npz archive of named "
            f"parameters; save weights with save_weights()."
        )
    try:
        with npz:
            return {name: npz[name] for name in npz.files}
    except Exception as exc:  # noqa: BLE001
        raise WeightFileError(
            f"load_weights: {path!r} is damaged ({type(exc).__name__}: {exc}); it may be "
            f"truncated. Save it again with save_weights()."
        ) from exc


def load_weights(layer: Any, path: str | os.PathLike) -> None:
    """Set ``layer``'s parameters from a file written by :func:`save_weights`.

    Names and shapes must match exactly; otherwise :class:`WeightFileError` lists the
    missing and unexpected names and the shape differences, and nothing is changed.
    Arrays go to the backend of the parameter they replace and keep its dtype
    (a parameter with no data yet takes the file's dtype, on the model's backend).
    """
    arrays = read_weights(path)
    params = named_params(layer)
    missing = [k for k in params if k not in arrays]
    unexpected = [k for k in arrays if k not in params]
    shapes = [
        f"{k}: model {tuple(p.data.shape)}, file {tuple(arrays[k].shape)}"
        for k, p in params.items()
        if k in arrays and p.data is not None and tuple(p.data.shape) != arrays[k].shape
    ]
    kinds = [f"{k}: dtype {a.dtype}" for k, a in arrays.items() if a.dtype.kind not in "fiub"]
    if missing or unexpected or shapes or kinds:
        parts = []
        if missing:
            parts.append(f"missing in the file: {missing}")
        if unexpected:
            parts.append(f"not in the model: {unexpected}")
        if shapes:
            parts.append("shape differences: " + "; ".join(shapes))
        if kinds:
            parts.append("non-numeric arrays: " + "; ".join(kinds))
        raise WeightFileError(
            f"load_weights: {os.fspath(path)!r} does not fit {type(layer).__name__} "
            f"({'; '.join(parts)}). The model was not changed."
        )
    default = next(
        (backend_of(p.data) for p in params.values() if p.data is not None), get_backend()
    )
    new = {}
    for k, p in params.items():
        a = arrays[k]
        if p.data is not None:
            if a.dtype != p.data.dtype:
                a = a.astype(p.data.dtype)
            new[k] = as_array_of(a, backend_of(p.data))
        else:
            new[k] = as_array_of(a, default)
    for k, p in params.items():  # nothing below can fail: the model changes all at once
        p.data = new[k]
