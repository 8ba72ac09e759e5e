"""The site link checker finds missing files, missing anchors and links outside site_url."""

from __future__ import annotations

from pathlib import Path

from check_links import broken_links


def _site(tmp_path: Path, pages: dict[str, str]) -> Path:
    for name, body in pages.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"<html><body>{body}</body></html>")
    locs = "".join(f"<loc>{n}</loc>" for n in pages if n != "404.html")
    (tmp_path / "sitemap.xml").write_text(f"<urlset>{locs}</urlset>")
    return tmp_path


def test_a_clean_site_has_no_broken_links(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {
            "index.html": '<a href="guide/a.html#part">a</a><a href="https://x.org/">x</a>',
            "guide/a.html": '<h2 id="part">Part</h2><a href="../index.html">home</a>',
            "404.html": '<link href="/zerograd/index.html"><a href="/zerograd/guide/a.html">',
        },
    )
    assert broken_links(site, "/zerograd/") == []


def test_each_kind_of_broken_link_is_reported(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {
            "index.html": '<a href="gone.html">g</a><a href="a.html#nowhere">n</a>',
            "a.html": "<p>no anchors</p>",
            "404.html": '<script src="/assets/app.js"></script>',
            "cdn.html": '<script src="https://unpkg.com/shim"></script>',
        },
    )
    (site / "sitemap.xml").write_text("<urlset></urlset>")
    assert broken_links(site, "/zerograd/") == [
        "404.html: /assets/app.js is outside /zerograd/",
        "cdn.html: loads https://unpkg.com/shim from the network",
        "index.html: gone.html (no such file)",
        "index.html: a.html#nowhere (no such anchor)",
        "sitemap.xml lists 0 pages, the site has 3",
    ]
