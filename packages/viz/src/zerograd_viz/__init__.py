"""zerograd-viz: draw zerograd's computational graphs and training curves.

Graphs go out as Graphviz DOT text (``get_dot_graph``), as PNG/SVG/PDF files rendered by
Graphviz's ``dot`` program (``plot_dot_graph``), or inline in Jupyter (``show``).
Training plots (``plot_history``, ``plot_decision_boundary``) need matplotlib:
``pip install 'zerograd-viz[plot]'``.

Examples:
    >>> import numpy as np
    >>> from zerograd import Variable
    >>> from zerograd_viz import get_dot_graph
    >>> x = Variable(np.array(2.0), name="x")
    >>> print(get_dot_graph(x ** 2).splitlines()[2])
    1 [label="Pow", color=lightblue, style=filled, shape=box]
"""

from importlib.metadata import version as _distribution_version

from .dot import get_dot_graph
from .notebook import GraphView, show
from .plots import plot_decision_boundary, plot_history, predict_grid
from .render import GraphvizError, GraphvizNotFoundError, GraphvizTimeoutError, plot_dot_graph

__version__ = _distribution_version("zerograd-viz")  # the repository's VERSION file

__all__ = [
    "GraphView",
    "GraphvizError",
    "GraphvizNotFoundError",
    "GraphvizTimeoutError",
    "get_dot_graph",
    "plot_decision_boundary",
    "plot_dot_graph",
    "plot_history",
    "predict_grid",
    "show",
]
