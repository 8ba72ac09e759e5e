"""Files written atomically: whole or not at all, never half-written.

A file is written to a hidden temporary in the target's folder
(``.<name>.<host>.<pid>.<random>.tmp``), flushed to disk, then renamed over the target, so
a crash never leaves a half-written file. A name too long for that (file names are at most
255 bytes on most file systems) gives a temporary named by the name's start and a hash
of it (``.<start>~<hash>.<host>.<pid>.<random>.tmp``), so every valid name can be written.
Temporaries left by a process of this host that died mid-write are removed by the next
write or read in that folder (another host's are never touched: on a shared filesystem
its process ids mean nothing here). The file gets the permissions a plain ``open()`` would
give it: the old file's mode when it replaces one, else ``0o666`` less the umask.

A path that is a symbolic link is written as ``open()`` writes it: the file the link
points at is replaced (atomically, in that file's folder) and the link stays a link. A
path that is a folder is refused before anything is written.

Weight files (:mod:`zerograd_nn.weights`) and checkpoints (:mod:`zerograd_nn.checkpoint`)
are written this way, through :mod:`zerograd_nn.archives`, and so are the files that
``LogReport`` rewrites and ``PlotReport`` draws.

Examples:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> path = write_atomically(os.path.join(folder, "a.bin"), lambda f: f.write(b"ok"), "demo")
    >>> open(path, "rb").read()
    b'ok'
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import socket
import stat
import tempfile
from collections.abc import Callable
from typing import IO, Any

__all__ = ["checked_path", "file_kind", "remove_stale_temporaries", "write_atomically"]


# the longest tail a temporary's name adds to its stem: "." before it, then
# ".<host: 64>.<pid: 10 digits>.<random: 8>.tmp"
_TAIL = 1 + 1 + 64 + 1 + 10 + 1 + 8 + 4


def _name_max(directory: str) -> int:
    """The longest file name, in bytes, the file system of ``directory`` takes."""
    try:
        return int(os.pathconf(directory, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):  # no pathconf (Windows), or no answer
        return 255


def _stem(base: str, directory: str) -> str:
    """The start of the names of ``base``'s temporaries.

    ``base`` itself when the name fits, else its start and a hash of the whole (so that
    two long names never share temporaries).
    """
    room = _name_max(directory) - _TAIL
    if len(os.fsencode(base)) <= room:
        return base
    digest = hashlib.sha256(os.fsencode(base)).hexdigest()[:8]
    start = base
    while start and len(os.fsencode(start)) > room - 9:
        start = start[:-1]
    return f"{start}~{digest}"


def _temp_pattern(stem: str) -> re.Pattern:
    return re.compile(r"\." + re.escape(stem) + r"\.([A-Za-z0-9-]+)\.(\d+)\.[A-Za-z0-9_]+\.tmp\Z")


def _host() -> str:
    """This host's name as it appears in temporaries' names (letters, digits and ``-``)."""
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:64] or "host"


def _new_file_mode(path: str) -> int:
    """The mode ``open(path, "w")`` would leave: the replaced file's, or 0o666 less umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        pass
    try:
        with open("/proc/self/status") as f:  # reads the umask without changing it (Linux)
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return _probed_mode(path)


