"""The errors of zerograd-onnx: a model that cannot be exported, an export that disagrees."""

from __future__ import annotations

__all__ = ["ExportError", "ParityError"]


class ExportError(ValueError):
    """The model's forward cannot be written as an ONNX graph; nothing was written.

    Raised for a function with no ONNX counterpart (the message names it and the layer
    that applied it) or given data of a type its ONNX operator does not take, for a value
    the forward takes out of the graph (Python reads such as ``float(x)``, ``x.data`` read
    by your own code, an array made outside zerograd's functions that changes with the
    input, an input the graph does not read, a recurrent state an earlier call left), for
    a forward whose functions or shapes depend on the batch size in a way ONNX cannot
    follow, and for a model over 2 GB exported with ``external_data=False``.
    """


class ParityError(AssertionError):
    """ONNX Runtime's outputs differ from zerograd's beyond the tolerance (``check``)."""
