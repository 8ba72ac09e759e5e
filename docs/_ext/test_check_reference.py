"""The reference checker names each public name that no reference entry documents."""

from __future__ import annotations

from pathlib import Path

import pytest
from check_reference import undocumented

# a package whose __all__ re-exports, renames and shadows, as zerograd_nn.functional does
MODULES = {
    "__init__.py": (
        "from .core import relu, mean\n"
        "from .linear import linear\n"
        "from . import core\n"
        "average = mean\n"
        "__all__ = ['core', 'relu', 'mean', 'average', 'linear']\n"
    ),
    "core.py": "def relu(): pass\ndef mean(): pass\n__all__ = ['relu', 'mean']\n",
    "linear.py": "def linear(): pass\n",
    "_private.py": "__all__ = ['nowhere']\n",
}


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"refpkg_{tmp_path.name}"  # a fresh import name per test
    folder = tmp_path / "src" / name
    folder.mkdir(parents=True)
    for file, text in MODULES.items():
        (folder / file).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    return name


def _reference(tmp_path: Path, *entries: str) -> Path:
    """A site's reference folder documenting ``entries``, each ``KIND:PATH``."""
    folder = tmp_path / "site" / "reference"
    folder.mkdir(parents=True)
    headings = "".join(
        f'<div class="doc doc-object doc-{kind}"><h2 id="{path}" class="doc doc-heading">'
        f"{path}</h2></div>"
        for kind, path in (e.split(":") for e in entries)
    )
    # ids that are not entries (a toc link, a code line) document nothing
    others = '<a id="{0}.average"></a><span id="{0}.mean" class="doc"></span>'
    (folder / "page.html").write_text(f"<html><body>{headings}{others}</body></html>")
    return folder


def test_an_entry_documents_its_name_wherever_the_object_lives(
    tmp_path: Path, package: str
) -> None:
    # relu and mean: from the defining module's entries; linear: the function, through the
    # module it shadows; core's own __all__ is covered by the same entries
    reference = _reference(
        tmp_path,
        f"module:{package}",
        f"module:{package}.core",
        f"function:{package}.core.relu",
        f"function:{package}.core.mean",
        f"function:{package}.linear.linear",
        f"attribute:{package}.average",
    )
    assert undocumented(reference, (package,)) == []


def test_each_missing_name_is_reported_once_per_module(tmp_path: Path, package: str) -> None:
    # average is mean under another name: mean's entry does not document it; the entry of
    # a module does not document the function of the same name, nor a class entry a module
    reference = _reference(
        tmp_path,
        f"module:{package}",
        f"function:{package}.core.mean",
        f"module:{package}.linear",
        f"class:{package}.core",
    )
    assert undocumented(reference, (package,)) == [
        f"{package}.core",
        f"{package}.relu",
        f"{package}.average",
        f"{package}.linear",
        f"{package}.core.relu",
    ]
