"""An mkdocs hook: the benchmarks page shows ``benchmarks/results.md`` as tables readers can read.

``nox -s bench`` writes one wide table (ten columns, a long note per row). In its place
(the line ``<!-- benchmark-results -->`` of docs/benchmarks.md) the page gets the file's
text before the table, then one section per group of rows: a table with only the columns
that group fills, each row's note moved to a numbered list below the table. The tables and
the notes are left out of the site's search index (``data-search-exclude``); the group
headings and the page's prose stay searchable. The numbers are the file's, untouched.

Another page shows some groups of the same file with ``<!-- benchmark-results: PREFIX -->``:
the file's first paragraph (the machine and the date), then the groups whose name starts
with ``PREFIX``, as above but one heading level down (``###``), so that a number measured by
the bench has one source, the file, on every page ("Train on many processes" shows the
data-parallel rows this way).

``benchmarks/bench_gpu.py --splice`` writes its GPU section (between ``<!-- bench_gpu:
begin -->`` and ``<!-- bench_gpu: end -->``) into both results.md and docs/benchmarks.md:
the page shows its own copy, with the analysis written under it, once, its table and
notes left out of search in the same way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

MARKER = "<!-- benchmark-results -->"
GROUPS_MARKER = re.compile(r"<!-- benchmark-results: (?P<prefix>[^>]+?) -->")
GPU_SECTION = re.compile(
    r"<!-- bench_gpu: begin -->\n(?P<body>.*?)<!-- bench_gpu: end -->\n?", re.S
)
_EXCLUDED = '<div markdown="1" data-search-exclude>'
RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results.md"
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_EMPTY = ("", "–", "-")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in _CELL_SPLIT.split(line.strip().strip("|"))]


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def split_results(text: str) -> tuple[list[str], list[str], list[list[str]], list[str]]:
    """``(lines before the table, header cells, rows of cells, lines after the table)``."""
    lines = text.splitlines()
    start = next((n for n, line in enumerate(lines) if line.startswith("|")), len(lines))
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    if end - start < 2:
        return lines, [], [], []
    rows = [_cells(line) for line in lines[start + 2 : end]]
    return lines[:start], _cells(lines[start]), rows, lines[end:]


def render(text: str, prefix: str | None = None) -> str:
    """The Markdown of the page section for the results file's ``text`` (see above).

    With ``prefix``, only the file's first paragraph and the groups whose name starts with
    ``prefix``, under ``###`` headings.
    """
    before, header, rows, after = split_results(GPU_SECTION.sub("", text))
    # the file's own title is the page's
    out = [line for line in before if not line.startswith("# ")]
    if prefix is not None:
        paragraphs = "\n".join(out).strip().split("\n\n")
        out, after = ["", paragraphs[0] if paragraphs[0] else ""], []
    if not header:
        return "\n".join(out + after).rstrip("\n") + "\n"
    group_col, note_col = header.index("group"), header.index("note")
    groups: dict[str, list[list[str]]] = {}
    for row in rows:
        if prefix is None or row[group_col].startswith(prefix):
            groups.setdefault(row[group_col], []).append(row)
    heading = "##" if prefix is None else "###"
    for group, members in groups.items():
        shown = [
            n
            for n, name in enumerate(header)
            if n not in (group_col, note_col) and any(r[n] not in _EMPTY for r in members)
        ]
        names = ["ratio" if header[n] == "zerograd ratio" else header[n] for n in shown]
        table = [_row(names), _row(["---"] * len(shown))]
        notes = []
        for row in members:
            cells = [row[n] for n in shown]
            if row[note_col] not in _EMPTY:
                notes.append(row[note_col])
                cells[0] += f" ({len(notes)})"
            table.append(_row(cells))
        listed = [f"{n}. {note}" for n, note in enumerate(notes, start=1)]
        body = table + ([""] + listed if listed else [])
        out += ["", f"{heading} {group}", "", _EXCLUDED, ""]
        out += body + ["", "</div>"]
    return "\n".join(out + after).rstrip("\n") + "\n"


def exclude_gpu_tables(markdown: str) -> str:
    """The page with the GPU section's table and notes (from its first table row to its end
    marker) wrapped in a div that search leaves out."""

    def wrap(match: re.Match) -> str:
        lines = match["body"].splitlines()
        first = next((n for n, line in enumerate(lines) if line.startswith("|")), len(lines))
        body = lines[:first] + [_EXCLUDED, ""] + lines[first:] + ["", "</div>"]
        return "\n".join(body) + "\n"

    return GPU_SECTION.sub(wrap, markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Put the results in place of ``MARKER`` and of each group marker of the page."""
    if MARKER not in markdown and not GROUPS_MARKER.search(markdown):
        return markdown
    if not RESULTS.is_file():
        missing = f"*No results yet: `{RESULTS.name}` is written by `nox -s bench`.*"
        return GROUPS_MARKER.sub(missing, markdown.replace(MARKER, missing))
    text = RESULTS.read_text(encoding="utf-8")
    markdown = GROUPS_MARKER.sub(lambda m: render(text, m["prefix"]), markdown)
    if MARKER not in markdown:
        return markdown
    return exclude_gpu_tables(markdown.replace(MARKER, render(text)))
