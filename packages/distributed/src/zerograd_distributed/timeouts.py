"""How long a collective waits for every rank: the setting, its default and its checks.

A collective waits until every rank has called it. A rank that never comes (it stopped
its loop earlier, finished, or works alone on something long) would leave the others
waiting forever; after ``timeout`` seconds they raise ``TimeoutError`` instead, naming the
ranks that did not arrive. The default is :data:`DEFAULT_TIMEOUT` (600 s), or the
environment variable :data:`TIMEOUT_ENV` when it is set; ``create_communicator(...,
timeout=...)`` and ``comm.timeout = ...`` override both.

Examples:
    >>> resolve_timeout("create_communicator", 30)
    30.0
    >>> resolve_timeout("create_communicator", float("inf"))
    inf
"""

from __future__ import annotations

import math
import os
from typing import Any

from zerograd.checks import real_number

__all__ = ["DEFAULT_TIMEOUT", "TIMEOUT_ENV", "resolve_timeout"]

DEFAULT_TIMEOUT = 600.0
"""Seconds a collective waits when neither the argument nor the environment says.

Ten minutes, as PyTorch's NCCL process groups: long enough for one rank to write a large
checkpoint or evaluate alone while the others wait, short enough that a run that can never
go on ends the same hour."""

TIMEOUT_ENV = "ZEROGRAD_DISTRIBUTED_TIMEOUT"
"""The environment variable read when no ``timeout`` is given: seconds, or ``inf``."""


def _from_env() -> float:
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not value > 0:  # nan, zero and negative numbers alike
        raise ValueError(
            f"{TIMEOUT_ENV}={raw!r}: give the seconds a collective may wait for every rank "
            f"(a positive number such as 600), or 'inf' to wait forever."
        )
    return value


def resolve_timeout(owner: str, value: Any) -> float:
    """Return the timeout in seconds that ``value`` asks for.

    Args:
        owner: the call or attribute to name in an error (``"create_communicator"``).
        value: seconds (a positive number; ``math.inf`` waits forever), or None for the
            default: :data:`TIMEOUT_ENV` when set, else :data:`DEFAULT_TIMEOUT`.

    Returns:
        The seconds, as a float (``inf`` for no limit).

    Raises:
        TypeError: ``value`` is not a number (a bool, a string...).
        ValueError: ``value`` is zero, negative or nan, or None and the environment
            variable holds something else than a positive number.
    """
    if value is None:
        return _from_env()
    seconds = real_number(owner, "timeout", value)  # a type error, or nan
    if not seconds > 0:
        raise ValueError(
            f"{owner}: timeout must be a positive number of seconds (math.inf waits "
            f"forever), got {value!r}"
        )
    return seconds
