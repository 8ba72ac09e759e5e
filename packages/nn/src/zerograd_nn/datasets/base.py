"""``Dataset`` and the local file cache that dataset loaders read from.

Files live in a cache directory: ``$ZEROGRAD_DATA`` if set, else ``~/.zerograd/datasets``,
one sub-directory per dataset (``root=`` overrides it). Nothing is downloaded unless a
loader is given ``download=True``, or ``get_file(url)`` is asked for a file; missing files
raise ``FileNotFoundError`` naming each file, where to get it and the directory to put it in.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from zerograd.checks import callable_arg, flag

from ..transforms import refuse_transform_class

__all__ = [
    "DOWNLOADS",
    "Dataset",
    "data_home",
    "fetch",
    "get_file",
    "verify_checksum",
]


def host_numpy() -> ModuleType:
    """Return numpy, imported on first use: data sets parse and generate data with it.

    zerograd-nn imports without numpy (it depends on zerograd only); what reads files or
    draws toy data on the host needs it, as every backend's ``from_numpy`` does.

    Returns:
        The numpy module.

    Raises:
        ModuleNotFoundError: numpy is not installed (the message says how to install it).
    """
    try:
        import numpy
    except ImportError:
        raise ModuleNotFoundError(
            "zerograd-nn's data sets read their files and make their data with numpy on the "
            "host, and numpy is not installed: pip install numpy (the numpy backend brings "
            "it: pip install zerograd-numpy, or ./packages/backend-numpy from a checkout).",
            name="numpy",
        ) from None
    return numpy


def _identity(x: Any) -> Any:
    return x


class Dataset:
    """A sized, indexable collection of ``(x, t)`` examples (DeZero's ``Dataset``).

    Subclasses fill ``self.data`` and ``self.label`` (``None`` when unlabelled) in
    ``prepare``. Indexing with one integer gives ``(transform(x), target_transform(t))``
    (``(x, None)`` when unlabelled); batches come from a DataLoader.

    Args:
        train: the training split (True) or the test split.
        transform: applied to each ``x`` (None: unchanged).
        target_transform: applied to each ``t`` (None: unchanged).

    Attributes:
        train: the split chosen.
        transform: applied to each ``x`` (the identity when None was given). Assigning it
            later is checked the same way: None means no transform.
        target_transform: applied to each ``t`` (the identity when None was given), assigned
            as ``transform`` is.
        data: the items, as ``prepare`` left them.
        label: the labels, or None.

    Raises:
        TypeError: ``train`` is not True or False, or a transform is neither callable nor
            None, or is a class of ``zerograd_nn.transforms`` (``Flatten`` for
            ``Flatten()``).
        ValueError: ``prepare`` gave a different number of items and labels.

    Examples:
        >>> import numpy as np
        >>> class Squares(Dataset):
        ...     def prepare(self):
        ...         self.data = np.arange(4)
        ...         self.label = self.data ** 2
        >>> Squares()[3]
        (np.int64(3), np.int64(9))
    """

    def __init__(
        self,
        train: bool = True,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
    ) -> None:
        flag(type(self).__name__, "train", train)
        for name, f in (("transform", transform), ("target_transform", target_transform)):
            self._transform_arg(name, f)  # both checked before either is set
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        self.data: Any = None
        self.label: Any = None
        self.prepare()
        data, label = self.data, self.label
        if hasattr(data, "__len__") and hasattr(label, "__len__") and len(data) != len(label):
            raise ValueError(
                f"{type(self).__name__}: {len(data)} data items but {len(label)} labels; "
                f"prepare() must give one label per item."
            )

    def _transform_arg(self, name: str, f: Any) -> Any:
        callable_arg(type(self).__name__, name, f, optional=True, hint="a transforms.Compose")
        refuse_transform_class(type(self).__name__, name, f)
        return _identity if f is None else f

    # properties, so that ``ds.transform = None`` later means no transform, as it does in
    # the constructor (the items read the plain attributes behind them)
    @property
    def transform(self) -> Callable[[Any], Any]:
        """Applied to each ``x``; None assigned means none (the identity)."""
        return self._transform

    @transform.setter
    def transform(self, f: Callable[[Any], Any] | None) -> None:
        self._transform = self._transform_arg("transform", f)

    @property
    def target_transform(self) -> Callable[[Any], Any]:
        """Applied to each ``t``; None assigned means none (the identity)."""
        return self._target_transform

    @target_transform.setter
    def target_transform(self, f: Callable[[Any], Any] | None) -> None:
        self._target_transform = self._transform_arg("target_transform", f)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        if not isinstance(index, int) and getattr(index, "ndim", 1) != 0:
            raise TypeError(
                f"{type(self).__name__}[index]: index must be one integer, got "
                f"{type(index).__name__}; use a DataLoader for batches."
            )
        x = self._transform(self.data[index])
        if self.label is None:
            return x, None
        return x, self._target_transform(self.label[index])

    def as_stored(self) -> bool:
        """Whether ``self[i]`` is ``(data[i], label[i])`` as stored.

        So it is with no transform and ``__getitem__`` not overridden: a loader may then
        index the arrays with a whole batch at once.

        Returns:
            True when a batch can be taken from ``data`` and ``label`` directly.
        """
        return (
            type(self).__getitem__ is Dataset.__getitem__
            and self._transform is _identity
            and self._target_transform is _identity
        )

    def __len__(self) -> int:
        return len(self.data)

    def prepare(self) -> None:
        """Load or generate ``self.data`` and ``self.label`` (called by the constructor)."""


# -- the file cache -----------------------------------------------------------------------


def data_home(name: str | None = None) -> Path:
    """Return the dataset cache directory (``$ZEROGRAD_DATA`` or ``~/.zerograd/datasets``).

    Args:
        name: a dataset's sub-directory; None for the cache directory itself.

    Returns:
        The directory's path (not created).
    """
    base = os.environ.get("ZEROGRAD_DATA") or Path.home() / ".zerograd" / "datasets"
    base = Path(base).expanduser()
    return base / name if name else base


def as_root(owner: str, root: Any, default: str) -> Path:
    """Return a loader's ``root=`` argument as a directory path.

    Args:
        owner: the dataset's name, for the error message.
        root: a directory path, or None.
        default: the sub-directory of ``data_home()`` used when ``root`` is None.

    Returns:
        The directory's path, ``~`` expanded.

    Raises:
        TypeError: ``root`` is neither a path nor None.
    """
    if root is None:
        return data_home(default)
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"{owner}: root must be a directory path or None, got {root!r}")
    return Path(root).expanduser()


def in_the_way(path: str | os.PathLike) -> str | None:
    """Say what stands where a data file should be when it is no file (a folder, a broken link).

    A file missing from the user's view is then told apart from a name taken by something
    else, which the error asks them to remove.

    Args:
        path: where the file should be.

    Returns:
        ``"a folder"``, ``"a symbolic link that leads nowhere"``, ``"a symbolic link in a
        loop"`` or ``"not a regular file"``; None when nothing is there or the file is.
    """
    if os.path.isfile(path) or not os.path.lexists(path):
        return None
    if os.path.islink(path):
        try:
            os.stat(path)
        except FileNotFoundError:
            return "a symbolic link that leads nowhere"
        except OSError:
            return "a symbolic link in a loop"
    if os.path.isdir(path):
        return "a folder"
    return "not a regular file"


def unreadable(owner: str, path: str | os.PathLike, exc: OSError) -> OSError:
    """The error for a data file that is there but cannot be read, saying what to do.

    Args:
        owner: the data set (or function) reading it, for the message.
        path: the file.
        exc: what reading it raised (no permission, a folder, a device that fails).

    Returns:
        An error of ``exc``'s type and errno (raise it ``from None``).
    """
    if isinstance(exc, PermissionError):
        advice = "make it readable (chmod u+r) or place a readable copy there"
    elif isinstance(exc, IsADirectoryError):
        advice = "it is a folder: put the file itself there"
    else:
        advice = "delete it and place a good copy there"
    return type(exc)(
        exc.errno, f"{owner}: cannot read {os.fspath(path)} ({exc.strerror or exc}); {advice}."
    )


def verify_checksum(path: Path, checksum: str | None, owner: str = "verify_checksum") -> None:
    """Check a file's contents against a checksum.

    Args:
        path: the file.
        checksum: ``'sha256:<hex>'`` or ``'md5:<hex>'``; None or empty checks nothing.
        owner: the data set (or function) checking it, named when it cannot be read.

    Raises:
        ValueError: the checksum is malformed, or the file's differs (the message says
            to replace the file).
        OSError: the file cannot be read (no permission: ``PermissionError``); the message
            says what to do.
    """
    if not checksum:
        return
    algo, _, expected = checksum.partition(":")
    if algo not in ("sha256", "md5") or not expected:
        raise ValueError(f"checksum must look like 'sha256:<hex>' or 'md5:<hex>', got {checksum!r}")
    h = hashlib.new(algo)
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError as exc:
        raise unreadable(owner, path, exc) from None
    if h.hexdigest() != expected.lower():
        raise ValueError(
            f"{path}: {algo} checksum {h.hexdigest()} differs from the expected {expected}. "
            f"The file is corrupt or not the right one: delete it and place a good copy there."
        )


def _make_folders(folder: Path, made: list[Path]) -> None:
    """Create ``folder`` and its missing parents, appending each one created to ``made``.

    One level at a time, so that ``made`` holds exactly the folders this call created (a
    folder another process creates meanwhile is not counted), outermost first, even when a
    deeper ``mkdir`` fails.
    """
    absent = []
    while not folder.is_dir() and folder.parent != folder:
        absent.append(folder)
        folder = folder.parent
    for f in reversed(absent):
        try:
            f.mkdir()
        except FileExistsError:
            if not f.is_dir():
                raise
        else:
            made.append(f)


def _remove_empty(made: list[Path]) -> None:
    """Remove the folders in ``made`` that are empty, innermost first (best effort)."""
    for f in reversed(made):
        try:
            f.rmdir()
        except OSError:  # not empty (a file downloaded before the failure), or gone
            pass


def _failure_reason(exc: OSError) -> object:
    """Say what went wrong in a download, for its error message.

    An HTTP error gives its status with its reason (``HTTP Error 404: Not Found``; its
    ``reason`` alone is the bare ``Not Found``); anything else, urllib's reason.
    """
    if isinstance(exc, urllib.error.HTTPError):
        return exc
    return getattr(exc, "reason", None) or exc


def _download(url: str, path: Path, checksum: str | None) -> None:
    """Fetch ``url`` into ``path`` atomically (a temporary file renamed once complete).

    ``path``'s folder must exist. A connection that closes before the end is a
    ``ContentTooShortError`` (an OSError): urllib itself returns what arrived when fewer
    bytes come than the server announced.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        size = 0
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url) as response:
            announced = response.headers.get("Content-Length", "")
            try:
                for block in iter(lambda: response.read(1 << 20), b""):
                    out.write(block)
                    size += len(block)
            except http.client.IncompleteRead as exc:  # a chunked transfer cut off
                size += len(exc.partial)
                cut = f"the connection closed after {size} bytes, before the end"
                raise urllib.error.ContentTooShortError(cut, None) from None
        if announced.isdigit() and size < int(announced):
            cut = f"the connection closed after {size} of {announced} bytes"
            raise urllib.error.ContentTooShortError(cut, None)
        verify_checksum(Path(tmp), checksum)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def fetch(
    dataset: str,
    root: Path,
    files: dict[str, tuple[str | None, str | None]],
    download: bool = False,
) -> dict[str, Path]:
    """Find a dataset's files under ``root``, downloading missing ones only if asked.

    A download that fails removes what the call created: its temporary file, and the
    folders it made for ``root`` once they are empty (a folder that was there stays).
    Files that came down complete before the failure are kept, and the error lists only
    the ones still missing.

    Args:
        dataset: the dataset's name, for error messages.
        root: the directory the files are in.
        files: ``file name -> (url or None, checksum or None)``.
        download: download missing files whose URL is known (atomically, checked).

    Returns:
        ``file name -> path``, every file present and its checksum verified.

    Raises:
        TypeError: ``download`` is not True or False.
        FileNotFoundError: files are missing and not downloaded (or the download failed:
            the message gives the reason, an HTTP error's status included, as in
            ``HTTP Error 404: Not Found``); the message lists every missing file with its
            URL and the directory to put it in.
        ValueError: a file's checksum differs.
        OSError: a file is there but cannot be read (``PermissionError``).
    """
    flag(dataset, "download", download)
    root = Path(root).expanduser()
    paths = {name: root / name for name in files}
    missing = [name for name, p in paths.items() if not p.is_file()]
    if missing and download and all(files[n][0] for n in missing):
        made: list[Path] = []  # the folders this call creates: a failure removes them
        try:
            for name in list(missing):
                url, checksum = files[name]
                try:
                    _make_folders(paths[name].parent, made)
                    _download(url, paths[name], checksum)
                except OSError as exc:  # offline, HTTP error, timeout, unwritable directory
                    lines = "\n".join(f"  {n}   (from {files[n][0]})" for n in missing)
                    raise FileNotFoundError(
                        f"{dataset}: could not download {name} from {url} "
                        f"({_failure_reason(exc)}). Download these files elsewhere and place "
                        f"them in {root}:\n{lines}\n(or pass root=<dir>, or set ZEROGRAD_DATA "
                        f"to the parent directory)."
                    ) from None
                missing.remove(name)
        except BaseException:
            _remove_empty(made)
            raise
    if missing:
        lines = "\n".join(
            f"  {name}"
            + (f"   (from {files[name][0]})" if files[name][0] else "")
            + (f"; {paths[name]} is {what}, not the file; remove it" if what else "")
            for name in missing
            for what in [in_the_way(paths[name])]
        )
        how = "pass download=True to fetch them, or " if all(files[n][0] for n in missing) else ""
        raise FileNotFoundError(
            f"{dataset}: missing data files in {root}:\n{lines}\n"
            f"To use {dataset}, {how}place these files in {root} (or pass root=<dir>, or set "
            f"ZEROGRAD_DATA to the parent directory)."
        )
    for name, p in paths.items():
        verify_checksum(p, files[name][1], dataset)
    return paths


