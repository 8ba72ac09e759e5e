"""Turning what a user passes to a function into a Variable, with the function's name in
the error."""

from __future__ import annotations

from typing import Any

from ..variable import Variable, as_variable


def as_input(x: Any, op: str) -> Variable:
    """``x`` as a Variable (arrays, numbers and lists are wrapped); a TypeError naming
    ``op`` when ``x`` is not numeric data."""
    if isinstance(x, Variable):
        return x
    try:
        return as_variable(x)
    except TypeError as exc:
        raise TypeError(f"{op}: {exc}") from None
