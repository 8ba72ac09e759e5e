"""Static-graph replay: record a step's array work once, replay it with no graph objects.

:func:`static_graph` is the entry point; see the "Static graphs" docs page. The modules:
:mod:`.trace` (the recorder), :mod:`.compare` (do two traces agree?), :mod:`.program`
(a trace as generated Python code), :mod:`.calls` (the key of a call's arguments) and
:mod:`.graph` (the decorator's bookkeeping).
"""

from .graph import StaticGraph, StaticGraphWarning, static_graph

__all__ = ["StaticGraph", "StaticGraphWarning", "static_graph"]