DOWNLOADS = "downloads"
"""The sub-folder of :func:`data_home` where :func:`get_file` keeps the files it fetches."""


def get_file(url: str, file_name: str | None = None, *, root: Any = None) -> str:
    """Return the local path of the file at ``url``, downloading it the first time.

    DeZero's ``dezero.utils.get_file``, which the book calls for pictures (step 58) and
    its data sets. The file is kept in ``data_home("downloads")`` (DeZero's went to
    ``~/.dezero``): a file already there is returned as it is, without a download. A
    download goes to a temporary file renamed once complete, so one that fails leaves
    nothing behind: neither a part of the file nor a folder the call created. Calling it
    is asking for the download: the data sets download only with ``download=True``.

    Args:
        url: the file's URL (``https://``, ``http://``, ``ftp://`` or ``file://``).
        file_name: the name to keep it under; None takes the last part of the URL's path.
        root: the folder to keep it in, instead of ``data_home("downloads")``.

    Returns:
        The file's path, as a string.

    Raises:
        TypeError: ``url`` or ``file_name`` is not a string, or ``root`` is not a path.
        ValueError: ``url`` has no scheme, ``file_name`` names a folder, or no name can be
            taken from the URL.
        FileNotFoundError: the download failed (the message gives the URL and the folder
            to put the file in by hand).

    Examples:
        >>> import os, pathlib, tempfile
        >>> src = pathlib.Path(tempfile.mkdtemp(), "hello.txt")
        >>> _ = src.write_text("hi")
        >>> path = get_file(src.as_uri(), root=tempfile.mkdtemp())
        >>> os.path.basename(path), open(path).read()
        ('hello.txt', 'hi')
    """
    if not isinstance(url, str):
        raise TypeError(f"get_file: url must be a string, got {url!r}")
    parts = urllib.parse.urlsplit(url)
    if not parts.scheme:
        raise ValueError(
            f"get_file: {url!r} is not a URL (no scheme such as https://); a file already on "
            f"this machine needs no get_file: use its path."
        )
    if file_name is None:
        file_name = urllib.parse.unquote(parts.path.rpartition("/")[2])
        if not file_name:
            raise ValueError(
                f"get_file: {url!r} ends without a file name; pass one: "
                f"get_file(url, file_name='name.ext')."
            )
    elif not isinstance(file_name, str):
        raise TypeError(f"get_file: file_name must be a string or None, got {file_name!r}")
    if file_name in ("", ".", "..") or any(s and s in file_name for s in (os.sep, os.altsep)):
        raise ValueError(
            f"get_file: file_name must be a plain file name, without a folder, got "
            f"{file_name!r}; pass root= to choose the folder."
        )
    folder = as_root("get_file", root, DOWNLOADS)
    return str(fetch("get_file", folder, {file_name: (url, None)}, download=True)[file_name])
