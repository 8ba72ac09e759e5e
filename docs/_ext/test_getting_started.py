"""Getting started installs what the tutorial needs, and the tutorial's index says which page
needs what (issue 42: pages 3, 4 and 6 failed without zerograd-viz).

Read from the pages themselves: the ``pip install ./packages/...`` line of Getting started,
the import statements of every tutorial page's python blocks, and the sentence of the
tutorial's index that names the pages drawing graphs with zerograd-viz.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from doc_blocks import parse

DOCS = Path(__file__).resolve().parents[1]
PACKAGES = DOCS.parent / "packages"


def _installed_imports() -> set[str]:
    """The import names of the packages Getting started installs (``packages/<f>/src/<name>``)."""
    text = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    (line,) = [ln for ln in text.splitlines() if ln.startswith("pip install ./packages/")]
    folders = re.findall(r"\./packages/([\w-]+)", line)
    return {p.name for f in folders for p in (PACKAGES / f / "src").iterdir() if p.is_dir()}


def _imports(page: Path) -> set[str]:
    roots = set()
    for block in parse(page.read_text(encoding="utf-8")):
        for node in ast.walk(ast.parse(block.code)):
            if isinstance(node, ast.Import):
                roots |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots.add(node.module.split(".")[0])
    return roots


def _numbered_pages() -> dict[int, Path]:
    index = (DOCS / "tutorial" / "index.md").read_text(encoding="utf-8")
    return {
        int(n): DOCS / "tutorial" / f
        for n, f in re.findall(r"^(\d+)\. \[.*\]\((.*)\)", index, re.M)
    }


def test_getting_started_installs_every_package_the_tutorial_imports():
    installed = _installed_imports()
    assert {"zerograd", "zerograd_numpy", "zerograd_nn", "zerograd_viz"} <= installed
    allowed = installed | {"numpy"} | set(sys.stdlib_module_names)
    for page in _numbered_pages().values():
        assert _imports(page) <= allowed, f"{page.name} imports {_imports(page) - allowed}"


def test_the_index_names_the_pages_that_draw_with_zerograd_viz():
    index = (DOCS / "tutorial" / "index.md").read_text(encoding="utf-8")
    said = re.search(r"Pages ([\d, ]+ and \d+) draw graphs with\s+zerograd-viz", index)
    assert said, "the tutorial's index no longer says which pages draw with zerograd-viz"
    named = {int(n) for n in re.findall(r"\d+", said[1])}
    drawing = {n for n, page in _numbered_pages().items() if "zerograd_viz" in _imports(page)}
    assert named == drawing
