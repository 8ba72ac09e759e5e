"""Type aliases for the signatures of zerograd's functions and layers (as ``numpy.typing``).

The arrays of zerograd's backends (numpy, CuPy, a plugin's) share no base class, so an
alias that includes them is ``Any`` to a type checker; its name still tells a reader (and
the API reference) what a parameter takes.
"""

from __future__ import annotations

from typing import Any

from .variable import Variable

ArrayLike = Variable | Any
"""What an input of a tensor function may be: a :class:`~zerograd.Variable`, an array of an
installed backend (a ``numpy.ndarray``, a ``cupy.ndarray``, ...), a Python number or a
(nested) list of numbers. Raw arrays and numbers are constants: no gradient flows to them."""

Pair = int | tuple[int, int]
"""A size per spatial axis: one int for both, or ``(height, width)``."""

Axis = int | tuple[int, ...] | None
"""An axis, several axes, or None for all of them; negative axes count from the end."""

__all__ = ["ArrayLike", "Axis", "Pair"]
