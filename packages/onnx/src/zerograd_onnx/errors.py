"""The errors of zerograd-onnx: a model that cannot be exported, an export that disagrees."""

from __future__ import annotations

__all__ = ["ExportError", "ParityError"]


class ExportError(ValueError):
    """The model's forward cannot be written as an ONNX graph; nothing was written.

    Raised for a function with no ONNX counterpart (the message names it and the layer
    that applied it), for a value the forward computes outside zerograd's functions that
    changes with the input (Python reads such as ``float(x)``, arrays made from ``x.data``),
    and for a forward whose functions or shapes depend on the batch size in a way ONNX
    cannot follow.
    """


class ParityError(AssertionError):
    """ONNX Runtime's outputs differ from zerograd's beyond the tolerance (``check``)."""
