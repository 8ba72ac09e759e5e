"""Archives of named arrays: numpy ``.npz`` files written atomically and read checked.

* no pickle: only plain numeric arrays are written, and object arrays are refused;
* writing is atomic (:mod:`zerograd_nn.atomic`);
* reading is one pass over one open file (:func:`open_archive`): the path must name a
  regular file (a folder, a FIFO, a device such as ``/dev/zero`` or a link to one is
  refused before it is opened for reading, so a load never blocks or reads without end);
  member names, dtypes and shapes come from the archive's directory and each ``.npy``
  header, and must agree with the sizes the directory declares and fit in the file, so a
  crafted member cannot make a load read gigabytes before it is refused; arrays are then
  read from the same open file (a save replacing the file meanwhile is never half seen).

The ``.npz`` format is numpy's, so reading and writing use numpy through the numpy backend.
Weight files (:mod:`zerograd_nn.weights`) and checkpoints (:mod:`zerograd_nn.checkpoint`)
are such archives.
"""

from __future__ import annotations

import errno
import math
import os
import stat
import zipfile
from collections.abc import Iterable, Mapping
from typing import IO, Any

from zerograd.backends import get_backend

from .atomic import checked_path, file_kind, remove_stale_temporaries, write_atomically

__all__ = [
    "CHECKPOINT_MEMBER",
    "STORED_KINDS",
    "Archive",
    "Member",
    "WeightFileError",
    "find_archive",
    "inspect_archive",
    "npz_path",
    "numpy_module",
    "open_archive",
    "read_members",
    "stored_dtype_error",
    "write_archive",
]

STORED_KINDS = "biuf"
"""The dtype kinds an archive holds (bool, signed and unsigned integers, floats): what
every save writes and every load reads back into a parameter. Others are refused when
saving, so that no file is written that its load would refuse."""

CHECKPOINT_MEMBER = "__checkpoint__"
"""The name of the array holding a checkpoint's JSON description: an archive that has it
is a checkpoint (:mod:`zerograd_nn.checkpoint`), one without it a weight file."""


def stored_dtype_error(op: str, what: str, dtype: Any) -> TypeError | None:
    """The error for saving an array of ``dtype`` as ``what``; None when it can be stored.

    Args:
        op: the saving function's name.
        what: the array, as the user knows it (``"parameter 'l1/W'"``).
        dtype: its dtype.
    """
    if dtype.kind in STORED_KINDS:
        return None
    return TypeError(
        f"{op}: {what} has dtype {dtype}, which weight files and checkpoints do not hold "
        f"(they hold bool, integer and float arrays; convert it, e.g. with .astype(float), "
        f"or save complex values as their real and imaginary parts). Nothing was written."
    )


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
        ValueError: ``path`` is empty or names a directory (with ``.npz`` appended too).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{op}: path must be a str or os.PathLike, got {type(path).__name__}.")
    given = os.fspath(path)
    path = given if given.endswith(".npz") else given + ".npz"
    if not os.path.basename(given) or os.path.isdir(given) or os.path.isdir(path):
        also = f" ({path!r} is one)" if path != given and os.path.isdir(path) else ""
        raise ValueError(
            f"{op}: {given!r} names no file (it is empty or a directory{also}); give a file "
            f"name such as 'model.npz'. Nothing was written."
        )
    return path


