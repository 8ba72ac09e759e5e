"""Progress output shared by the examples: a tqdm bar on a terminal, plain lines otherwise."""

from __future__ import annotations

from collections.abc import Iterable


def progress(iterable: Iterable, enabled: bool, desc: str) -> Iterable:
    """``tqdm(iterable)`` when tqdm is installed and wanted, else the iterable itself."""
    if enabled:
        try:
            from tqdm.auto import tqdm

            return tqdm(iterable, desc=desc, leave=False, disable=None)
        except ImportError:
            pass
    return iterable


def say(text: str) -> None:
    """Print a line without breaking a running progress bar."""
    try:
        from tqdm.auto import tqdm

        tqdm.write(text)
    except ImportError:
        print(text)
