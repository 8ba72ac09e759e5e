"""``show``: a Variable's graph displayed inline as SVG in Jupyter."""

from __future__ import annotations

import os
import shutil

from zerograd import Variable

from .dot import get_dot_graph
from .render import (
    DEFAULT_TIMEOUT,
    INSTALL_HINT,
    GraphvizError,
    GraphvizNotFoundError,
    check_timeout,
    render_dot,
    write_image,
)


class GraphView:
    """A computational graph that Jupyter displays as SVG (through Graphviz's ``dot``).

    The SVG is rendered on first display and kept. Without Graphviz, or when ``dot`` fails,
    Jupyter shows the text ``repr``, which says how to install it or what went wrong;
    ``str()`` gives the DOT text.

    Args:
        source: the DOT text, e.g. from ``get_dot_graph``; kept as ``.source``.
        timeout: seconds ``dot`` may run per rendering (``None``, the default: no limit);
            kept as ``.timeout``.

    Attributes:
        source: the DOT text.
        timeout: seconds ``dot`` may run per rendering.

    Raises:
        TypeError: ``source`` is not a str, or ``timeout`` is not a number or ``None``.
        ValueError: ``timeout`` is not more than 0.

    Examples:
        >>> import numpy as np
        >>> from zerograd import Variable
        >>> view = GraphView(get_dot_graph(Variable(np.array(1.0), name="x")))
        >>> view.source.splitlines()[1]
        '0 [label="x: () float64", color=orange, style=filled]'
    """

    def __init__(self, source: str, *, timeout: float | None = DEFAULT_TIMEOUT) -> None:
        if not isinstance(source, str):
            raise TypeError(
                f"GraphView: source must be DOT text (a str, e.g. from get_dot_graph(output)), "
                f"got {type(source).__qualname__}; show(output) builds it for you"
            )
        check_timeout("GraphView", timeout)
        self.source = source
        self.timeout = timeout
        self._svg: str | None = None
        self._error: str | None = None  # why the last display had no image

    def svg(self) -> str:
        """Render the graph as SVG text (once; later calls return the kept text).

        Returns:
            The SVG document as a str.

        Raises:
            GraphvizError: ``dot`` is missing, timed out or failed.
        """
        if self._svg is None:
            self._svg = render_dot(self.source, "svg", timeout=self.timeout).decode("utf-8")
        return self._svg

    def save(self, to_file: str | os.PathLike[str]) -> str:
        """Write the graph to an image file.

        Args:
            to_file: the file (``.png``, ``.svg`` or ``.pdf``; the extension picks the
                format). Only written when ``dot`` succeeds.

        Returns:
            The path written, as a string.

        Raises:
            ValueError: the extension is not a supported format.
            PermissionError: ``to_file`` exists and is read-only.
            GraphvizError: ``dot`` is missing, timed out or failed.
        """
        return write_image(self.source, to_file, timeout=self.timeout)

    def _repr_svg_(self) -> str | None:
        # Jupyter's hook. None (not an exception) when dot is missing or fails: Jupyter then
        # falls back to __repr__, which says how to install it or what went wrong.
        try:
            return self.svg()
        except GraphvizNotFoundError:
            return None
        except GraphvizError as e:
            self._error = str(e)
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
        elif self._error is not None:
            text += f"\nNo image is shown: {self._error}"
        return text

    def __str__(self) -> str:
        return self.source


def show(
    output: Variable, verbose: bool = True, *, timeout: float | None = DEFAULT_TIMEOUT
) -> GraphView:
    """Return the graph that produced ``output``, shown inline as SVG in Jupyter.

    The graph appears when the returned object ends a notebook cell.

    Args:
        output: the Variable whose graph is shown.
        verbose: label variables with their shape and dtype too.
        timeout: seconds Graphviz's ``dot`` may run when the graph is displayed or saved
            (``None``, the default: no limit); past it, ``dot`` is killed and no image is
            shown.

    Returns:
        A ``GraphView`` holding the DOT text.

    Raises:
        TypeError: ``output`` is not a Variable, or an argument has the wrong type.
        ValueError: ``timeout`` is not more than 0.

    Examples:
        >>> import numpy as np
        >>> from zerograd import Variable
        >>> x = Variable(np.array(2.0), name="x")
        >>> show(x * x)  # in a notebook cell: the graph appears   # doctest: +SKIP
    """
    check_timeout("show", timeout)
    return GraphView(get_dot_graph(output, verbose), timeout=timeout)


__all__ = ["GraphView", "show"]
