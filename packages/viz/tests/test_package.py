"""The package's API: each module's ``__all__``, gathered by the package."""

import zerograd_viz
from zerograd_viz import dot, notebook, plots, render


def test_the_package_exports_exactly_its_modules_public_names_each_once():
    assert sorted(zerograd_viz.__all__) == [
        "GraphView", "GraphvizError", "GraphvizNotFoundError", "GraphvizTimeoutError",
        "get_dot_graph", "plot_decision_boundary", "plot_dot_graph", "plot_history",
        "predict_grid", "show",
    ]  # fmt: skip
    assert len(set(zerograd_viz.__all__)) == len(zerograd_viz.__all__)
    for module in (dot, notebook, plots, render):
        for name in module.__all__:
            assert getattr(zerograd_viz, name) is getattr(module, name)
    namespace = {}
    exec("from zerograd_viz import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(zerograd_viz.__all__)
