"""The From-PyTorch page's tables run: its claims about zerograd are checked against the code.

``docs/from-pytorch.md`` has two tables. In the first (PyTorch | zerograd | also accepted)
every code span of the zerograd and "also accepted" columns is run; in the second
(habit | what happens | write instead) each habit must raise the error named in the
middle column, whose message must hold every code span after "naming", and each span of
the last column must run. Code runs after the page's python blocks above the tables, in
their namespace. A span ending in ``:`` (``with zerograd.no_grad():``) runs with ``pass``
as its body; a span that moves to a GPU may raise ``NoBackendError`` where no GPU backend
can be used. A sentence of the page that says something "does not exist" or that "there
is no `name`" must name a habit of the second table, so prose cannot make a claim the
test does not run.

Runs in ``nox -s docs`` (every package installed), like the other tests of docs/_ext.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest
from doc_blocks import parse

from zerograd.backends import NoBackendError, gpu_backend

PAGE = Path(__file__).resolve().parents[1] / "from-pytorch.md"
SPAN = re.compile(r"`([^`]+)`")
GPU = re.compile(r"gpu|cuda|cupy", re.IGNORECASE)
NONEXISTENCE = re.compile(r"do(?:es)? not exist|[Tt]here is no `")


def _tables(text: str) -> list[list[list[str]]]:
    """The page's tables: rows (the header and the divider left out) of cells."""
    tables, rows = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            tables.append([r for r in rows[1:] if not set("".join(r)) <= set("-: ")])
            rows = []
    return tables


def _setup(tmp_path: Path) -> dict:
    """The namespace of the page's python blocks above its first table, run in tmp_path."""
    text = PAGE.read_text(encoding="utf-8")
    first_table = next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith("|"))
    namespace: dict = {"__name__": "__main__"}
    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        for block in parse(text):
            if block.line < first_table and not block.skip:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(block.code, f"from-pytorch.md:{block.line}", "exec"), namespace)
    finally:
        os.chdir(here)
    return namespace


def _gpu_usable() -> bool:
    try:
        gpu_backend()
    except NoBackendError:
        return False
    return True


def _run(code: str, namespace: dict, tmp_path: Path) -> None:
    source = code + "\n    pass" if code.endswith(":") else code
    compiled = compile(source, f"from-pytorch.md `{code}`", "exec")
    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        exec(compiled, namespace)
    except NoBackendError:
        if not GPU.search(code) or _gpu_usable():
            raise
    finally:
        os.chdir(here)


_NAMES, _HABITS = _tables(PAGE.read_text(encoding="utf-8"))[:2]


@pytest.mark.parametrize("row", _NAMES, ids=[r[0] for r in _NAMES])
def test_each_zerograd_and_also_accepted_name_runs(row, tmp_path):
    namespace = _setup(tmp_path)
    spans = SPAN.findall(row[1]) + SPAN.findall(row[2])
    assert spans, f"the row {row[0]} names no zerograd code"
    for code in spans:
        _run(code, namespace, tmp_path)


@pytest.mark.parametrize("row", _HABITS, ids=[r[0] for r in _HABITS])
def test_each_habit_fails_as_the_page_says(row, tmp_path):
    namespace = _setup(tmp_path)
    (habit,) = SPAN.findall(row[0])
    error, *named = SPAN.findall(row[1].split(" naming ")[0]) + (
        SPAN.findall(row[1].split(" naming ", 1)[1]) if " naming " in row[1] else []
    )
    with pytest.raises(BaseException) as info:
        _run(habit, namespace, tmp_path)
    assert type(info.value).__name__ == error, f"{habit}: {info.value!r}"
    for text in named:
        assert text in str(info.value), f"{habit}: the message does not name {text}"
    for code in SPAN.findall(row[2]):
        _run(code, namespace, tmp_path)


def test_every_claim_that_a_name_does_not_exist_is_a_habit_of_the_table():
    habits = {SPAN.findall(r[0])[0] for r in _HABITS}
    text = PAGE.read_text(encoding="utf-8")
    prose = " ".join(line for line in text.splitlines() if not line.startswith("|"))
    claims = [s for s in re.split(r"(?<=[.!?])\s+", prose) if NONEXISTENCE.search(s)]
    for sentence in claims:
        for name in SPAN.findall(sentence):
            assert any(name in habit for habit in habits), (
                f"the page says {sentence.strip()!r}, but {name!r} is no habit of its table"
            )


def test_each_row_at_kinks_and_ties_names_tests_that_exist():
    """The third table's last column names tests of the kink files (or test_boundary)."""
    root = PAGE.parents[1] / "packages"
    files = [
        root / "core" / "tests" / "test_kinks.py",
        root / "nn" / "tests" / "test_kinks_nn.py",
        root / "core" / "tests" / "test_boundary.py",
    ]
    defined = {n for f in files for n in re.findall(r"^def (test_\w+)", f.read_text(), re.M)}
    rows = _tables(PAGE.read_text(encoding="utf-8"))[2]
    assert len(rows) >= 20
    for row in rows:
        names = SPAN.findall(row[-1])
        assert names, f"the row {row[0]} at {row[1]} names no test"
        for name in names:
            assert name in defined, f"the row {row[0]} names {name}, which no kink test defines"


def test_the_tables_are_found():
    assert len(_NAMES) > 20 and len(_HABITS) >= 5
    assert all(len(r) == 3 for r in _NAMES + _HABITS)
