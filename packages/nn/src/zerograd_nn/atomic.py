"""Files written atomically: whole or not at all, never half-written.

A file is written to a hidden temporary in the target's folder
(``.<name>.<host>.<pid>.<random>.tmp``), flushed to disk, then renamed over the target, so
a crash never leaves a half-written file. Temporaries left by a process of this host that
died mid-write are removed by the next write or read in that folder (another host's are
never touched: on a shared filesystem its process ids mean nothing here). The file gets the
permissions a plain ``open()`` would give it: the old file's mode when it replaces one, else
``0o666`` less the umask.

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

import os
import re
import socket
import stat
import tempfile
from collections.abc import Callable
from typing import IO, Any

__all__ = ["remove_stale_temporaries", "write_atomically"]


def _temp_pattern(base: str) -> re.Pattern:
    return re.compile(r"\." + re.escape(base) + r"\.([A-Za-z0-9-]+)\.(\d+)\.[A-Za-z0-9_]+\.tmp\Z")


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
    mask = os.umask(0o022)  # elsewhere: read it by setting it, and put it straight back
    os.umask(mask)
    return 0o666 & ~mask


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
    directory, base = os.path.split(os.path.abspath(path))
    pattern = _temp_pattern(base)
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


def write_atomically(path: str, write: Callable[[IO[bytes]], Any], op: str) -> str:
    """Create or replace the file ``path`` with what ``write`` writes, atomically.

    Args:
        path: the file to write.
        write: called once with the temporary file, open for binary writing.
        op: the calling function's name, for error messages.

    Returns:
        ``path``.

    Raises:
        FileNotFoundError: the folder of ``path`` does not exist.
        OSError: the folder does not take new files (read-only, full); nothing written.
        Exception: whatever ``write`` raises; the target is then as it was and the
            temporary is gone.
    """
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(
            f"{op}: the directory {os.path.dirname(path) or directory!r} of {path!r} does not "
            f"exist; create it first (os.makedirs)."
        )
    remove_stale_temporaries(path)
    base = os.path.basename(path)
    mode = _new_file_mode(path)
    prefix = f".{base}.{_host()}.{os.getpid()}."
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
