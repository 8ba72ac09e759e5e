"""Output paths for every drawing function: checked first, written in one step."""

from __future__ import annotations

import errno
import os
import secrets
from typing import Any


def check_path(op: str, to_file: Any) -> str:
    """Return ``to_file`` as a ``str`` path.

    Args:
        op: the calling function's name, used in the error message.
        to_file: a ``str``, ``bytes`` or ``os.PathLike`` path.

    Returns:
        The path as a ``str``.

    Raises:
        TypeError: ``to_file`` is not a path.
    """
    try:
        path = os.fspath(to_file)
    except TypeError:
        raise TypeError(
            f"{op}: to_file must be a file path (str or pathlib.Path), got "
            f"{type(to_file).__qualname__} ({to_file!r})"
        ) from None
    return os.fsdecode(path)


def writable_folder(op: str, path: str) -> str:
    """Return the existing folder that ``path`` goes into.

    Args:
        op: the calling function's name, used in error messages.
        path: the file that is about to be written.

    Returns:
        The absolute path of ``path``'s folder.

    Raises:
        IsADirectoryError: ``path`` is itself a folder.
        FileNotFoundError: ``path``'s folder does not exist.
        PermissionError: ``path`` is an existing file that is read-only (no write
            permission bit set) or that this process may not write.
    """
    if os.path.isdir(path):
        raise IsADirectoryError(
            f"{op}: to_file={path!r} is a folder; give a file name, e.g. "
            f"{os.path.join(path, 'graph.png')!r}"
        )
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = None  # a new file
    # replace_file's rename never asks the old file's permissions: ask them here
    if mode is not None and (not mode & 0o222 or not os.access(path, os.W_OK)):
        raise PermissionError(
            errno.EACCES,
            f"{op}: to_file={path!r} is read-only, so it was left as it is; make it writable "
            f"(chmod u+w) or give another file name",
        )
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(
            f"{op}: the folder of to_file={path!r} does not exist ({folder}); create it first"
        )
    return folder


def replace_file(op: str, path: str, folder: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in ``folder`` and one rename.

    After any failure the old ``path`` is as it was and no temporary is left; the file
    keeps the old one's permissions (or gets the usual ones for a new file).

    Args:
        op: the calling function's name, used in error messages.
        path: the file to write.
        folder: ``path``'s folder (from ``writable_folder``).
        data: the file's new contents.

    Raises:
        OSError: the temporary cannot be created or written, or the rename fails; the
            message names ``op`` and ``path``.
    """
    try:
        mode: int | None = os.stat(path).st_mode & 0o777
    except OSError:
        mode = None  # a new file: the system applies the umask (see _temporary)
    try:
        fd, tmp = _temporary(folder)
    except OSError as e:
        raise type(e)(e.errno, f"{op}: cannot write to_file={path!r}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise type(e)(e.errno, f"{op}: cannot write to_file={path!r}: {e.strerror}") from None
        raise


def _temporary(folder: str) -> tuple[int, str]:
    """A new hidden file in ``folder``, open for writing: ``(descriptor, path)``.

    Made with mode 0o666, which the system reduces by the umask as for any new file: the
    mode ``open(path, "w")`` gives. (Reading the umask means setting it, for the whole
    process: a file another thread made meanwhile would get the wrong mode.)
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(folder, f".{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", folder)
