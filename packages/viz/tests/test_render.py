"""plot_dot_graph / render_dot: real Graphviz output, errors, file names, nothing else written."""

import inspect
import os
import shutil
import subprocess
import sys
import time
import types
import xml.etree.ElementTree as ET

import pytest

import zerograd.functions as F
import zerograd_viz.render
from zerograd import Variable
from zerograd_viz import (
    GraphView,
    GraphvizError,
    GraphvizNotFoundError,
    GraphvizTimeoutError,
    get_dot_graph,
    plot_dot_graph,
    show,
)
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


def test_control_characters_in_names_draw_as_their_escapes(dot, tmp_path, arr):
    x = Variable(arr([1.0, 2.0]), name="a\x00b")  # a NUL ended dot's input: "syntax error"
    y = x * 2.0
    y.name = "bell\x07 esc\x1b del\x7f c1\x85 lone\udc80"
    out = tmp_path / "g.svg"
    plot_dot_graph(y, to_file=out, verbose=False)
    texts = [t.text for t in ET.parse(out).iter("{http://www.w3.org/2000/svg}text")]
    assert sorted(texts) == sorted(
        ["a\\x00b", "Mul", "bell\\x07 esc\\x1b del\\x7f c1\\x85 lone\\udc80"]
    )


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


# -- a dot that never exits, and the same discipline for every argument (issue 11 item 11) --


def _gone(pid):
    """Whether process ``pid`` has ended (a zombie nobody reaped counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.fixture
def hanging_dot(tmp_path, monkeypatch):
    """A fake ``dot`` on PATH that starts a child and never exits; returns its pid folder."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pids = tmp_path / "pids"
    pids.mkdir()
    fake = bin_dir / "dot"
    fake.write_text(
        f"#!/bin/sh\necho $$ > '{pids}/dot'\n{shutil.which('sleep')} 300 &\n"
        f"echo $! > '{pids}/child'\nwait\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    return pids


@pytest.mark.skipif(os.name != "posix", reason="the fake dot is a POSIX shell script")
def test_dot_that_never_exits_is_stopped_and_leaves_nothing(tmp_path, y, hanging_dot):
    out = tmp_path / "g.png"
    out.write_bytes(b"the previous image")
    with pytest.raises(
        GraphvizTimeoutError,
        match=r"`dot -Tpng` \(.*dot\) did not finish within 1.5 s, so it was stopped \(killed "
        r"with any process it started\) and no file was written\. .*pass a larger timeout= "
        r"\(timeout=None waits without limit\)",
    ) as info:
        plot_dot_graph(y, to_file=out, timeout=1.5)
    assert isinstance(info.value, GraphvizError)
    pids = [int((hanging_dot / name).read_text()) for name in ("dot", "child")]
    for _ in range(50):  # the grandchild is reaped by init, which may take a moment
        if all(_gone(pid) for pid in pids):
            break
        time.sleep(0.1)
    assert [_gone(pid) for pid in pids] == [True, True]
    assert out.read_bytes() == b"the previous image"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "g.png", "pids"]


def test_timeout_is_a_keyword_with_no_limit_by_default():
    for fn in (plot_dot_graph, render_dot, show, GraphView):
        params = inspect.signature(fn).parameters
        assert params["timeout"].kind is inspect.Parameter.KEYWORD_ONLY, fn.__name__
        assert params["timeout"].default is None, fn.__name__


@pytest.fixture
def slow_dot(tmp_path, monkeypatch):
    """A fake ``dot`` on PATH that takes a moment and writes a small SVG; returns the
    timeouts ``dot`` ran under (what ``communicate`` was given), one per run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dot"
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>'
    fake.write_text(f"#!/bin/sh\ncat > /dev/null\n{shutil.which('sleep')} 0.2\necho '{svg}'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    timeouts = []

    class Recording(subprocess.Popen):
        def communicate(self, input=None, timeout=None):
            timeouts.append(timeout)
            return super().communicate(input, timeout=timeout)

    fake_subprocess = types.SimpleNamespace(**vars(subprocess))
    fake_subprocess.Popen = Recording
    monkeypatch.setattr(zerograd_viz.render, "subprocess", fake_subprocess)
    return timeouts


@pytest.mark.skipif(os.name != "posix", reason="the fake dot is a POSIX shell script")
def test_dot_runs_without_a_time_limit_unless_given_one(tmp_path, y, slow_dot, no_ipython):
    """As DeZero's: the book's graph of tanh's 7th derivative can take dot over a minute."""
    out = tmp_path / "g.svg"
    assert plot_dot_graph(y, to_file=out) == str(out)
    assert out.read_text().startswith("<svg")
    show(y).save(tmp_path / "v.svg")
    assert show(y).svg().startswith("<svg")
    assert render_dot(get_dot_graph(y), "svg").startswith(b"<svg")
    plot_dot_graph(y, to_file=out, timeout=30)
    assert slow_dot == [None, None, None, None, 30.0]