def write_archive(path: str, arrays: Mapping[str, Any], op: str) -> str:
    """Write numpy ``arrays`` as ``<name>.npy`` members of ``path``, atomically.

    The callers have checked each dtype with :func:`stored_dtype_error`, naming the array
    as their users know it.

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


def _damaged(
    op: str, path: str, what: str, save: str, error: type = WeightFileError
) -> WeightFileError:
    return error(
        f"{op}: {path!r} is damaged ({what}); it may be truncated. Save it again with {save}()."
    )


def _open_regular(path: str, op: str, what: str, hint: str, error: type) -> tuple[IO[bytes], int]:
    """``path`` opened for reading, and its size, if it is a regular file (or a link to one).

    A FIFO would block the open or the read until a writer came, and a device such as
    ``/dev/zero`` reads without end: both are refused from ``stat`` before any read, and
    the open cannot block (``O_NONBLOCK``; ``fstat`` checks the file opened, in case the
    path changed in between).
    """
    checked_path(path, op)
    shown = repr(path)
    if os.path.islink(path):
        shown += f" (a link to {os.path.realpath(path)!r})"

    def refuse(mode: int) -> None:
        if stat.S_ISDIR(mode):
            raise error(
                f"{op}: {shown} is a folder; give the {what} in it"
                + (f" ({hint})." if hint else ".")
            )
        if not stat.S_ISREG(mode):
            raise error(
                f"{op}: {shown} is {file_kind(mode)}, not a regular file; a {what} is read only "
                f"from a regular file. Give the path of the {what} itself."
            )

    try:
        refuse(os.stat(path).st_mode)
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise FileNotFoundError(f"{op}: no {what} at {path!r}") from None
    except error:
        raise
    except OSError as exc:  # no permission, a loop of links, a socket
        if isinstance(exc, PermissionError):
            advice = "; make it readable (chmod u+r)."
        elif exc.errno == errno.ELOOP:
            advice = f"; it is a symbolic link in a loop: remove it or point it at a {what}."
        else:
            advice = ""
        raise type(exc)(
            exc.errno, f"{op}: cannot open the {what} {path!r} ({exc.strerror or exc}){advice}"
        ) from None
    try:
        info = os.fstat(fd)
        refuse(info.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb"), info.st_size


class Archive:
    """An archive open for reading: its checked :class:`Member` s, then their arrays.

    Made by :func:`open_archive`; use it as a context manager (or call :meth:`close`).

    Attributes:
        path: the archive's path.
        members: ``{name: Member}`` in file order, each checked from its header.
    """

    def __init__(
        self, path: str, file: IO[bytes], zf: zipfile.ZipFile, members: dict, where: tuple
    ) -> None:
        self.path, self.members = path, members
        self._file, self._zip, self._where = file, zf, where

    def read(self, names: Iterable[str]) -> dict[str, Any]:
        """Read the members ``names`` as numpy arrays (sizes checked when it was opened).

        Args:
            names: array names, each a key of :attr:`members`.

        Returns:
            ``{name: numpy array}``.

        Raises:
            WeightFileError: a member cannot be read (the file is damaged: a wrong
                checksum, a cut-off member).
        """
        np = numpy_module()
        op, path, _, save, error = self._where
        out = {}
        try:
            for name in names:
                with self._zip.open(self.members[name].info) as f:
                    out[name] = np.lib.format.read_array(f, allow_pickle=False)
        except Exception as exc:  # noqa: BLE001 - every failure here is a damaged member
            raise _damaged(op, path, f"{type(exc).__name__}: {exc}", save, error) from exc
        return out

    def close(self) -> None:
        """Close the file."""
        self._zip.close()
        self._file.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# deflate expands at most 1032-fold: a member declaring more than this is damaged
_MAX_DEFLATE_RATIO = 1100


def _member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, size: int, where: tuple) -> Member:
    """One member checked from its directory entry and ``.npy`` header (no data read)."""
    np = numpy_module()
    op, path, what, save, error = where
    if not info.filename.endswith(".npy"):
        raise error(
            f"{op}: {path!r} holds {info.filename!r}, which is not a .npy array; an .npz "
            f"{what} holds only .npy members. Save it again with {save}()."
        )
    declared = info.file_size
    stored = info.compress_type == zipfile.ZIP_STORED
    if (
        info.header_offset + info.compress_size > size
        or (stored and declared != info.compress_size)
        or (info.compress_type == zipfile.ZIP_DEFLATED)
        and declared > _MAX_DEFLATE_RATIO * info.compress_size + 1024
    ):
        raise _damaged(
            op,
            path,
            f"member {info.filename!r} claims {declared} bytes, {info.compress_size} of them "
            f"in the file, at offset {info.header_offset} of a file of {size} bytes",
            save,
            error,
        )
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
        raise _damaged(op, path, f"member {info.filename!r}: {exc}", save, error) from exc
    if dtype.hasobject:
        raise error(
            f"{op}: {path!r} member {info.filename!r} holds Python objects (dtype "
            f"{dtype}); an .npz {what} holds numeric arrays only and is never unpickled."
        )
    nbytes = math.prod(shape) * dtype.itemsize
    if header_len + nbytes != declared:
        raise _damaged(
            op,
            path,
            f"member {info.filename!r} declares shape {shape} of {dtype} ({nbytes} bytes) "
            f"but the archive lists {declared} bytes",
            save,
            error,
        )
    return Member(info, tuple(shape), dtype, fortran)


def open_archive(
    path: str | os.PathLike,
    op: str,
    what: str = "weight file",
    save: str = "save_weights",
    hint: str = "",
    error: type = WeightFileError,
) -> Archive:
    """Open the archive ``path`` names and check its directory and headers: no data read.

    The one way archives are read. ``path`` may leave out ``.npz``; it must name a regular
    file (or a link to one): a folder, a FIFO or a device is refused before it is opened
    for reading. Stale temporaries of the archive (see :mod:`zerograd_nn.atomic`) are
    removed.

    Args:
        path: the file name given by the user.
        op: the calling function's name, for error messages.
        what: what such a file is called in error messages.
        save: the function that writes such files, named in error messages.
        hint: follows the error for a folder (how to pick a file in it).
        error: the WeightFileError subclass to raise (``CheckpointError`` for checkpoints).

    Returns:
        The open :class:`Archive`, to read and close (``with open_archive(...) as a:``).

    Raises:
        TypeError: ``path`` is not a str or os.PathLike.
        FileNotFoundError: no such file.
        WeightFileError: (``error``) ``path`` is a folder or no regular file; not an
            ``.npz`` archive; a member that is not a ``.npy`` array, holds Python objects, or
            declares a size its header or the file's size contradicts.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{op}: path must be a str or os.PathLike, got {type(path).__name__}.")
    path = os.fspath(path)
    if not os.path.lexists(path) and os.path.lexists(path + ".npz"):
        path += ".npz"
    where = (op, path, what, save, error)
    f, size = _open_regular(path, op, what, hint, error)
    try:
        remove_stale_temporaries(path)
        if f.read(6) == b"\x93NUMPY":
            raise error(
                f"{op}: {path!r} holds a single array, not an .npz archive of named arrays; "
                f"save with {save}()."
            )
        f.seek(0)
        try:
            zf = zipfile.ZipFile(f)
        except Exception as exc:  # noqa: BLE001 - zipfile's reader raises more than
            # BadZipFile on a damaged directory: NotImplementedError for a mangled version
            raise error(
                f"{op}: {path!r} is not a readable .npz {what} ({type(exc).__name__}: {exc}); "
                f"it may be truncated or of another format. Save it again with {save}()."
            ) from exc
        try:
            members: dict[str, Member] = {}
            for info in zf.infolist():
                name = info.filename[: -len(".npy")]
                if name in members:
                    raise _damaged(op, path, f"member {info.filename!r} twice", save, error)
                members[name] = _member(zf, info, size, where)
        except BaseException:
            zf.close()
            raise
    except BaseException:
        f.close()
        raise
    return Archive(path, f, zf, members, where)


