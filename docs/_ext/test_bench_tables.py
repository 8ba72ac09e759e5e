"""The benchmarks page splits results.md into one table per group, notes below each table."""

from __future__ import annotations

import re

from bench_tables import RESULTS, exclude_gpu_tables, on_page_markdown, render, split_results

RESULTS_MD = """# Benchmark results

Python 3.11, 2 CPUs.

| group | case | zerograd | numpy-hand | PyTorch | zerograd ratio | target | met | note |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
| overhead | add | 3.19 | 0.44 | 3.77 (8.56×) | 7.24× | ≤ 3× | **no** | same gradient ✓ |
| overhead | a \\| b | 4.0 | 1.0 | 5.0 | 4.00× |  | – |  |
| memory | RSS growth | 0.05 | – | 4.59 | – | flat | yes | RSS every 10 steps |

<!-- bench_gpu: begin -->
## GPU

| case | zerograd-cupy |
| --- | ---: |
| step | 1.82 |

- step: a note
<!-- bench_gpu: end -->
"""


def test_each_group_gets_its_columns_and_its_notes() -> None:
    assert render(RESULTS_MD).splitlines() == [
        "",
        "Python 3.11, 2 CPUs.",
        "",
        "",
        "## overhead",
        "",
        '<div markdown="1" data-search-exclude>',
        "",
        "| case | zerograd | numpy-hand | PyTorch | ratio | target | met |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        "| add (1) | 3.19 | 0.44 | 3.77 (8.56×) | 7.24× | ≤ 3× | **no** |",
        "| a \\| b | 4.0 | 1.0 | 5.0 | 4.00× |  | – |",
        "",
        "1. same gradient ✓",
        "",
        "</div>",
        "",
        "## memory",
        "",
        '<div markdown="1" data-search-exclude>',
        "",
        "| case | zerograd | PyTorch | target | met |",
        "| --- | --- | --- | --- | --- |",
        "| RSS growth (1) | 0.05 | 4.59 | flat | yes |",
        "",
        "1. RSS every 10 steps",
        "",
        "</div>",
    ]


def test_the_gpu_section_is_shown_once_its_table_left_out_of_search() -> None:
    # render drops the results file's copy (above); the page's copy gets the search div
    page = "# Benchmarks\n\n" + RESULTS_MD[RESULTS_MD.index("<!-- bench_gpu") :] + "\nAfter.\n"
    assert exclude_gpu_tables(page).splitlines() == [
        "# Benchmarks",
        "",
        "## GPU",
        "",
        '<div markdown="1" data-search-exclude>',
        "",
        "| case | zerograd-cupy |",
        "| --- | ---: |",
        "| step | 1.82 |",
        "",
        "- step: a note",
        "",
        "</div>",
        "",
        "After.",
    ]


def test_a_file_without_a_table_is_shown_as_it_is() -> None:
    assert render("# Benchmark results\n\nNothing ran.\n") == "\nNothing ran.\n"


def test_every_cell_of_the_real_results_reaches_the_page() -> None:
    # the page rearranges the file, never drops or rewrites a number or a note
    text = RESULTS.read_text(encoding="utf-8")
    _, header, rows, _ = split_results(text)
    page = render(text)
    assert rows, f"{RESULTS} has no table"
    cells = {cell for row in rows for cell in row if cell not in ("", "–")}
    assert sorted(cell for cell in cells if cell not in page) == []


def test_a_group_marker_shows_the_first_paragraph_and_those_groups_a_level_down() -> None:
    assert render(RESULTS_MD, "mem").splitlines() == [
        "",
        "Python 3.11, 2 CPUs.",
        "",
        "### memory",
        "",
        '<div markdown="1" data-search-exclude>',
        "",
        "| case | zerograd | PyTorch | target | met |",
        "| --- | --- | --- | --- | --- |",
        "| RSS growth (1) | 0.05 | 4.59 | flat | yes |",
        "",
        "1. RSS every 10 steps",
        "",
        "</div>",
    ]


def test_the_distributed_page_shows_the_benchs_rows_and_no_numbers_of_its_own() -> None:
    # issue 42: the page had its own table (111 % weak scaling) beside the bench's 61 %
    page = (RESULTS.parents[1] / "docs" / "distributed.md").read_text(encoding="utf-8")
    assert "<!-- benchmark-results: data-parallel -->" in page
    assert not re.search(r"efficiency[^.]*\d+ ?%|\d+ ?% (weak|efficien)", page)
    assert not re.search(r"^\| run \|", page, re.M)  # no hand-made table of runs
    shown = on_page_markdown(page)
    _, header, rows, _ = split_results(RESULTS.read_text(encoding="utf-8"))
    ours = [r for r in rows if r[header.index("group")].startswith("data-parallel")]
    assert ours, "results.md has no data-parallel rows"
    for row in ours:
        for cell in row[header.index("group") + 1 :]:
            if cell not in ("", "–", "-"):
                assert cell in shown, f"{cell!r} of results.md is not on the page"
