"""Small helpers shared by core, the backends and zerograd-nn, each written once.

:func:`data_of` is defined here; the shape arithmetic comes from :mod:`zerograd.shapes`
and the argument checks from :mod:`zerograd.checks` (leaf modules the backends import),
and is named here too for the code that imports it from ``zerograd.utils``.

Examples:
    >>> import numpy as np
    >>> from zerograd import Variable
    >>> data_of(Variable(np.ones(2))).shape, conv_outsize(28, 3, 1, 1)
    ((2,), 28)
    >>> normalize_axis(-1, 3, "sum")
    (2,)
    >>> size_of(np.zeros((2, 3)))
    6
"""

from __future__ import annotations

import sys
from typing import Any

from .checks import int_like, normalize_axis, pair
from .shapes import conv_outsize, size_of
from .variable import Variable

__all__ = [
    "add_note",
    "conv_outsize",
    "data_of",
    "int_like",
    "is_named_tuple",
    "normalize_axis",
    "pair",
    "size_of",
]


def data_of(x: Any) -> Any:
    """Return the array behind ``x``: a Variable's data, anything else as it is.

    Args:
        x: A Variable or anything else.

    Returns:
        ``x.data`` for a Variable, else ``x``.
    """
    return x.data if isinstance(x, Variable) else x


def is_named_tuple(x: Any) -> bool:
    """Whether ``x`` is a named tuple (``collections.namedtuple``, ``typing.NamedTuple``).

    Structures that zerograd opens (the arguments and results of :mod:`zerograd.func`'s
    transforms and of :func:`zerograd.static_graph`) take one as a tuple and rebuild it as
    its own class, ``type(x)(*items)``.
    """
    return isinstance(x, tuple) and isinstance(getattr(type(x), "_fields", None), tuple)


def add_note(exc: BaseException, note: str) -> None:
    """Add ``note`` to the notes of ``exc`` (Python 3.11's ``exc.add_note(note)``).

    Python 3.10 has no ``BaseException.add_note``; there the note goes to the list
    ``exc.__notes__`` all the same (PEP 678's attribute), where code reads it and where
    pytest and the ``exceptiongroup`` backport print it (3.10's own traceback does not).
    zerograd's hints on errors raised in a user's code (a vjp, a metric, an extension, an
    ONNX converter) go through it, so that 3.10 keeps them.

    Args:
        exc: The exception, about to be raised on.
        note: One line or more of explanation.
    """
    if sys.version_info >= (3, 11):
        exc.add_note(note)
    else:
        exc.__notes__ = [*getattr(exc, "__notes__", ()), note]