def test_bad_timeouts_are_refused_before_dot_runs(tmp_path, y, hanging_dot):
    for bad, error, words in (
        (0, ValueError, "more than 0 seconds"),
        (-1, ValueError, "more than 0 seconds"),
        (float("nan"), ValueError, "more than 0 seconds"),
        ("5", TypeError, r"a number of seconds or None .*got str"),
        (True, TypeError, r"a number of seconds or None .*got bool"),
    ):
        with pytest.raises(error, match=f"plot_dot_graph: timeout must be {words}"):
            plot_dot_graph(y, to_file=tmp_path / "g.svg", timeout=bad)
    assert list(hanging_dot.iterdir()) == []  # dot never started
    assert not (tmp_path / "g.svg").exists()


def test_wrong_argument_types_name_plot_dot_graph(tmp_path, y):
    with pytest.raises(TypeError, match=r"plot_dot_graph: to_file must be a file path .*got int"):
        plot_dot_graph(y, to_file=123)
    with pytest.raises(TypeError, match=r"plot_dot_graph: verbose must be True or False, got 'no'"):
        plot_dot_graph(y, "no", to_file=tmp_path / "g.svg")
    with pytest.raises(TypeError, match=r"get_dot_graph\(output\): output must be a zerograd "):
        plot_dot_graph([1.0], to_file=tmp_path / "g.svg")
    with pytest.raises(TypeError, match=r"render_dot: source must be DOT text .*got bytes"):
        render_dot(b"digraph g {}", "svg")
    assert files_under(tmp_path) == []


def test_to_file_that_is_a_folder_or_unwritable(dot, tmp_path, y):
    folder = tmp_path / "out.png"
    folder.mkdir()
    with pytest.raises(IsADirectoryError, match=r"to_file=.*out.png' is a folder; give a file"):
        plot_dot_graph(y, to_file=folder)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "g.svg").write_text("old")
    locked.chmod(0o555)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who can write into read-only folders (root)")
        with pytest.raises(PermissionError, match=r"plot_dot_graph: cannot write to_file="):
            plot_dot_graph(y, to_file=locked / "g.svg")
        assert (locked / "g.svg").read_text() == "old"
    finally:
        locked.chmod(0o755)


def test_failed_write_leaves_the_old_file_and_no_temporary(dot, tmp_path, y, monkeypatch):
    out = tmp_path / "g.svg"
    out.write_text("old")

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match=r"plot_dot_graph: cannot write to_file=.*No space left"):
        plot_dot_graph(y, to_file=out)
    assert out.read_text() == "old"
    assert files_under(tmp_path) == ["g.svg"]


def test_graphs_without_functions_are_drawn(dot, tmp_path, arr, no_ipython):
    lone = Variable(arr([1.0, 2.0]), name="lone")
    nodes, edges = svg_parts(plot_dot_graph(lone, to_file=tmp_path / "a.svg"))
    assert [node_texts(n) for n in nodes] == [["lone: (2,) float64"]] and edges == []
    nodes, edges = svg_parts(plot_dot_graph(Variable(None), to_file=tmp_path / "b.svg"))
    assert len(nodes) == 1 and edges == []


def test_rewrite_keeps_the_file_mode(dot, tmp_path, y, no_ipython):
    out = tmp_path / "g.svg"
    out.write_text("old")
    out.chmod(0o640)
    plot_dot_graph(y, to_file=out)
    assert out.stat().st_mode & 0o777 == 0o640
    assert len(svg_parts(out)[0]) == 8


def test_read_only_file_is_refused_not_replaced(dot, tmp_path, y, no_ipython):
    # the rename that writes in one step never asks the file's permissions: a file made
    # read-only was replaced (and, under another user, changed owner)
    out = tmp_path / "g.svg"
    out.write_text("old")
    out.chmod(0o444)
    words = r"plot_dot_graph: to_file=.*g\.svg' is read-only, so it was left as it is"
    try:
        with pytest.raises(PermissionError, match=words):
            plot_dot_graph(y, to_file=out)
        with pytest.raises(PermissionError, match=words):
            show(y).save(out)
        assert out.read_text() == "old" and out.stat().st_mode & 0o777 == 0o444
        assert files_under(tmp_path) == ["g.svg"]
    finally:
        out.chmod(0o644)
