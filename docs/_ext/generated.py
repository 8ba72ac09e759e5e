"""What the docs hooks share about the files they generate by running code.

The examples gallery (``gallery.py``) and the tutorial notebooks (``notebooks.py``) run
zerograd during the build. Their outputs go to a folder under ``.cache/docs/`` whose name is
a hash of everything the run reads from this repository (the packages' sources, the
examples, the page) and of the Python that runs it: a fresh clone, as in CI, always runs
them; a rebuild with nothing changed (``mkdocs serve``) reuses them.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "docs"
SOURCES = sorted((ROOT / "packages").glob("*/src/**/*.py"))


def source_key(*parts: str | Path | Iterable[Path]) -> str:
    """A hash of the packages' sources, the Python that runs, and ``parts`` (texts, files
    or iterables of files)."""
    digest = hashlib.sha256(sys.executable.encode() + sys.version.encode())
    for part in (SOURCES, *parts):
        if isinstance(part, str):
            digest.update(part.encode())
        else:
            for path in [part] if isinstance(part, Path) else part:
                digest.update(str(path.relative_to(ROOT)).encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def output_folder(kind: str, name: str, key: str) -> tuple[Path, bool]:
    """``(folder, reused)``: the cache folder of one run; ``reused`` when a run with the same
    ``key`` finished there (an older run's folder of the same ``name`` is removed)."""
    folder = CACHE / kind / f"{name}-{key}"
    if (folder / ".done").is_file():
        return folder, True
    for old in (CACHE / kind).glob(f"{name}-*"):
        shutil.rmtree(old)
    folder.mkdir(parents=True)
    return folder, False


def mark_done(folder: Path) -> None:
    """Record that the run writing ``folder`` finished and its outputs passed their checks."""
    (folder / ".done").write_text("")


def add_file(files: Files, config: MkDocsConfig, uri: str, path: Path) -> None:
    """Put the file ``path`` into the site at ``uri`` (links from pages to it then resolve)."""
    files.append(File.generated(config, uri, abs_src_path=str(path)))


def require_dot(what: str) -> None:
    """Fail the build, saying what to install, when Graphviz's ``dot`` is missing."""
    if shutil.which("dot") is None:
        raise PluginError(
            f"{what} draws graphs with Graphviz's `dot`, which is not on PATH: install the "
            "system package graphviz (apt install graphviz, brew install graphviz)"
        )


def is_image(path: Path) -> bool:
    """Whether ``path`` holds a PNG or an SVG image (by its first bytes)."""
    head = path.read_bytes()[:1024] if path.is_file() else b""
    return head.startswith(b"\x89PNG\r\n\x1a\n") or b"<svg" in head
