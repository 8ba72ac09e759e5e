"""Weight files: a layer's parameters as ordered, named arrays in an ``.npz`` archive.

* names are hierarchical, as in DeZero: ``'l1/W'``, ``'res2/a/conv1/W'``;
* no pickle: only plain numeric arrays are written, and object arrays are refused;
* saving is atomic: the archive is written to a hidden temporary file in the target's
  directory (``.<name>.<host>.<pid>.<random>.tmp``), flushed to disk, then renamed over
  the target, so a crash never leaves a half-written file; temporaries left by a process
  of this host that died mid-save are removed by the next save or load in that directory
  (another host's are never touched: on a shared filesystem its process ids mean nothing
  here);
* the file gets the permissions a plain ``open()`` would give it: the old file's mode
  when it replaces one, else ``0o666`` less the umask;
* reading is checked before it happens: member names, dtypes and shapes come from the
  archive's directory and each ``.npy`` header, and must agree with the sizes the directory
  declares, so a crafted member cannot make a load read gigabytes before it is refused;
* loading is all-or-nothing: the file is checked against the model (names, shapes), read
  whole, and only then does any parameter change.

The ``.npz`` format is numpy's, so reading and writing use numpy through the numpy backend.
Checkpoints (:mod:`zerograd_nn.checkpoint`) use the same archive functions.
"""

from __future__ import annotations

import math
import os
import re
import socket
import stat
import tempfile
import zipfile
from collections.abc import Mapping
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
    """``{'l1/W': Parameter, ...}`` for ``layer``, in definition order.

    Args:
        layer: a Layer or Model.

    Returns:
        The weight-file names mapped to their Parameters.
    """
    params: dict[str, Any] = {}
    layer._flatten_params(params)
    return params


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
    np = _numpy()
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
        FileNotFoundError: the directory does not exist.
    """
    path = npz_path(path, "save_weights")
    params = named_params(layer)
    empty = [k for k, p in params.items() if p.data is None]
    if empty:
        raise WeightFileError(
            f"save_weights: parameters {empty} have no data yet (lazily sized layers that have "
            f"not seen an input); run one forward pass first, or pass in_size/in_channels."
        )
    arrays = {k: as_numpy(p.data) for k, p in params.items()}
    return write_archive(path, arrays, "save_weights")


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
    np = _numpy()
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
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
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
    np = _numpy()
    out = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for name in names:
                with zf.open(name + ".npy") as f:
                    out[name] = np.lib.format.read_array(f, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001
        raise _damaged(op, path, f"{type(exc).__name__}: {exc}", save) from exc
    return out


def _find(path: str | os.PathLike, op: str, what: str = "weight file", hint: str = "") -> str:
    """The existing file ``path`` names (``.npz`` appended if need be), else a clear error.

    ``hint`` follows the error for a folder (how to pick a file in it).
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
    path = _find(path, "load_weights")
    members = inspect_archive(path, "load_weights")
    return read_members(path, list(members), "load_weights")


def check_fit(
    params: Mapping[str, Any], shapes: Mapping[str, tuple], kinds: Mapping[str, str]
) -> list[str]:
    """The differences between a model's ``params`` and an archive's names/shapes/kinds.

    Args:
        params: ``{name: Parameter}`` of the model.
        shapes: ``{name: shape}`` of the archive.
        kinds: ``{name: dtype kind}`` of the archive.

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
    bad = [f"{k}: dtype kind {c!r}" for k, c in kinds.items() if c not in "fiub"]
    parts = []
    if missing:
        parts.append(f"missing in the file: {missing}")
    if unexpected:
        parts.append(f"not in the model: {unexpected}")
    if diffs:
        parts.append("shape differences: " + "; ".join(diffs))
    if bad:
        parts.append("non-numeric arrays: " + "; ".join(bad))
    return parts


def converted(params: Mapping[str, Any], arrays: Mapping[str, Any]) -> dict[str, Any]:
    """``arrays`` moved to each parameter's backend and dtype (unsized ones: the model's).

    Args:
        params: ``{name: Parameter}`` of the model.
        arrays: ``{name: numpy array}`` read from a file.

    Returns:
        ``{name: backend array}`` ready to assign.
    """
    default = next(
        (backend_of(p.data) for p in params.values() if p.data is not None), get_backend()
    )
    new = {}
    for k, p in params.items():
        a = arrays[k]
        if p.data is not None:
            b = backend_of(p.data)
            x = as_array_of(a, b)
            new[k] = x if x.dtype == p.data.dtype else b.astype(x, p.data.dtype)
        else:
            new[k] = as_array_of(a, default)
    return new


def load_weights(layer: Any, path: str | os.PathLike) -> None:
    """Set ``layer``'s parameters from a file written by :func:`save_weights`.

    Names and shapes must match exactly; otherwise :class:`WeightFileError` lists the
    missing and unexpected names and the shape differences, and nothing is changed. They
    are checked from the archive's headers before any array is read. Arrays go to the
    backend of the parameter they replace and keep its dtype (a parameter with no data yet
    takes the file's dtype, on the model's backend).

    Args:
        layer: a Layer or Model.
        path: the weight file.

    Raises:
        WeightFileError: the file does not fit ``layer`` or cannot be read.
        FileNotFoundError: no file at ``path``.
    """
    path = _find(path, "load_weights")
    members = inspect_archive(path, "load_weights")
    params = named_params(layer)
    kinds = {k: m.dtype.kind for k, m in members.items()}
    parts = check_fit(params, {k: m.shape for k, m in members.items()}, kinds)
    if parts:
        raise WeightFileError(
            f"load_weights: {path!r} does not fit {type(layer).__name__} "
            f"({'; '.join(parts)}). The model was not changed."
        )
    new = converted(params, read_members(path, list(members), "load_weights"))
    for k, p in params.items():  # nothing below can fail: the model changes all at once
        p.data = new[k]