def find_archive(
    path: str | os.PathLike, op: str, what: str = "weight file", hint: str = ""
) -> str:
    """The path of the archive ``path`` names, checked by :func:`open_archive`.

    Args:
        path: the file name given by the user.
        op: the calling function's name, for error messages.
        what: what the file is, for error messages.
        hint: follows the error for a folder (how to pick a file in it).

    Returns:
        The path of the file as a str (``.npz`` appended if need be).

    Raises:
        TypeError: ``path`` is not a str or os.PathLike.
        FileNotFoundError: no such file.
        WeightFileError: as :func:`open_archive`.
    """
    with open_archive(path, op, what, hint=hint) as archive:
        return archive.path


def inspect_archive(
    path: str, op: str, save: str = "save_weights", what: str = "weight file"
) -> dict[str, Member]:
    """``{name: Member}`` of the archive ``path``, from :func:`open_archive`: no data read.

    Args:
        path: the archive to inspect.
        op: the calling function's name, for error messages.
        save: the function that writes such files, named in error messages.
        what: what such a file is called in error messages.

    Returns:
        One Member (shape, dtype, ...) per array name.

    Raises:
        FileNotFoundError: no file at ``path``.
        WeightFileError: as :func:`open_archive`.
    """
    with open_archive(path, op, what, save) as archive:
        return archive.members


def read_members(
    path: str, names: list[str], op: str, save: str = "save_weights"
) -> dict[str, Any]:
    """The members ``names`` of the archive ``path`` as numpy arrays, checked first.

    Args:
        path: the archive to read.
        names: the array names to read.
        op: the calling function's name, for error messages.
        save: the function that writes such files, named in error messages.

    Returns:
        ``{name: numpy array}``.

    Raises:
        WeightFileError: as :func:`open_archive`, or a member cannot be read.
    """
    with open_archive(path, op, save=save) as archive:
        missing = [n for n in names if n not in archive.members]
        if missing:
            raise _damaged(op, archive.path, f"no members {missing}", save)
        return archive.read(names)
