"""Lists of names in error messages, cut to their first few for a large model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

SHOWN = 10
"""How many names an error message lists before it counts the rest."""


def listed(names: Sequence[Any], limit: int = SHOWN) -> str:
    """``repr(list(names))`` for an error message, cut to the first ``limit`` names.

    A model of 100,000 parameters loaded from another model's file listed every name: a
    message of megabytes, with what to do at its end.

    Args:
        names: what the message lists.
        limit: how many to show.

    Returns:
        ``"['a', 'b']"``; past ``limit``, ``"['a', ..., 'j'] and 99,990 more"``.
    """
    names = list(names)
    if len(names) <= limit:
        return repr(names)
    return f"{names[:limit]!r} and {len(names) - limit:,} more"


def joined(parts: Sequence[str], limit: int = SHOWN) -> str:
    """``"; ".join(parts)``, cut to the first ``limit`` parts (``"...; and 5 more"``)."""
    if len(parts) <= limit:
        return "; ".join(parts)
    return "; ".join(parts[:limit]) + f"; and {len(parts) - limit:,} more"
