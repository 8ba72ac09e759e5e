"""DeZero's ``dezero.utils``: gradient checks, graph drawing, ``get_file`` and helpers.

``gradient_check``, ``numerical_grad``, ``array_equal`` and ``array_allclose`` are
:mod:`zerograd.testing`'s; ``get_dot_graph`` and ``plot_dot_graph`` are zerograd-viz's,
imported when first read (an ``ImportError`` naming the package when it is missing);
``get_file`` is :func:`zerograd_nn.datasets.get_file`, and ``cache_dir`` is the folder it
keeps files in (``data_home("downloads")``, read when asked: ``$ZEROGRAD_DATA`` counts).
``logsumexp``, ``get_conv_outsize``, ``get_deconv_outsize`` and ``pair`` are those of
:mod:`zerograd_nn.functional`.
"""

from typing import Any

from zerograd import Variable, as_variable
from zerograd.testing import array_allclose, array_equal, gradient_check, numerical_grad
from zerograd_nn.datasets import DOWNLOADS, data_home, get_file
from zerograd_nn.functional import get_conv_outsize, get_deconv_outsize, logsumexp, pair

from .missing import missing_attribute

__all__ = [
    "Variable",
    "array_allclose",
    "array_equal",
    "as_variable",
    "get_conv_outsize",
    "get_deconv_outsize",
    "get_file",
    "gradient_check",
    "logsumexp",
    "numerical_grad",
    "pair",
]

_VIZ = ("get_dot_graph", "plot_dot_graph")


def __getattr__(name: str) -> Any:
    """``get_dot_graph`` and ``plot_dot_graph`` from zerograd-viz, ``cache_dir`` as it is now."""
    if name in _VIZ:
        try:
            import zerograd_viz
        except ModuleNotFoundError as exc:
            if exc.name != "zerograd_viz":
                raise  # zerograd-viz is there, something it imports is not: that error says
            raise ModuleNotFoundError(
                f"zerograd_nn.dezero.utils.{name} draws the graph with the zerograd-viz "
                f"package, which is not installed: pip install zerograd-viz (plot_dot_graph "
                f"also needs Graphviz's dot program).",
                name="zerograd_viz",
            ) from exc
        return getattr(zerograd_viz, name)
    if name == "cache_dir":
        return str(data_home(DOWNLOADS))
    raise missing_attribute(__name__, name)
