"""An mkdocs hook: each tutorial page is also a Jupyter notebook, executed when the site is built.

For every page ``tutorial/<name>.md`` with Python blocks (docs/_ext/doc_blocks.py reads
them), the build

- converts the page to ``<name>.ipynb``: its prose becomes Markdown cells (links to other
  tutorial pages point to their notebooks, the rest to the site), each ``python`` block a
  code cell, the ``Output`` blocks are left out (running the cell prints them), and a block
  the doc tests skip is tagged ``skip-execution``;
- executes it with nbclient in a Jupyter kernel (ipykernel) of the Python that builds the
  site, in an empty folder; a cell that raises fails the build, and so does a cell whose
  printed text differs from the page's ``Output`` block (doctest's rules, as the doc tests)
  or that displays a graph without its picture;
- ships the executed notebook beside the page, with a download link at the top of the page,
  and shows under each block the pictures its cell displayed (a graph from
  ``zerograd_viz.show``, as Jupyter shows it inline).
"""

from __future__ import annotations

import base64
import doctest
import posixpath
import re
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from doc_blocks import Block, parse
from generated import add_file, mark_done, output_folder, require_dot, source_key
from jupyter_client import KernelManager
from mkdocs.exceptions import PluginError
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

FOLDER = "tutorial/"
TIMEOUT = 300  # seconds per cell
IMAGES = {"image/svg+xml": "svg", "image/png": "png"}  # what a cell may display, preferred first
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
_made: dict[str, Path] = {}  # page src_uri -> the folder holding its notebook and images


def _link(target: str, page_uri: str, site_url: str) -> str:
    """Where a link of the page ``page_uri`` points in the notebook (see the module docstring)."""
    if re.match(r"^[a-z][a-z0-9+.-]*:|^#", target):
        return target
    path, _, fragment = target.partition("#")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(page_uri), path))
    if resolved.startswith(FOLDER) and resolved.endswith(".md") and resolved != FOLDER + "index.md":
        new = posixpath.basename(resolved)[:-3] + ".ipynb"
    else:
        new = site_url + (resolved[:-3] + ".html" if resolved.endswith(".md") else resolved)
    return new + ("#" + fragment if fragment else "")


def _prose(lines: list[str], page_uri: str, site_url: str) -> str | None:
    text = "\n".join(lines).strip("\n")
    if not text.strip():
        return None
    return LINK.sub(lambda m: f"]({_link(m['target'], page_uri, site_url)})", text)


def to_notebook(text: str, page_uri: str, site_url: str) -> nbformat.NotebookNode:
    """The notebook of the page ``page_uri`` (``tutorial/x.md``) whose Markdown is ``text``."""
    lines = text.splitlines()
    page_url = site_url + page_uri[:-3] + ".html"
    cells = [
        nbformat.v4.new_markdown_cell(
            f"*This notebook is the page [{page_uri[:-3]}]({page_url}) of zerograd's tutorial. "
            "It needs zerograd, zerograd-numpy, zerograd-nn and zerograd-viz, installed from "
            "a clone of the repository: `pip install ./packages/core ./packages/backend-numpy "
            "./packages/nn ./packages/viz` (and Graphviz's `dot` for the graphs).*"
        )
    ]
    done = 0  # lines (from 0) already in a cell
    for block in parse(text):
        start = block.line - 1 - (1 if block.skip else 0)  # the skip comment stays out
        prose = _prose(lines[done:start], page_uri, site_url)
        if prose is not None:
            cells.append(nbformat.v4.new_markdown_cell(prose))
        cell = nbformat.v4.new_code_cell(block.code.rstrip("\n"))
        if block.skip:
            cell.metadata["tags"] = ["skip-execution"]
        cells.append(cell)
        done = block.last
    prose = _prose(lines[done:], page_uri, site_url)
    if prose is not None:
        cells.append(nbformat.v4.new_markdown_cell(prose))
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    notebook.metadata["language_info"] = {"name": "python"}
    return notebook


def printed(cell: nbformat.NotebookNode) -> str:
    """What an executed code cell printed to stdout."""
    return "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def problems(notebook: nbformat.NotebookNode, blocks: list[Block], page_uri: str) -> list[str]:
    """One line per executed cell whose printed text differs from its block's Output, or
    that displayed a graph (a ``GraphView``) without its picture (``dot`` failed)."""
    checker = doctest.OutputChecker()
    code = [c for c in notebook.cells if c.cell_type == "code"]
    found = []
    for cell, block in zip(code, blocks):
        where = f"{page_uri}:{block.line}"
        if block.output is not None and not block.skip:
            if not checker.check_output(block.output, printed(cell), doctest.ELLIPSIS):
                found.append(
                    f"{where}: the notebook's cell printed\n{printed(cell)}\n"
                    f"but the page shows\n{block.output}"
                )
        for output in cell.outputs:
            text = output.get("data", {}).get("text/plain", "")
            if text.startswith("<GraphView") and not any(m in output.data for m in IMAGES):
                found.append(f"{where}: the cell displayed no picture of its graph: {text}")
    return found


