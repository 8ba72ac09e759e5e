"""show / GraphView: the SVG Jupyter displays, and the fallback without Graphviz."""

import xml.etree.ElementTree as ET

import pytest

from zerograd import Variable
from zerograd_viz import GraphView, GraphvizNotFoundError, get_dot_graph, show

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def y(arr):
    x = Variable(arr(2.0), name="x")
    out = x * x
    out.name = "y"
    return out


def test_show_holds_the_dot_text(y):
    view = show(y)
    assert isinstance(view, GraphView)
    assert view.source == get_dot_graph(y) == str(view)
    assert show(y, verbose=False).source == get_dot_graph(y, verbose=False)
    assert repr(view).startswith("<GraphView: 3 nodes, 3 edges; .source holds the DOT text>")


def test_repr_svg_is_the_rendered_graph(dot, y):
    view = show(y)
    svg = view._repr_svg_()
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    nodes = [g for g in root.iter(f"{SVG}g") if g.get("class") == "node"]
    texts = sorted(t.text for n in nodes for t in n.iter(f"{SVG}text"))
    assert texts == ["Mul", "x: () float64", "y: () float64"]
    assert view._repr_svg_() is svg  # rendered once, then kept
    assert view.svg() is svg


def test_save_writes_the_requested_file(dot, y, tmp_path):
    out = tmp_path / "view graph.pdf"
    assert show(y).save(out) == str(out)
    assert out.read_bytes()[:5] == b"%PDF-"


def test_without_graphviz_the_text_repr_says_how_to_install(y, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot here
    view = show(y)
    assert view._repr_svg_() is None  # Jupyter falls back to the text repr
    assert "apt-get install graphviz" in repr(view)
    assert "brew install graphviz" in repr(view)
    with pytest.raises(GraphvizNotFoundError, match="conda install graphviz"):
        view.svg()
