"""show / GraphView: the SVG Jupyter displays, and the fallback without Graphviz."""

import os
import shutil
import xml.etree.ElementTree as ET

import pytest

from zerograd import Variable
from zerograd_viz import (
    GraphView,
    GraphvizNotFoundError,
    GraphvizTimeoutError,
    get_dot_graph,
    show,
)

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


@pytest.mark.skipif(os.name != "posix", reason="the fake dot is a POSIX shell script")
def test_a_hanging_dot_is_stopped_and_the_repr_says_why(y, tmp_path, monkeypatch):
    fake = tmp_path / "dot"
    fake.write_text(f"#!/bin/sh\nexec {shutil.which('sleep')} 300\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    view = show(y, timeout=0.5)
    assert view._repr_svg_() is None  # Jupyter falls back to the text repr
    assert "did not finish within 0.5 s, so it was stopped" in repr(view)
    with pytest.raises(GraphvizTimeoutError, match="timeout=None waits without limit"):
        view.save(tmp_path / "g.svg")
    assert not (tmp_path / "g.svg").exists()


def test_wrong_arguments_are_named(y):
    with pytest.raises(TypeError, match=r"GraphView: source must be DOT text .*got Variable"):
        GraphView(y)
    with pytest.raises(ValueError, match=r"show: timeout must be more than 0 seconds"):
        show(y, timeout=0)
    with pytest.raises(TypeError, match=r"get_dot_graph: verbose must be True or False, got 'yes'"):
        show(y, verbose="yes")
