"""``show``: a Variable's graph displayed inline as SVG in Jupyter."""

from __future__ import annotations

import os
import shutil

from zerograd import Variable

from .dot import get_dot_graph
from .render import INSTALL_HINT, GraphvizNotFoundError, render_dot, write_image


class GraphView:
    """A computational graph that Jupyter displays as SVG (through Graphviz's ``dot``).

    ``source`` is the DOT text. The SVG is rendered on first display and kept. Without
    Graphviz, Jupyter shows the text ``repr``, which says how to install it.

    >>> import numpy as np
    >>> from zerograd import Variable
    >>> view = GraphView(get_dot_graph(Variable(np.array(1.0), name="x")))
    >>> view.source.splitlines()[1]
    '0 [label="x: () float64", color=orange, style=filled]'
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self._svg: str | None = None

    def svg(self) -> str:
        """The graph rendered as SVG text (``GraphvizNotFoundError`` without Graphviz)."""
        if self._svg is None:
            self._svg = render_dot(self.source, "svg").decode("utf-8")
        return self._svg

    def save(self, to_file: str | os.PathLike[str]) -> str:
        """Write the graph to ``to_file`` (.png, .svg or .pdf); the path as a string."""
        return write_image(self.source, to_file)

    def _repr_svg_(self) -> str | None:
        # Jupyter's hook. None (not an exception) without Graphviz: Jupyter then falls back
        # to __repr__, which carries the install instructions.
        try:
            return self.svg()
        except GraphvizNotFoundError:
            return None

    def _counts(self) -> tuple[int, int]:
        lines = self.source.splitlines()[1:-1]
        edges = sum(1 for line in lines if " -> " in line and "[" not in line)
        return len(lines) - edges, edges

    def __repr__(self) -> str:
        nodes, edges = self._counts()
        text = f"<GraphView: {nodes} nodes, {edges} edges; .source holds the DOT text>"
        if shutil.which("dot") is None:
            text += f"\nGraphviz's `dot` was not found, so no image is shown. {INSTALL_HINT}"
        return text

    def __str__(self) -> str:
        return self.source


def show(output: Variable, verbose: bool = True) -> GraphView:
    """The graph that produced ``output``, shown inline as SVG when it ends a Jupyter cell.

    >>> import numpy as np
    >>> from zerograd import Variable
    >>> x = Variable(np.array(2.0), name="x")
    >>> show(x * x)  # in a notebook cell: the graph appears   # doctest: +SKIP
    """
    return GraphView(get_dot_graph(output, verbose))
