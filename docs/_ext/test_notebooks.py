"""A tutorial page becomes a notebook that runs in a real kernel; its outputs are checked."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import notebooks
import pytest
from doc_blocks import parse
from mkdocs.exceptions import PluginError
from notebooks import execute, problems, save_images, to_notebook

SITE = "https://example.org/zg/"
PAGE = """# 3. Backward

See [Function](function.md#calls), the [index](index.md) and [plugins](../backend-plugins.md).

```python
x = 1 + 1
print(x)
```

```text title="Output"
2
```

<!-- doc-code: skip needs a GPU -->
```python
import cupy
```

Text between blocks.

```python
from IPython.display import SVG

SVG('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"></svg>')
```

```bash
echo not python
```
"""


def test_the_page_becomes_prose_and_code_cells() -> None:
    cells = to_notebook(PAGE, "tutorial/backward.md", SITE).cells
    assert [c.cell_type for c in cells] == [
        "markdown",  # what the notebook is, with the page's address
        "markdown",
        "code",
        "code",
        "markdown",
        "code",
        "markdown",
    ]
    assert f"({SITE}tutorial/backward.html)" in cells[0].source
    assert cells[1].source == (
        "# 3. Backward\n\nSee [Function](function.ipynb#calls), the "
        f"[index]({SITE}tutorial/index.html) and [plugins]({SITE}backend-plugins.html)."
    )
    assert cells[2].source == "x = 1 + 1\nprint(x)"  # the Output block is left out
    assert (cells[3].source, cells[3].metadata) == ("import cupy", {"tags": ["skip-execution"]})
    assert cells[4].source == "Text between blocks."
    assert cells[6].source == "```bash\necho not python\n```"


def test_the_notebook_runs_and_its_outputs_are_checked(tmp_path: Path) -> None:
    notebook = to_notebook(PAGE, "tutorial/backward.md", SITE)
    execute(notebook, tmp_path, "tutorial/backward.md")
    assert problems(notebook, parse(PAGE), "tutorial/backward.md") == []
    save_images(notebook, tmp_path, "backward")
    # the third code cell displayed the picture; the skipped one never ran
    assert [p.name for p in tmp_path.glob("backward-*")] == ["backward-3-1.svg"]
    assert (tmp_path / "backward-3-1.svg").read_text().startswith("<svg")
    assert notebook.cells[3].outputs == []

    wrong = PAGE.replace('title="Output"\n2', 'title="Output"\n3')
    assert problems(notebook, parse(wrong), "tutorial/backward.md") == [
        "tutorial/backward.md:5: the notebook's cell printed\n2\n\nbut the page shows\n3\n"
    ]


def test_a_graph_without_its_picture_is_a_problem(tmp_path: Path) -> None:
    # what a GraphView's display is when dot fails: its text only
    page = (
        "```python\nclass GraphView:\n    def __repr__(self):\n"
        "        return '<GraphView: 1 nodes'\n\nGraphView()\n```\n"
    )
    notebook = to_notebook(page, "tutorial/x.md", SITE)
    execute(notebook, tmp_path, "tutorial/x.md")
    assert problems(notebook, parse(page), "tutorial/x.md") == [
        "tutorial/x.md:1: the cell displayed no picture of its graph: <GraphView: 1 nodes"
    ]


def test_a_failing_cell_fails_the_build_naming_the_page(tmp_path: Path) -> None:
    notebook = to_notebook("```python\n1 / 0\n```\n", "tutorial/x.md", SITE)
    with pytest.raises(
        PluginError, match=r"(?s)notebook of tutorial/x.md: a cell failed.*ZeroDivisionError"
    ):
        execute(notebook, tmp_path, "tutorial/x.md")


def test_the_page_gets_its_download_link_and_each_cells_pictures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "backward-3-1.svg").write_text("<svg/>")
    monkeypatch.setitem(notebooks._made, "tutorial/backward.md", tmp_path)
    page = SimpleNamespace(file=SimpleNamespace(src_uri="tutorial/backward.md"))
    lines = notebooks.on_page_markdown(PAGE, page=page).splitlines()
    assert lines[:4] == [
        "# 3. Backward",
        "",
        "This page is also a Jupyter notebook, run when this site was built: "
        '[download backward.ipynb](backward.ipynb){ download="backward.ipynb" }.',
        "",
    ]
    shown = lines.index("![What the cell above displays in Jupyter](backward-3-1.svg)")
    assert lines[shown - 3 : shown] == [
        'SVG(\'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"></svg>\')',
        "```",
        "",
    ]
    other = SimpleNamespace(file=SimpleNamespace(src_uri="index.md"))
    assert notebooks.on_page_markdown(PAGE, page=other) == PAGE
