"""Check that the built site's search finds code identifiers on the pages that show them:
``python docs/_ext/check_search.py SITE_DIR``.

Material's search (lunr, with Material's own tokenizer) takes the HTML of each index entry
apart into tags and text, splits the text with the plugin's ``separator`` (mkdocs.yml) and
lowercases each piece, with no trimming (its pipeline is only the stop-word filter); a
search for an identifier finds a page only if the identifier is one of its words.

This checker reads the built index (``SITE_DIR/search/search_index.json``), splits it as
the search does, and checks, for each identifier of :data:`IDENTIFIERS`, that every page
whose text holds the identifier has it as a word, and that the pages named in
:data:`EXPECTED` are among them.
With MkDocs' default separator (spaces and hyphens), ``model.cleargrads()`` is one word
and a search for ``cleargrads`` misses the page (issue 42). Exits 1 naming each miss.
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
IDENTIFIERS = (
    "cleargrads",
    "zero_grad",
    "named_params",
    "softmax_cross_entropy",
    "no_grad",
    "to_gpu",
    "static_graph",
    "DataLoader",
)
# pages (as their built file) that must come up for an identifier, whatever else does
EXPECTED = {
    "cleargrads": {"from-pytorch.html", "getting-started.html", "tutorial/training.html"},
    "zero_grad": {"from-pytorch.html", "how-to-train.html"},
    "softmax_cross_entropy": {"from-pytorch.html", "tutorial/training.html"},
}
_TAG = re.compile(r"<[^>]+>")


class _Loader(yaml.SafeLoader):
    """mkdocs.yml may hold tags (``!ENV``, ``!!python/name``): read them as nothing."""


_Loader.add_multi_constructor("", lambda loader, suffix, node: None)


def separator(config: Path = ROOT / "mkdocs.yml") -> str:
    """The search plugin's ``separator`` in ``config`` (lunr's default when it sets none)."""
    plugins = yaml.load(config.read_text(encoding="utf-8"), Loader=_Loader)["plugins"]
    for plugin in plugins:
        if isinstance(plugin, dict) and "search" in plugin:
            return (plugin["search"] or {}).get("separator", r"[\s\-]+")
    return r"[\s\-]+"


def words(text: str, sep: str) -> set[str]:
    """The lowercased words the search makes of an index entry's (HTML) text: each text
    between tags split with ``sep``, entities (``&gt;``) left as they are written."""
    return {w.lower() for part in _TAG.split(text) for w in re.split(sep, part) if w}


def pages(index: dict) -> dict[str, tuple[str, set[str]]]:
    """``{page file: (its plain text, its words)}`` from the index's entries (sections)."""
    sep = index.get("config", {}).get("separator") or separator()
    found: dict[str, tuple[str, set[str]]] = {}
    for doc in index["docs"]:
        page = doc["location"].split("#")[0] or "index.html"
        text = f"{doc.get('title', '')} {doc.get('text', '')}"
        old_text, old_words = found.get(page, ("", set()))
        plain = html.unescape(_TAG.sub(" ", text))
        found[page] = (old_text + " " + plain, old_words | words(text, sep))
    return found


def misses(index: dict) -> list[str]:
    """One line per identifier a page shows but the search would not find there."""
    problems = []
    by_page = pages(index)
    for name in IDENTIFIERS:
        shown = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])", re.IGNORECASE)
        holding = {p for p, (text, _) in by_page.items() if shown.search(text)}
        found = {p for p, (_, ws) in by_page.items() if name.lower() in ws}
        for page in sorted(holding - found):
            problems.append(f"{name}: on {page}, but not one of its search words")
        for page in sorted(EXPECTED.get(name, set()) - found):
            problems.append(f"{name}: the search does not find it on {page}")
        if not holding:
            problems.append(f"{name}: no page of the index holds it")
    return problems


def main(argv: list[str]) -> int:
    """Check the site folder ``argv[0]`` (default ``site``); print each miss."""
    site = Path(argv[0] if argv else ROOT / "site")
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    problems = misses(index)
    if problems:
        print(f"{len(problems)} identifier(s) the search misses ({site / 'search'}):")
        for line in problems:
            print(f"  {line}")
        return 1
    print(f"the search finds {', '.join(IDENTIFIERS)} on every page that shows them")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
