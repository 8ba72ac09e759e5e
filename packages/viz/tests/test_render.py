"""plot_dot_graph / render_dot: real Graphviz output, errors, file names, nothing else written."""

import os
import subprocess
import sys
import types
import xml.etree.ElementTree as ET

import pytest

import zerograd.functions as F
from zerograd import Variable
from zerograd_viz import GraphvizError, GraphvizNotFoundError, get_dot_graph, plot_dot_graph
from zerograd_viz.render import render_dot

SVG = "{http://www.w3.org/2000/svg}"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def svg_parts(path_or_text):
    """(node groups, edge groups) of a Graphviz SVG."""
    if isinstance(path_or_text, str) and path_or_text.lstrip().startswith("<"):
        root = ET.fromstring(path_or_text)
    else:
        root = ET.parse(path_or_text).getroot()
    groups = list(root.iter(f"{SVG}g"))
    return (
        [g for g in groups if g.get("class") == "node"],
        [g for g in groups if g.get("class") == "edge"],
    )


def node_texts(node):
    return [t.text for t in node.iter(f"{SVG}text")]


@pytest.fixture
def y(arr):
    x = Variable(arr([1.0, 2.0]), name="x")
    w = Variable(arr([3.0, 4.0]), name="w")
    out = F.sum(x * w + x)
    out.name = "y"
    return out


@pytest.fixture
def no_ipython(monkeypatch):
    monkeypatch.setitem(sys.modules, "IPython", None)  # import IPython -> ImportError


def files_under(folder):
    return sorted(
        os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs
    )


def test_svg_nodes_and_edges_counted(dot, tmp_path, y, no_ipython):
    out = tmp_path / "graph.svg"
    assert plot_dot_graph(y, verbose=True, to_file=str(out)) == str(out)
    nodes, edges = svg_parts(out)
    # x, w, Mul, x*w, Add, x*w+x, Sum, y
    assert len(nodes) == 8 and len(edges) == 8
    labels = sorted(" ".join(node_texts(n)) for n in nodes)
    assert labels == sorted(
        ["x: (2,) float64", "w: (2,) float64", "Mul", "(2,) float64", "Add", "(2,) float64"]
        + ["Sum", "y: () float64"]
    )
    titles = [n.find(f"{SVG}title").text for n in nodes]
    assert sorted(titles, key=int) == [str(i) for i in range(8)]  # get_dot_graph's node ids


def test_png_and_pdf_by_extension(dot, tmp_path, y, no_ipython):
    png = plot_dot_graph(y, to_file=tmp_path / "g.png")
    pdf = plot_dot_graph(y, to_file=tmp_path / "g.PDF")
    assert (tmp_path / "g.png").read_bytes()[:8] == PNG_MAGIC
    assert (tmp_path / "g.PDF").read_bytes()[:5] == b"%PDF-"
    assert (png, pdf) == (str(tmp_path / "g.png"), str(tmp_path / "g.PDF"))
    assert files_under(tmp_path) == ["g.PDF", "g.png"]


def test_default_file_is_graph_png_in_the_working_directory(dot, tmp_path, y, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "IPython", None)
    assert plot_dot_graph(y) == "graph.png"
    assert files_under(tmp_path) == ["graph.png"]
    assert (tmp_path / "graph.png").read_bytes()[:8] == PNG_MAGIC


def test_labels_survive_rendering(dot, tmp_path, arr, no_ipython):
    names = ['say "hi"', "ends with \\", "a\\nb", "ünïcode"]
    xs = [Variable(arr(1.0), name=n) for n in names]
    total = xs[0] + xs[1] + xs[2] + xs[3]
    nodes, _ = svg_parts(plot_dot_graph(total, verbose=False, to_file=tmp_path / "n.svg"))
    shown = [node_texts(n) for n in nodes]
    for name in names:
        assert [name] in shown
    x = Variable(arr(1.0), name="two\nlines")
    nodes, _ = svg_parts(render_dot(get_dot_graph(x, verbose=False), "svg").decode())
    assert node_texts(nodes[0]) == ["two", "lines"]


def test_file_names_with_spaces_and_quotes_are_safe(dot, tmp_path, y, no_ipython):
    name = "my graph 'single' \"double\" $(touch pwned) ; rm -rf x &.svg"
    out = tmp_path / name
    assert plot_dot_graph(y, to_file=out) == str(out)
    assert files_under(tmp_path) == [name]
    assert len(svg_parts(out)[0]) == 8


