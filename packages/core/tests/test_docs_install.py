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


def _required(path):
    """The import names of what a pyproject.toml requires (its own and its siblings' pins)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    hooks = data["tool"]["hatch"]["metadata"]["hooks"]["custom"]
    reqs = [*data["project"].get("dependencies", []), *hooks.get("dependencies", [])]
    names = {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower().replace("-", "_") for r in reqs}
    return {n.replace(".", "_") for n in names}


def _module_level_imports(src):
    """Each top-level name imported at module level (not inside functions, not guarded by
    try or TYPE_CHECKING) by the package's source files, with one file importing it (its
    path under ``src``). A name one file imports in a module it needs, another may import
    in a testing helper: every file is read, each import kept with a file not exempt."""
    import ast

    found = {}
    for path in sorted(src.rglob("*.py"), key=lambda p: "testing" in p.parts):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:  # (only statements at the module's top)
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.partition(".")[0], path.relative_to(src))
    return found


def test_every_module_level_import_of_a_package_is_a_declared_dependency(projects):
    """A module imported where a package loads must arrive with the package: an import that
    only a sibling brings (zerograd-nn's pluggy came through zerograd) breaks when that
    sibling stops needing it. Two kinds of module are loaded only by their users: a
    ``testing`` package (pytest's plugins and helpers, which need pytest and numpy), and a
    module that a ``zerograd_nn.kernels`` entry point names (zerograd-nn loads it)."""
    import sys

    missing = []
    for name, (folder, package, _) in projects.items():
        base = ROOT / "packages" / folder
        required = _required(base / "pyproject.toml")
        data = tomllib.loads((base / "pyproject.toml").read_text(encoding="utf-8"))
        for_nn = data["project"].get("entry-points", {}).get("zerograd_nn.kernels", {})
        loaded_by_nn = {Path(*m.split(".")).with_suffix(".py") for m in for_nn.values()}
        for module, where in _module_level_imports(base / "src").items():
            if module in sys.stdlib_module_names or module in (package, "__future__"):
                continue
            if "testing" in where.parts or (where in loaded_by_nn and module == "zerograd_nn"):
                continue
            if module not in required:
                missing.append(f"{name}: {module} ({where})")
    assert missing == []