def execute(notebook: nbformat.NotebookNode, workdir: Path, page_uri: str) -> None:
    """Run every cell of ``notebook`` in a fresh kernel with ``workdir`` as its folder."""
    # IPC sockets, not TCP: nothing listens on the network (ipykernel warns about TCP); in
    # a short temporary path, since a socket's path has a length limit
    with tempfile.TemporaryDirectory(prefix="zg-kernel-") as sockets:
        kernel = KernelManager(kernel_name="python3", transport="ipc", ip=f"{sockets}/k")
        client = NotebookClient(
            notebook,
            km=kernel,
            timeout=TIMEOUT,
            record_timing=False,
            resources={"metadata": {"path": str(workdir)}},
        )
        try:
            client.execute()
        except CellExecutionError as exc:
            raise PluginError(f"notebook of {page_uri}: a cell failed\n{exc}") from None
        finally:  # nbclient stops only the kernels it started itself
            if kernel.has_kernel:
                kernel.shutdown_kernel(now=True)


def save_images(notebook: nbformat.NotebookNode, folder: Path, stem: str) -> None:
    """Write what each code cell displayed as ``<stem>-<cell>-<n>.<svg|png>`` in ``folder``
    (cells counted from 1 among the code cells)."""
    code = [c for c in notebook.cells if c.cell_type == "code"]
    for k, cell in enumerate(code, start=1):
        shown = [o for o in cell.outputs if o.output_type in ("display_data", "execute_result")]
        for n, output in enumerate(shown, start=1):
            mime = next((m for m in IMAGES if m in output.data), None)
            if mime is None:
                continue
            data = output.data[mime]
            path = folder / f"{stem}-{k}-{n}.{IMAGES[mime]}"
            if mime == "image/png":
                path.write_bytes(base64.b64decode(data))
            else:
                path.write_text(data, encoding="utf-8")


def on_files(files: Any, config: Any) -> Any:
    """Build, execute and add the notebook of every tutorial page (or reuse an identical
    earlier build) with the images its cells displayed."""
    require_dot("The tutorial notebooks")
    site_url = config.site_url or ""
    for file in list(files.documentation_pages()):
        uri = file.src_uri
        if not (uri.startswith(FOLDER) and uri.endswith(".md")):
            continue
        text = Path(file.abs_src_path).read_text(encoding="utf-8")
        if not parse(text):
            continue
        stem = posixpath.basename(uri)[:-3]
        folder, reused = output_folder("notebooks", stem, source_key(text, site_url))
        if not reused:
            notebook = to_notebook(text, uri, site_url)
            work = folder / "work"
            work.mkdir()
            execute(notebook, work, uri)
            found = problems(notebook, parse(text), uri)
            if found:
                raise PluginError("\n".join(found))
            nbformat.validate(notebook)
            nbformat.write(notebook, folder / f"{stem}.ipynb")
            save_images(notebook, folder, stem)
            mark_done(folder)
        _made[uri] = folder
        for path in sorted(folder.glob(f"{stem}*.*")):
            add_file(files, config, FOLDER + path.name, path)
    return files


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Add the download link under the title and each cell's pictures under its block."""
    folder = _made.get(page.file.src_uri)
    if folder is None:
        return markdown
    stem = posixpath.basename(page.file.src_uri)[:-3]
    lines = markdown.splitlines()
    after: dict[int, list[str]] = {}  # line (from 1) -> what follows it
    for k, block in enumerate(parse(markdown), start=1):
        pictures = sorted(folder.glob(f"{stem}-{k}-*.*"))
        if pictures:
            after[block.last] = [""] + [
                f"![What the cell above displays in Jupyter]({p.name})" for p in pictures
            ]
    title = next((n for n, line in enumerate(lines, start=1) if line.startswith("# ")), 0)
    after.setdefault(title, []).extend(
        [
            "",
            f"This page is also a Jupyter notebook, run when this site was built: "
            f'[download {stem}.ipynb]({stem}.ipynb){{ download="{stem}.ipynb" }}.',
        ]
    )
    out = [*after.get(0, [])]
    for n, line in enumerate(lines, start=1):
        out += [line, *after.get(n, [])]
    return "\n".join(out) + "\n"
