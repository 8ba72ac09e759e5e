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

__version__ = _distribution_version("zerograd-viz")  # the repository's VERSION file

from . import dot, notebook, plots, render
from .dot import *  # noqa: F403
from .notebook import *  # noqa: F403
from .plots import *  # noqa: F403
from .render import *  # noqa: F403

# each module's __all__ names its part of the package's API, next to the definitions
__all__: list[str] = []
__all__ += dot.__all__
__all__ += notebook.__all__
__all__ += plots.__all__
__all__ += render.__all__
