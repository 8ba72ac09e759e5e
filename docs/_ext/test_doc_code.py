"""Run every docs page's Python code blocks, page by page and in order (``nox -s doc_code``).

What the pages may rely on (docs/_ext/doc_blocks.py reads them):

- a fenced ``python`` block runs; the blocks of one page share one namespace, in page
  order, with a fresh temporary directory as the working directory;
- a fenced ``text`` block whose info string holds ``title="Output"``, right after a
  ``python`` block, is what that block prints; it is compared with the real output
  (doctest's rules with ``ELLIPSIS``: ``...`` stands for any text);
- ``<!-- doc-code: skip REASON -->`` on the line before a ``python`` block keeps it from
  running; each such block is reported as a skipped test with its reason.

Run ``python docs/_ext/test_doc_code.py PAGE.md`` to print what a page's blocks print.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import sys
from pathlib import Path

import pytest
from doc_blocks import Block, parse

DOCS = Path(__file__).resolve().parents[1]


def run_page(path: Path, workdir: Path, show: bool = False) -> None:
    """Run the page's python blocks in ``workdir``, in order; a wrong output raises
    AssertionError naming the page and line (``show`` prints every block's output)."""
    namespace: dict = {"__name__": "__main__"}
    checker = doctest.OutputChecker()
    here, environ = Path.cwd(), dict(os.environ)  # a page may set variables for itself
    os.chdir(workdir)
    try:
        for block in parse(path.read_text(encoding="utf-8")):
            if block.skip:
                continue
            where = f"{_name(path)}:{block.line}"
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(block.code, where, "exec"), namespace)
            got = out.getvalue()
            if show:
                print(f"--- {where}\n{got}", end="")
            if block.output is not None and not checker.check_output(
                block.output, got, doctest.ELLIPSIS
            ):
                raise AssertionError(
                    f"{where}: the block printed\n{got}\nbut the page shows\n{block.output}"
                )
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(environ)


def _name(path: Path) -> str:
    return str(path.relative_to(DOCS)) if path.is_relative_to(DOCS) else path.name


def _pages() -> list[Path]:
    pages = sorted(p for p in DOCS.rglob("*.md") if "_ext" not in p.parts)
    return [p for p in pages if parse(p.read_text(encoding="utf-8"))]


def _skipped() -> list:
    return [
        pytest.param(p, b, id=f"{_name(p)}:{b.line}")
        for p in _pages()
        for b in parse(p.read_text(encoding="utf-8"))
        if b.skip
    ]


@pytest.mark.parametrize("page", _pages(), ids=_name)
def test_page_runs_as_shown(page: Path, tmp_path: Path) -> None:
    run_page(page, tmp_path)


@pytest.mark.parametrize("page, block", _skipped())
def test_block_not_run(page: Path, block: Block) -> None:
    pytest.skip(f"{_name(page)}:{block.line} not run: {block.skip}")


def test_the_runner_compares_outputs_and_keeps_one_namespace(tmp_path: Path) -> None:
    text = (
        "<!-- doc-code: skip never runs -->\n```python\nraise SystemExit\n```\n\n"
        "```python\nx = 1 + 1\n```\n\n"
        '```python\nprint(x, "and", [x] * 30)\n```\n\n```text title="Output"\n2 and ...\n```\n'
        '```python\nprint(x)\n```\n\n```text title="Output"\n3\n```\n'
    )
    blocks = parse(text)
    assert [(b.line, b.skip, b.output) for b in blocks] == [
        (2, "never runs", None),
        (6, None, None),
        (10, None, "2 and ...\n"),
        (17, None, "3\n"),
    ]
    page = tmp_path / "page.md"
    page.write_text(text)
    with pytest.raises(AssertionError, match=r"page.md:17: the block printed\n2\n\nbut the page"):
        run_page(page, tmp_path)
    page.write_text(text.replace("\n3\n", "\n2\n"))
    run_page(page, tmp_path)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        run_page(Path(arg).resolve(), Path.cwd(), show=True)
