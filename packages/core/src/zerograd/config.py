"""Runtime configuration: backprop on/off and train/test mode.

Every option lives in a :class:`contextvars.ContextVar`, so a change made with
:func:`using_config` is seen only by the thread or asyncio task that made it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

_DEFAULTS: dict[str, Any] = {"enable_backprop": True, "train": True}


class _Config:
    """Attribute-style access to per-context options (``Config.enable_backprop``)."""

    __slots__ = ("_vars",)

    def __init__(self) -> None:
        object.__setattr__(self, "_vars", {})
        for name, value in _DEFAULTS.items():
            self._var(name, value)

    def _var(self, name: str, default: Any = None) -> contextvars.ContextVar:
        var = self._vars.get(name)
        if var is None:
            var = contextvars.ContextVar(f"zerograd.Config.{name}", default=default)
            self._vars[name] = var
        return var

    def __getattr__(self, name: str) -> Any:
        var = self._vars.get(name)
        if var is None:
            raise AttributeError(
                f"Config has no option {name!r}; known options: {sorted(self._vars)}"
            )
        return var.get()

    def __setattr__(self, name: str, value: Any) -> None:
        self._var(name).set(value)

    def __repr__(self) -> str:
        items = ", ".join(f"{k}={v.get()!r}" for k, v in sorted(self._vars.items()))
        return f"Config({items})"


Config = _Config()
"""Options of the current thread or task: ``enable_backprop`` and ``train``.

>>> import zerograd
>>> zerograd.Config.enable_backprop
True
"""

_enable_backprop = Config._var("enable_backprop")


@contextlib.contextmanager
def using_config(name: str, value: Any) -> Iterator[None]:
    """Set ``Config.<name>`` to ``value`` inside a ``with`` block, in this thread or task only.

    >>> with using_config("train", False):
    ...     Config.train
    False
    """
    token = Config._var(name).set(value)
    try:
        yield
    finally:
        Config._vars[name].reset(token)


def no_grad() -> contextlib.AbstractContextManager[None]:
    """Turn off graph recording inside a ``with`` block (``enable_backprop=False``)."""
    return using_config("enable_backprop", False)


def test_mode() -> contextlib.AbstractContextManager[None]:
    """Switch to test mode inside a ``with`` block (``using_config('train', False)``)."""
    return using_config("train", False)


test_mode.__test__ = False  # keep pytest from collecting it