def test_unsupported_extension_is_a_value_error(tmp_path, y):
    for bad in ("graph.jpg", "graph", "graph.dot"):
        with pytest.raises(ValueError, match=r"to_file=.*use one of \.png, \.svg, \.pdf"):
            plot_dot_graph(y, to_file=tmp_path / bad)
    assert files_under(tmp_path) == []


def test_missing_folder_is_reported(dot, tmp_path, y):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        plot_dot_graph(y, to_file=tmp_path / "nope" / "g.png")


def test_missing_dot_says_how_to_install(tmp_path, y, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(GraphvizNotFoundError) as info:
        plot_dot_graph(y, to_file=tmp_path / "g.png")
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "`dot` program was not found on PATH" in msg
    for hint in ("apt-get install graphviz", "brew install graphviz", "conda install graphviz"):
        assert hint in msg
    assert "get_dot_graph(output) still works" in msg
    assert files_under(tmp_path) == []
    assert get_dot_graph(y).startswith("digraph g {")  # still works without Graphviz


@pytest.mark.skipif(os.name == "nt", reason="the fake dot is a POSIX shell script")
def test_failing_dot_reports_its_stderr(tmp_path, y, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dot"
    fake.write_text(
        "#!/bin/sh\necho \"Error: <stdin>: syntax error in line 3 near 'boom'\" >&2\nexit 3\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(GraphvizError, match="failed with exit code 3") as info:
        plot_dot_graph(y, to_file=tmp_path / "g.svg")
    assert "syntax error in line 3 near 'boom'" in str(info.value)
    assert not isinstance(info.value, GraphvizNotFoundError)
    assert not (tmp_path / "g.svg").exists()


def test_real_dot_error_carries_graphviz_message(dot):
    with pytest.raises(GraphvizError, match="syntax error"):
        render_dot("digraph g { 0 -> }", "svg")


def test_returns_ipython_objects_when_ipython_is_importable(dot, tmp_path, y, monkeypatch):
    made = []

    class Image:
        def __init__(self, filename):
            made.append(("Image", filename))

    class SVGDisplay:
        def __init__(self, filename):
            made.append(("SVG", filename))

    display = types.SimpleNamespace(Image=Image, SVG=SVGDisplay)
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(display=display))
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    assert isinstance(plot_dot_graph(y, to_file=tmp_path / "a.png"), Image)
    assert isinstance(plot_dot_graph(y, to_file=tmp_path / "b.svg"), SVGDisplay)
    assert plot_dot_graph(y, to_file=tmp_path / "c.pdf") == str(tmp_path / "c.pdf")
    assert made == [("Image", str(tmp_path / "a.png")), ("SVG", str(tmp_path / "b.svg"))]


def test_nothing_written_to_home_or_temp(dot, tmp_path):
    """DeZero wrote ~/.dezero/tmp_graph.dot; here only the requested file appears."""
    home, tmp, work = tmp_path / "home", tmp_path / "tmp", tmp_path / "work"
    for d in (home, tmp, work):
        d.mkdir()
    script = (
        "import numpy as np, zerograd_viz as zv\n"
        "from zerograd import Variable\n"
        "x = Variable(np.array(1.0), name='x')\n"
        "y = x * x + x\n"
        "zv.plot_dot_graph(y)\n"
        "zv.plot_dot_graph(y, to_file='g.svg')\n"
        "zv.show(y).svg()\n"
    )
    env = dict(os.environ, HOME=str(home), TMPDIR=str(tmp), TEMP=str(tmp), TMP=str(tmp))
    env.pop("XDG_CACHE_HOME", None)
    env.pop("XDG_CONFIG_HOME", None)
    subprocess.run([sys.executable, "-c", script], cwd=work, env=env, check=True)
    # fontconfig (Graphviz's font library) may refresh its own cache on a stale system;
    # that is not our doing, so it is the one place ignored.
    written = [f for f in files_under(tmp_path) if not f.startswith("home/.cache/fontconfig")]
    assert written == ["work/g.svg", "work/graph.png"]


def test_ten_thousand_node_graph_renders(dot, arr):
    x = Variable(arr(0.1), name="x")
    y = x
    for _ in range(5000):
        y = F.sin(y)
    nodes, edges = svg_parts(render_dot(get_dot_graph(y, verbose=False), "svg").decode())
    assert len(nodes) == 10001 and len(edges) == 10000
