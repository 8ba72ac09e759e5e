"""Archives of named arrays: numpy ``.npz`` files written atomically and read checked.

* no pickle: only plain numeric arrays are written, and object arrays are refused;
* writing is atomic (:mod:`zerograd_nn.atomic`);
* reading is checked before it happens: member names, dtypes and shapes come from the
  archive's directory and each ``.npy`` header, and must agree with the sizes the directory
  declares, so a crafted member cannot make a load read gigabytes before it is refused.

The ``.npz`` format is numpy's, so reading and writing use numpy through the numpy backend.
Weight files (:mod:`zerograd_nn.weights`) and checkpoints (:mod:`zerograd_nn.checkpoint`)
are such archives.
"""

from __future__ import annotations

import math
import os
import zipfile
from collections.abc import Mapping
from typing import Any

from zerograd.backends import get_backend

from .atomic import remove_stale_temporaries, write_atomically

__all__ = [
    "Member",
    "WeightFileError",
    "find_archive",
    "inspect_archive",
    "npz_path",
    "numpy_module",
    "read_members",
    "write_archive",
]


class WeightFileError(ValueError):
    """A weight file is unreadable, not a weight archive, or does not fit the model."""


def numpy_module() -> Any:
    """Return numpy, through the numpy backend: the ``.npz`` format is numpy's.

    Raises:
        WeightFileError: the numpy backend is not installed (the message says how).
    """
    try:
        return get_backend("numpy").xp
    except Exception as exc:  # noqa: BLE001 - any registry error means "no numpy backend"
        raise WeightFileError(
            "weight files are numpy .npz archives: install the numpy backend "
            "(pip install zerograd-numpy) to save or load them"
        ) from exc


def npz_path(path: str | os.PathLike, op: str) -> str:
    """``path`` with ``.npz`` appended if missing; refuses an empty name or a directory.

    Args:
        path: the file name given by the user.
        op: the calling function's name, for error messages.

    Returns:
        The path as a str, ending in ``.npz``.

    Raises:
        TypeError: ``path`` is not a str or os.PathLike.
        ValueError: ``path`` is empty or names a directory.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{op}: path must be a str or os.PathLike, got {type(path).__name__}.")
    path = os.fspath(path)
    if not os.path.basename(path) or os.path.isdir(path):
        raise ValueError(
            f"{op}: {path!r} names no file (it is empty or a directory); give a file name "
            f"such as 'model.npz'."
        )
    return path if path.endswith(".npz") else path + ".npz"


def find_archive(
    path: str | os.PathLike, op: str, what: str = "weight file", hint: str = ""
) -> str:
    """Return the existing archive ``path`` names (``.npz`` appended if need be).

    Stale temporaries of the archive (see :mod:`zerograd_nn.atomic`) are removed.

    Args:
        path: the file name given by the user.
        op: the calling function's name, for error messages.
        what: what the file is, for error messages.
        hint: follows the error for a folder (how to pick a file in it).

    Returns:
        The path of the file as a str.

    Raises:
        TypeError: ``path`` is not a str or os.PathLike.
        FileNotFoundError: no such file.
        WeightFileError: ``path`` is a folder.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{op}: path must be a str or os.PathLike, got {type(path).__name__}.")
    path = os.fspath(path)
    if not os.path.exists(path) and os.path.exists(path + ".npz"):
        path += ".npz"
    if not os.path.exists(path):
        raise FileNotFoundError(f"{op}: no {what} at {path!r}")
    if os.path.isdir(path):
        raise WeightFileError(
            f"{op}: {path!r} is a folder; give the {what} in it" + (f" ({hint})." if hint else ".")
        )
    remove_stale_temporaries(path)
    return path


def write_archive(path: str, arrays: Mapping[str, Any], op: str) -> str:
    """Write numpy ``arrays`` as ``<name>.npy`` members of ``path``, atomically.

    Args:
        path: the archive to write.
        arrays: ``{name: array}``; each becomes one member.
        op: the calling function's name, for error messages.

    Returns:
        ``path``.

    Raises:
        FileNotFoundError: the directory of ``path`` does not exist.
        OSError: the directory does not take new files (read-only, full); nothing written.
    """
    np = numpy_module()

    def write(f: Any) -> None:
        with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            for key, a in arrays.items():
                with zf.open(key + ".npy", "w", force_zip64=True) as out:
                    np.lib.format.write_array(out, np.asarray(a), allow_pickle=False)

    return write_atomically(path, write, op)


