"""Hyperparameter attributes: ``opt.lr`` reads group 0 and sets every group."""

from __future__ import annotations

import math
import numbers
from typing import Any


class hyperparameter:
    """A hyperparameter attribute (``opt.lr``): reads group 0's value, sets every group's.

    ``hyperparameter("lr")`` under another attribute name makes an alias (Adam's ``alpha``).
    """

    def __init__(self, key: str | None = None) -> None:
        self.key = key

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.key = self.key or name

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        groups = obj.__dict__.get("param_groups")
        return groups[0][self.key] if groups else obj.defaults[self.key]

    def __set__(self, obj: Any, value: Any) -> None:
        value = check_hyper(type(obj).__name__, self.name, value)
        obj.defaults[self.key] = value
        for group in obj.param_groups:
            group[self.key] = value


def check_hyper(owner: str, name: str, value: Any) -> float:
    """``value`` as a float, or a TypeError/ValueError naming ``owner.name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{owner}: {name} must be a real number, got {value!r} ({type(value).__name__})."
        )
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{owner}: {name} must be a finite number >= 0, got {value!r}.")
    return value
