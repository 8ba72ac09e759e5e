"""The fenced code blocks of a docs page, as the doc tests and the notebooks read them.

- a fenced ``python`` block is code; the blocks of one page share one namespace, in order;
- a fenced ``text`` block whose info string holds ``title="Output"``, right after a
  ``python`` block, is what that block prints;
- ``<!-- doc-code: skip REASON -->`` on the line before a ``python`` block keeps it from
  running.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<info>.*)$")
SKIP = re.compile(r"<!--\s*doc-code:\s*skip\s+(?P<reason>.+?)\s*-->")


@dataclass
class Block:
    """One fenced code block: where it starts (the opening fence's line, from 1) and ends
    (the closing fence's line), its language, info string and text."""

    line: int
    lang: str
    info: str
    code: str
    skip: str | None = None
    output: str | None = None  # the Output block that follows it, if any
    end: int = 0
    output_end: int | None = None  # the closing fence of that Output block

    @property
    def last(self) -> int:
        """The last line of the block with its Output block."""
        return self.end if self.output_end is None else self.output_end


def parse(text: str) -> list[Block]:
    """The python blocks of a Markdown page, each with its expected output."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m["indent"]), m["fence"], m["info"].strip()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not (
            lines[i].strip().startswith(fence) and set(lines[i].strip()) == {fence[0]}
        ):
            body.append(lines[i][indent:])
            i += 1
        before = lines[start - 2] if start >= 2 else ""
        skip = SKIP.search(before)
        lang = info.split()[0].lower() if info else ""
        blocks.append(
            Block(
                start,
                lang,
                info,
                "\n".join(body) + "\n",
                skip["reason"] if skip else None,
                end=min(i + 1, len(lines)),
            )
        )
        i += 1
    for previous, block in zip(blocks, blocks[1:]):
        if previous.lang == "python" and block.lang == "text" and 'title="Output"' in block.info:
            previous.output, previous.output_end = block.code, block.end
    return [b for b in blocks if b.lang == "python"]
