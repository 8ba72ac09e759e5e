"""Turning what a user passes to a function into a Variable, naming the function on error."""

from __future__ import annotations

from typing import Any

from ..variable import Variable, as_variable


def as_input(x: Any, op: str) -> Variable:
    """Return ``x`` as a Variable; arrays, numbers and lists are wrapped.

    Args:
        x: A Variable, array, number or list.
        op: The calling function's name, for the error message.

    Returns:
        ``x`` itself when it is a Variable, else a new Variable holding it.

    Raises:
        TypeError: ``x`` is not numeric data, or a Variable whose data is None (the
            message starts with ``op``).
    """
    if isinstance(x, Variable):
        if x.data is None:
            raise empty_input(x, op)
        return x
    try:
        return as_variable(x)
    except TypeError as exc:
        raise TypeError(f"{op}: {exc}") from None


def empty_input(x: Variable, op: str) -> TypeError:
    """The error for a Variable whose data is None given to the function ``op``."""
    name = f" {x.name!r}" if x.name else ""
    return TypeError(
        f"{op}: the Variable{name} holds no data (its data is None); give it an array first "
        f"(x.data = ...)."
    )
