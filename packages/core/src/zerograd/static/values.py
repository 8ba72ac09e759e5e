"""Array values as a trace compares them: copies, bit equality, bytes."""

from __future__ import annotations

from typing import Any

from ..backends import as_numpy
from ..backends.registry import registry
from ..namespaces import ArrayOps

_by_type = registry.by_type


def copy_of(a: Any) -> Any:
    """A copy of the array ``a`` (None when ``a`` is no installed backend's array).

    Args:
        a: an array.

    Returns:
        A new array with ``a``'s values, or None.
    """
    return ArrayOps.copy(a) if type(a) in _by_type else None


def bits(a: Any) -> bytes:
    """The bytes of the array ``a`` (through numpy).

    Args:
        a: an array.

    Returns:
        Its values' bytes in C order.
    """
    return as_numpy(a).tobytes()


def same(a: Any, b: Any) -> bool:
    """Whether the arrays ``a`` and ``b`` hold the same bits (NaNs included).

    Args:
        a: an array.
        b: an array.

    Returns:
        True when their type, shape, dtype and bytes agree.
    """
    if type(a) is not type(b) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bits(a) == bits(b)