def _probed_mode(path: str) -> int:
    """The mode a new file gets beside ``path``: one made with 0o666 shows the umask applied.

    Where the umask cannot be read from ``/proc``: reading it means setting it, for the
    whole process, so that a file another thread made meanwhile would get the wrong mode.
    The probe is named as a temporary of ``path`` (a crash leaves it to be cleaned up).
    """
    directory, base = os.path.split(path)
    prefix = f".{_stem(base, directory)}.{_host()}.{os.getpid()}."
    for _ in range(100):
        probe = os.path.join(directory, f"{prefix}{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        except OSError:  # the folder takes no files: the write fails next, saying so
            break
        try:
            return stat.S_IMODE(os.fstat(fd).st_mode)
        finally:
            os.close(fd)
            os.unlink(probe)
    return 0o644


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists but is not ours (EPERM), or the platform cannot tell
        return True
    return True


def remove_stale_temporaries(path: str) -> list[str]:
    """Delete the hidden temporaries of ``path`` left by this host's processes that died.

    Temporaries named for another host are kept: its process ids cannot be checked here.

    Args:
        path: the archive whose temporaries to look for.

    Returns:
        The paths removed (best effort: files that cannot be removed are left).
    """
    directory, base = os.path.split(os.path.realpath(path))  # a link's: its target's
    pattern = _temp_pattern(_stem(base, directory))
    host = _host()
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        m = pattern.match(name)
        if m and m.group(1) == host and not _alive(int(m.group(2))):
            try:
                os.unlink(os.path.join(directory, name))
                removed.append(os.path.join(directory, name))
            except OSError:
                pass
    return removed


_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` that is neither a regular file nor a folder is."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def checked_path(path: str, op: str) -> str:
    """``path``, refused if no file can have it: it holds a NUL byte.

    The operating system takes no such name, and Python's own error ("embedded null
    byte") would name neither the operation nor the path.

    Raises:
        ValueError: ``path`` holds a NUL byte.
    """
    if "\x00" in path:
        raise ValueError(
            f"{op}: the path {path!r} holds a NUL byte ('\\x00'), which no file name can "
            f"hold; remove it. Nothing was read or written."
        )
    return path


def _target(path: str, op: str, example: str) -> str:
    """The file a write to ``path`` replaces: ``path``, or the file a symbolic link names.

    Raises:
        OSError: ``path`` is a link that cannot be followed (a loop).
        IsADirectoryError: ``path`` is a folder.
        FileExistsError: ``path`` is (or links to) a FIFO, a device or a socket: the
            rename would replace it by a regular file.
    """
    target = path
    if os.path.islink(path):
        try:
            os.stat(path)
        except FileNotFoundError:  # a dangling link: the file it names is created
            pass
        except OSError as exc:  # a loop of links
            raise type(exc)(
                exc.errno,
                f"{op}: {path!r} is a symbolic link that cannot be followed "
                f"({exc.strerror or exc}); remove it or point it at a file. Nothing was written",
            ) from None
        target = os.path.realpath(path)
    if os.path.isdir(target):
        raise IsADirectoryError(
            errno.EISDIR,
            f"{op}: {path!r} is a folder, not a file; give the name of a file in it "
            f"(such as {os.path.join(path, example)!r}). Nothing was written",
        )
    try:
        mode = os.stat(target).st_mode
    except OSError:  # not there yet: it is created
        return target
    if not stat.S_ISREG(mode):
        shown = repr(path) + (f" (a link to {target!r})" if target != path else "")
        raise FileExistsError(
            errno.EEXIST,
            f"{op}: {shown} is {file_kind(mode)}, not a regular file; a save replaces only "
            f"regular files, and would put a file in its place. Give another path. Nothing "
            f"was written",
        )
    return target


def write_atomically(
    path: str, write: Callable[[IO[bytes]], Any], op: str, example: str = "model.npz"
) -> str:
    """Create or replace the file ``path`` with what ``write`` writes, atomically.

    Args:
        path: the file to write (a symbolic link: the file it points at).
        write: called once with the temporary file, open for binary writing.
        op: the calling function's name, for error messages.
        example: a name of the kind of file written, for the error when ``path`` is a
            folder.

    Returns:
        ``path``.

    Raises:
        ValueError: ``path`` is empty or holds a NUL byte.
        FileNotFoundError: the folder of ``path`` does not exist.
        IsADirectoryError: ``path`` is a folder.
        FileExistsError: ``path`` is a FIFO, a device or a socket (or a link to one).
        OSError: the folder does not take new files (read-only, full), or the name is
            longer than its file system allows; nothing written.
        Exception: whatever ``write`` raises; the target is then as it was and the
            temporary is gone.
    """
    if not path:  # abspath("") is the working folder: the rename would fail naming ''
        raise ValueError(f"{op}: the path is empty; give a file name. Nothing was written.")
    directory = os.path.dirname(os.path.abspath(checked_path(path, op)))
    if not os.path.isdir(directory):
        raise FileNotFoundError(
            f"{op}: the directory {os.path.dirname(path) or directory!r} of {path!r} does not "
            f"exist; create it first (os.makedirs)."
        )
    target = _target(path, op, example)
    directory, base = os.path.split(os.path.abspath(target))  # "model.npz": the working folder
    if not os.path.isdir(directory):  # a link to a file in a folder that is not there
        raise FileNotFoundError(
            f"{op}: {path!r} is a link to {target!r}, whose directory does not exist; create "
            f"it first (os.makedirs) or point the link elsewhere."
        )
    size, most = len(os.fsencode(base)), _name_max(directory)
    if size > most:
        raise OSError(
            errno.ENAMETOOLONG,
            f"{op}: cannot write {path!r}: its name is {size} bytes long and the file system "
            f"of {directory!r} takes names of up to {most}; choose a shorter name. Nothing "
            f"was written",
        )
    remove_stale_temporaries(target)
    mode = _new_file_mode(target)
    prefix = f".{_stem(base, directory)}.{_host()}.{os.getpid()}."
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
    except OSError as exc:  # a read-only folder or file system, a full disk, a quota
        raise type(exc)(
            exc.errno,
            f"{op}: cannot write {path!r}: the folder {directory!r} does not take new files "
            f"({exc.strerror or exc}); choose a folder you can write to. Nothing was written",
        ) from None
    try:
        with os.fdopen(fd, "wb") as f:
            if hasattr(os, "fchmod"):  # mkstemp made it 0o600
                os.fchmod(f.fileno(), mode)
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
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
