"""What every converter module shares: the converter type and the ``emits`` marker."""

from __future__ import annotations

from collections.abc import Callable

from ..context import OpContext

Converter = Callable[[OpContext], None]
"""A converter: adds the nodes that compute ``ctx.outputs`` from ``ctx.inputs``."""


def emits(*op_types: str) -> Callable[[Converter], Converter]:
    """Mark a converter with the ONNX operators it may add (the docs' table lists them).

    Args:
        *op_types: ONNX operator names.

    Returns:
        A decorator that sets ``converter.onnx_ops`` and returns the converter.
    """

    def mark(fn: Converter) -> Converter:
        fn.onnx_ops = tuple(op_types)  # type: ignore[attr-defined]
        return fn

    return mark


INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
