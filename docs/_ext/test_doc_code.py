"""Run every docs page's Python code blocks, page by page and in order (``nox -s doc_code``).

What the pages may rely on (docs/_ext/doc_blocks.py reads them):

- a fenced ``python`` block runs; the blocks of one page share one namespace, in page
  order, with a fresh temporary directory as the working directory;
- a fenced ``text`` block whose info string holds ``title="Output"``, right after a
  ``python`` block, is what that block prints; it is compared with the real output
  (doctest's rules with ``ELLIPSIS``: ``...`` stands for any text);
- ``<!-- doc-code: skip REASON -->`` on the line before a ``python`` block keeps it from
  running; each such block is reported as a skipped test with its reason.

What the pages must do, so that a reader can trust and copy each block:

- a block that prints has its Output block (a block that prints nothing may have none);
- a block imports what it uses: a name that an earlier block bound by ``import`` and this
  block reads must be imported here too (the values earlier blocks computed, a model or
  an array, carry over as the page says; an import does not, so that a block copied
  alone does not fail on a missing ``np`` or ``F``).

Run ``python docs/_ext/test_doc_code.py PAGE.md`` to print what a page's blocks print.
"""

from __future__ import annotations

import ast
import builtins
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
            if block.output is None and got.strip():
                raise AssertionError(
                    f"{where}: the block printed\n{got}\nbut the page shows no Output block; "
                    f'add one after it (```text title="Output"), `...` for what varies.'
                )
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


def import_problems(path: Path) -> list[str]:
    """One line per block of the page that reads a name only an earlier block imported."""
    problems = []
    imported: dict[str, int] = {}  # name -> the line of the block whose import bound it
    for block in parse(path.read_text(encoding="utf-8")):
        if block.skip:
            continue
        missing = imports_missing(block.code, imported)
        if missing:
            problems.append(
                f"{_name(path)}:{block.line}: the block uses {', '.join(missing)} without "
                f"importing {'them' if len(missing) > 1 else 'it'} (imported by the block at "
                f"line {imported[missing[0]]})"
            )
        for name, how in bindings(block.code).items():
            if how == "import":
                imported[name] = block.line
            else:
                imported.pop(name, None)
    return problems


def bindings(code: str) -> dict[str, str]:
    """The names a block binds at its top level: ``{name: "import" or "value"}``.

    The last binding of a name counts (``np = 3`` after ``import numpy as np`` is a value).
    """
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                if name != "*":
                    found[name] = "import"
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found[node.id] = "value"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = "value"
    return found


def imports_missing(code: str, imported: dict[str, int]) -> list[str]:
    """The names ``code`` reads that only an earlier block's import binds, in order.

    A name counts as bound by the block wherever the block binds it (an import, an
    assignment, a parameter, a loop variable), so only reads of a name the block never
    binds are looked at.
    """
    tree = ast.parse(code)
    bound = set(bindings(code)) | set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    loads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    reads = [n.id for n in sorted(loads, key=lambda n: (n.lineno, n.col_offset))]
    return list(dict.fromkeys(n for n in reads if n in imported and n not in bound))


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


# pages whose blocks are being rewritten on another branch, which adds their imports: the
# test below fails (strict xfail) as soon as the page passes, so that the entry goes
PENDING_IMPORTS: dict[str, str] = {}


def _import_param(page: Path) -> object:
    reason = PENDING_IMPORTS.get(_name(page))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(page, marks=marks, id=_name(page))


@pytest.mark.parametrize("page", [_import_param(p) for p in _pages()])
def test_each_block_imports_what_it_uses(page: Path) -> None:
    problems = import_problems(page)
    assert not problems, (
        "import what a block uses, so that it runs when copied alone:\n" + "\n".join(problems)
    )


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


def test_a_block_that_prints_needs_its_output_block(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```python\nx = 2\n```\n\n```python\nprint(x)\n```\n")
    with pytest.raises(AssertionError, match=r"page.md:5: the block printed\n2\n\nbut the page "):
        run_page(page, tmp_path)
    page.write_text(
        '```python\nx = 2\n```\n\n```python\nprint(x)\n```\n\n```text title="Output"\n2\n```\n'
    )
    run_page(page, tmp_path)


def test_a_block_must_import_what_an_earlier_block_imported(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    first = "```python\nimport numpy as np\nfrom math import pi as PI\na = np.ones(2)\n```\n\n"
    page.write_text(first + "```python\nb = a + np.pi * PI\n```\n")
    assert import_problems(page) == [
        "page.md:7: the block uses np, PI without importing them (imported by the block at line 1)"
    ]  # a, a value an earlier block computed, may carry over
    page.write_text(
        first + "```python\nimport numpy as np\n\ndef f(PI):\n    return np.pi * PI\n```\n"
    )
    assert import_problems(page) == []  # imported again, or bound by the block (a parameter)
    page.write_text(first + "```python\nnp = 3\n```\n\n```python\nprint(np)\n```\n")
    assert import_problems(page) == []  # np became a value


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        run_page(Path(arg).resolve(), Path.cwd(), show=True)
