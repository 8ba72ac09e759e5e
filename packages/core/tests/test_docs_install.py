"""The install instructions of the README and docs name extras and imports that exist.

docs/index.md and README.md give, per distribution, the ``pip install`` line (with extras
such as ``'zerograd-nn[images,progress]'``) and the import name, and list what each extra
of ``zerograd`` installs; the package READMEs and the distributed, ONNX and GPU pages give
install lines too. Each is read here against the packages' ``pyproject.toml``.
"""

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later

ROOT = Path(__file__).resolve().parents[3]
PAGES = [
    "README.md",
    "docs/index.md",
    "docs/distributed.md",
    "docs/export-onnx.md",
    "docs/tutorial/gpu.md",
    *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("packages/*/README.md")),
]


def _projects():
    """distribution name -> (folder, import name, extras with their requirements)."""
    projects = {}
    for path in sorted(ROOT.glob("packages/*/pyproject.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        hooks = data["tool"]["hatch"]["metadata"]["hooks"]["custom"]
        extras = {**data["project"].get("optional-dependencies", {})}
        extras.update(hooks.get("optional-dependencies", {}))  # the extras on siblings
        (package,) = data["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
        projects[data["project"]["name"]] = (path.parent.name, Path(package).name, extras)
    return projects


@pytest.fixture(scope="module")
def projects():
    if not (ROOT / "packages" / "core" / "pyproject.toml").is_file():
        pytest.skip(f"{ROOT} is no repository checkout (tests run from an installed package)")
    return _projects()


def _read(page):
    return (ROOT / page).read_text(encoding="utf-8")


def _table(text, header):
    """The rows (lists of cells) of the markdown table whose header line starts so."""
    lines = text.split(header, 1)[1].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


@pytest.mark.parametrize("page", PAGES)
def test_every_extra_an_install_line_names_exists(page, projects):
    folders = {folder: name for name, (folder, _, _) in projects.items()}
    text = _read(page)
    named = re.findall(r"(?<![\w/.-])(zerograd(?:-[a-z]+)?)\[([\w,]+)\]", text)
    named += [(folders[f], e) for f, e in re.findall(r"\./packages/([\w-]+)\[([\w,]+)\]", text)]
    for dist, extras in named:
        assert dist in projects, f"{page}: no distribution {dist!r}"
        missing = set(extras.split(",")) - set(projects[dist][2])
        assert not missing, f"{page}: {dist} has no extra {sorted(missing)}"


def test_the_index_says_what_each_extra_of_zerograd_installs(projects):
    rows = _table(_read("docs/index.md"), "| extra | installs |")
    extras = projects["zerograd"][2]
    listed = {}
    for command, installs in rows:
        (extra,) = re.findall(r"zerograd\[(\w+)\]", command)
        said = re.sub(r"\(.*?\)", "", installs)  # the parenthesis is advice, not the extra's
        listed[extra] = set(re.findall(r"zerograd-\w+", said))
        assert said.startswith("zerograd + ")
    pins = {name: {r.split("{")[0] for r in reqs} for name, reqs in extras.items()}
    assert listed == pins


@pytest.mark.parametrize(
    ("page", "header", "columns"),
    [
        ("docs/index.md", "| you want | `pip install` | import |", (1, 2)),
        ("README.md", "| you want | folder | `pip install` (once published) | import |", (2, 3)),
    ],
)
def test_each_row_names_the_import_of_the_distribution_it_installs(page, header, columns, projects):
    rows = _table(_read(page), header)
    assert len(rows) >= 6
    imports = {name: package for name, (_, package, _) in projects.items()}
    for row in rows:
        pip, imported = (row[c] for c in columns)
        words = re.sub(r"\[[\w,]+\]", "", re.sub(r"\(.*?\)", "", pip))
        dists = set(re.findall(r"zerograd(?:-\w+)?", words))
        assert dists <= set(imports), row
        assert set(re.findall(r"`(\w+)`", imported)) <= {imports[d] for d in dists}, row
        if page == "README.md":  # the folder column: the distribution that folder builds
            (folder,) = re.findall(r"`packages/([\w-]+)`", row[1])
            assert {d for d in dists if projects[d][0] == folder} == dists, row
