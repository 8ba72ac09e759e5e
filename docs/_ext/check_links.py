"""Check the links of a built site offline: ``python docs/_ext/check_links.py SITE_DIR``.

Every ``href`` and ``src`` of every HTML page that points inside the site must name a file
that exists, and a ``#fragment`` must name an ``id`` on the target page; no script,
stylesheet or image may come from another host (the site works offline, from disk). Links inside the
site are relative ones and root-relative ones under the path of ``site_url`` (the 404 page
uses those, so that it works from any depth); other schemes and hosts are left alone (no
network). The sitemap must list every page. Exits 1 with one line per broken link.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[2]


class _Page(HTMLParser):
    """The links (tag, attribute value) and the ids of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.remote: list[str] = []  # what the page would fetch from another host

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif name in ("href", "src") and not (tag == "link" and ("rel", "canonical") in attrs):
                self.links.append(value)
                loads = tag in ("script", "img") or (
                    tag == "link" and ("rel", "stylesheet") in attrs
                )
                if loads and urlsplit(value).netloc:
                    self.remote.append(value)


def site_path(mkdocs_yml: Path) -> str:
    """The path part of ``site_url`` in ``mkdocs_yml`` (``/zerograd/``), or ``/``."""
    m = re.search(r"^site_url:\s*(\S+)", mkdocs_yml.read_text(encoding="utf-8"), re.M)
    path = urlsplit(m[1]).path if m else "/"
    return path if path.endswith("/") else path + "/"


def broken_links(site: Path, base: str) -> list[str]:
    """One line per link of ``site`` whose file or fragment does not exist."""
    pages = {p: _Page() for p in sorted(site.rglob("*.html"))}
    for path, page in pages.items():
        page.feed(path.read_text(encoding="utf-8"))
    problems = []
    for path, page in pages.items():
        problems += [
            f"{path.relative_to(site)}: loads {url} from the network" for url in page.remote
        ]
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                continue  # another site: not checked offline
            if parts.path.startswith("/"):
                if not parts.path.startswith(base):
                    problems.append(f"{path.relative_to(site)}: {link} is outside {base}")
                    continue
                target = site / unquote(parts.path[len(base) :])
            else:
                target = (path.parent / unquote(parts.path)) if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.resolve().is_file():
                problems.append(f"{path.relative_to(site)}: {link} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages.get(target.resolve(), pages.get(target))
                if ids is not None and unquote(parts.fragment) not in ids.ids:
                    problems.append(f"{path.relative_to(site)}: {link} (no such anchor)")
    sitemap = site / "sitemap.xml"
    listed = sitemap.read_text(encoding="utf-8").count("<loc>") if sitemap.is_file() else 0
    if listed < len(pages) - 1:  # every page but 404.html
        problems.append(f"sitemap.xml lists {listed} pages, the site has {len(pages) - 1}")
    return problems


def main(argv: list[str]) -> int:
    """Check the site folder ``argv[0]`` (default ``site``); print what is broken."""
    site = Path(argv[0] if argv else ROOT / "site").resolve()
    problems = broken_links(site, site_path(ROOT / "mkdocs.yml"))
    for line in problems:
        print(line)
    count = len(list(site.rglob("*.html")))
    print(f"{len(problems)} broken links in {count} pages of {site}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