class Member:
    """One archive member as its directory entry and ``.npy`` header describe it.

    Args:
        info: the member's zip directory entry.
        shape: the array shape from the header.
        dtype: the array dtype from the header.
        fortran: whether the header declares Fortran order.
    """

    def __init__(self, info: zipfile.ZipInfo, shape: tuple, dtype: Any, fortran: bool) -> None:
        self.info, self.shape, self.dtype, self.fortran = info, shape, dtype, fortran


def _damaged(op: str, path: str, what: str, save: str) -> WeightFileError:
    return WeightFileError(
        f"{op}: {path!r} is damaged ({what}); it may be truncated. Save it again with {save}()."
    )


def inspect_archive(
    path: str, op: str, save: str = "save_weights", what: str = "weight file"
) -> dict[str, Member]:
    """``{name: Member}`` from the directory and headers only: no array data is read.

    Args:
        path: the archive to inspect.
        op: the calling function's name, for error messages.
        save: the function that writes such files, named in error messages.
        what: what such a file is called in error messages.

    Returns:
        One Member (shape, dtype, ...) per array name.

    Raises:
        FileNotFoundError: no file at ``path``.
        WeightFileError: not an ``.npz`` archive, a member that is not a ``.npy`` array,
            holds Python objects, or declares a size its header contradicts.
    """
    np = numpy_module()
    if not os.path.exists(path):
        raise FileNotFoundError(f"{op}: no file at {path!r}")
    with open(path, "rb") as f:
        if f.read(6) == b"\x93NUMPY":
            raise WeightFileError(
                f"{op}: {path!r} holds a single array, not an .npz archive of named arrays; "
                f"save with {save}()."
            )
    try:
        zf = zipfile.ZipFile(path)
    except Exception as exc:  # noqa: BLE001 - zipfile's reader raises more than BadZipFile
        # on a damaged directory: NotImplementedError for a mangled version field, ...
        raise WeightFileError(
            f"{op}: {path!r} is not a readable .npz {what} ({type(exc).__name__}: {exc}); it "
            f"may be truncated or of another format. Save it again with {save}()."
        ) from exc
    members = {}
    with zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                raise WeightFileError(
                    f"{op}: {path!r} holds {info.filename!r}, which is not a .npy array; an "
                    f".npz weight file holds only .npy members. Save it again with {save}()."
                )
            name = info.filename[: -len(".npy")]
            try:
                with zf.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    read_header = {
                        (1, 0): np.lib.format.read_array_header_1_0,
                        (2, 0): np.lib.format.read_array_header_2_0,
                    }.get(version)
                    if read_header is None:
                        raise ValueError(f".npy format version {version} is not supported")
                    shape, fortran, dtype = read_header(f)
                    header_len = f.tell()
            except Exception as exc:  # noqa: BLE001 - every failure here is a damaged member
                raise _damaged(op, path, f"member {info.filename!r}: {exc}", save) from exc
            if dtype.hasobject:
                raise WeightFileError(
                    f"{op}: {path!r} member {info.filename!r} holds Python objects (dtype "
                    f"{dtype}); weight files hold numeric arrays only and are never unpickled."
                )
            nbytes = math.prod(shape) * dtype.itemsize
            if header_len + nbytes != info.file_size:
                raise _damaged(
                    op,
                    path,
                    f"member {info.filename!r} declares shape {shape} of {dtype} "
                    f"({nbytes} bytes) but the archive lists {info.file_size} bytes",
                    save,
                )
            members[name] = Member(info, tuple(shape), dtype, fortran)
    return members


def read_members(
    path: str, names: list[str], op: str, save: str = "save_weights"
) -> dict[str, Any]:
    """Read the members ``names`` (checked first by :func:`inspect_archive`) as numpy arrays.

    Args:
        path: the archive to read.
        names: the array names to read.
        op: the calling function's name, for error messages.
        save: the function that writes such files, named in error messages.

    Returns:
        ``{name: numpy array}``.

    Raises:
        WeightFileError: a member cannot be read (the file is damaged).
    """
    np = numpy_module()
    out = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for name in names:
                with zf.open(name + ".npy") as f:
                    out[name] = np.lib.format.read_array(f, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001
        raise _damaged(op, path, f"{type(exc).__name__}: {exc}", save) from exc
    return out
