"""Character-level text datasets: any local text, and DeZero's ``Shakespear``."""

from __future__ import annotations

import codecs
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from zerograd.backends import get_backend
from zerograd.checks import flag

from .base import Dataset, as_root, fetch

__all__ = ["Shakespear", "TextCharDataset"]


def _read_text(owner: str, path: str | Path, encoding: str) -> str:
    """The file's text; an error naming ``owner``, the file and what to do when unreadable."""
    if not isinstance(encoding, str):
        raise TypeError(
            f"{owner}: encoding must be a str such as 'utf-8', got {type(encoding).__name__}"
        )
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise LookupError(
            f"{owner}: unknown encoding {encoding!r}; give one Python knows ('utf-8', "
            f"'latin-1', 'cp1252', ...)."
        ) from None
    try:
        return Path(path).read_text(encoding=encoding)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{owner}: no file {str(path)!r}. Give the path of an existing text file "
            f"(path=...), or the text itself (text=...)."
        ) from None
    except IsADirectoryError:
        raise IsADirectoryError(
            f"{owner}: {str(path)!r} is a directory; give the path of a text file in it (path=...)."
        ) from None
    except OSError as exc:  # permissions, a device that cannot be read, ...
        raise type(exc)(
            f"{owner}: cannot read {str(path)!r} ({exc.strerror or exc}); give a readable "
            f"text file (path=...), or the text itself (text=...)."
        ) from None
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start : exc.start + 1]
        raise ValueError(
            f"{owner}: cannot read {str(path)!r} as {encoding} text: the byte "
            f"0x{byte.hex()} at offset {exc.start} is not valid {encoding} ({exc.reason}). Is it "
            f"a text file? If so, give its encoding (encoding='latin-1', 'cp1252', ...)."
        ) from None


class TextCharDataset(Dataset):
    """A text as a sequence of character ids; item ``i`` is ``(id[i], id[i + 1])``.

    Give the text itself (``text=``) or a file (``path=``, read as UTF-8). Ids follow the
    order in which characters first appear, as DeZero's ``Shakespear`` does. Use it with
    ``SeqDataLoader``.

    Args:
        text: the text (give this or ``path``).
        path: a text file to read (give this or ``text``).
        train: kept as ``train`` (the whole text is used either way).
        transform: applied to each input id.
        target_transform: applied to each target id.
        encoding: the file's encoding.

    Attributes:
        text: the whole text.
        char_to_id: ``character -> id``.
        id_to_char: ``id -> character``.

    Raises:
        ValueError: both or neither of ``text`` and ``path`` given, fewer than 2
            characters, or the file is not text in ``encoding``.
        FileNotFoundError: ``path`` names no file.
        IsADirectoryError: ``path`` is a directory.
        LookupError: ``encoding`` is not an encoding Python knows.
        TypeError: ``text`` or ``encoding`` is not a str, or ``train`` is not True or
            False.

    Examples:
        >>> ds = TextCharDataset(text="hello")
        >>> ds.vocab, ds.decode(ds.data), len(ds)
        (['h', 'e', 'l', 'o'], 'hell', 4)
    """

    def __init__(
        self,
        text: str | None = None,
        path: str | Path | None = None,
        train: bool = True,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
        encoding: str = "utf-8",
    ) -> None:
        if (text is None) == (path is None):
            raise ValueError("TextCharDataset: give exactly one of text=... or path=...")
        if path is not None:
            text = _read_text(type(self).__name__, path, encoding)
        if not isinstance(text, str):
            raise TypeError(f"TextCharDataset: text must be a str, got {type(text).__name__}")
        if len(text) < 2:
            raise ValueError(f"TextCharDataset: need at least 2 characters, got {len(text)}")
        self.text = text
        super().__init__(train, transform, target_transform)

    def prepare(self) -> None:
        """Number the characters and turn the text into ids."""
        self.char_to_id: dict[str, int] = {}
        for c in self.text:
            if c not in self.char_to_id:
                self.char_to_id[c] = len(self.char_to_id)
        self.id_to_char = {i: c for c, i in self.char_to_id.items()}
        xp = get_backend().xp
        indices = xp.asarray([self.char_to_id[c] for c in self.text], dtype=xp.int64)
        self.data = indices[:-1]
        self.label = indices[1:]

    @property
    def vocab(self) -> list[str]:
        """The characters, in id order."""
        return [self.id_to_char[i] for i in range(len(self.id_to_char))]

    @property
    def vocab_size(self) -> int:
        """Number of distinct characters."""
        return len(self.char_to_id)

    def encode(self, s: str) -> Any:
        """Turn text into ids.

        Args:
            s: the text.

        Returns:
            An int64 array of ids, of the default backend.

        Raises:
            KeyError: a character is not in the vocabulary (the message names it).
        """
        unknown = sorted({c for c in s if c not in self.char_to_id})
        if unknown:
            raise KeyError(f"characters not in the vocabulary: {unknown!r}")
        xp = get_backend().xp
        return xp.asarray([self.char_to_id[c] for c in s], dtype=xp.int64)

    def decode(self, ids: Sequence[int] | Any) -> str:
        """Turn ids back into text.

        Args:
            ids: an iterable of ids (an array works).

        Returns:
            The text.

        Raises:
            KeyError: an id is outside the vocabulary (the message names it).
        """
        chars = []
        for i in ids:
            c = self.id_to_char.get(int(i))
            if c is None:
                raise KeyError(
                    f"id {int(i)} is not in the vocabulary (ids 0..{self.vocab_size - 1})"
                )
            chars.append(c)
        return "".join(chars)


class Shakespear(TextCharDataset):
    """Tiny Shakespeare (DeZero's ``Shakespear``), read from ``shakespear.txt`` in ``root``.

    Args:
        train: kept as ``train`` (the whole text is used either way).
        transform: applied to each input id.
        target_transform: applied to each target id.
        root: the directory holding ``shakespear.txt`` (default:
            ``<data_home>/shakespear``).
        download: fetch the file from Karpathy's char-rnn repository when it is missing.

    Attributes:
        url: where the file is downloaded from.
        file_name: the file's name in ``root``.
        root: the directory the file is read from.

    Raises:
        FileNotFoundError: the file is missing and not downloaded (the message says where
            to put it).
        TypeError: ``root`` is not a path, or ``train`` or ``download`` is not True or
            False.
    """

    url = (
        "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
    )
    file_name = "shakespear.txt"

    def __init__(
        self,
        train: bool = True,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
        root: str | Path | None = None,
        download: bool = False,
    ) -> None:
        for name, value in (("train", train), ("download", download)):
            flag("Shakespear", name, value)  # before anything is fetched
        self.root = as_root("Shakespear", root, "shakespear")
        paths = fetch("Shakespear", self.root, {self.file_name: (self.url, None)}, download)
        super().__init__(
            path=paths[self.file_name],
            train=train,
            transform=transform,
            target_transform=target_transform,
        )
