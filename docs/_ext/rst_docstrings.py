"""A griffe extension for the docs build: render zerograd's docstrings as Markdown.

The packages write docstrings in the plain style of the standard library: doctest examples
(``>>> ...``) without fences, Sphinx roles (``:class:`~zerograd.Parameter```) and ``::``
before literal blocks. mkdocstrings renders docstrings as Markdown, where ``>>>`` would
become nested quotes and a role would be shown verbatim. This extension rewrites each
docstring once the API tree is loaded:

- every doctest block becomes a fenced ``pycon`` code block;
- a Sphinx role becomes inline code (``~`` keeps the last dotted part, as in Sphinx);
- a paragraph ending in ``::`` ends in ``:`` (the indented block after it is already code).

Loaded from ``mkdocs.yml`` (``plugins: mkdocstrings: handlers: python: options:
extensions``); it changes what the site shows, never the packages.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?[a-z]+:`(~?)([^`<]+?)(?:\s*<([^>]+)>)?`")


def _role(match: re.Match) -> str:
    tilde, text, _target = match.groups()
    text = text.strip()
    if tilde:
        text = text.split(".")[-1]
    return f"`{text}`"


def _fence_doctests(lines: list[str]) -> list[str]:
    out: list[str] = []
    i, in_fence = 0, False
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith("```"):
            in_fence = not in_fence
        if in_fence or not stripped.startswith(">>>"):
            out.append(line)
            i += 1
            continue
        indent = line[: len(line) - len(stripped)]
        block = []
        while i < len(lines) and lines[i].strip():
            block.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        out += [f"{indent}```pycon"] + [indent + b for b in block] + [f"{indent}```"]
    return out


def to_markdown(text: str) -> str:
    """Return the docstring ``text`` with doctests fenced and Sphinx markup made Markdown."""
    text = _ROLE.sub(_role, text)
    lines = _fence_doctests(text.splitlines())
    for n, line in enumerate(lines[:-1]):
        following = next((nxt for nxt in lines[n + 1 :] if nxt.strip()), "")
        if line.rstrip().endswith("::") and following.startswith("    "):
            lines[n] = line.rstrip()[:-1]
    return "\n".join(lines)


class RstDocstrings(griffe.Extension):
    """Rewrite every docstring as Markdown (see the module docstring)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring as soon as the object exists (modules included)."""
        if obj.docstring is not None:
            obj.docstring.value = to_markdown(obj.docstring.value)
