"""Runtime configuration: backprop on/off and train/test mode.

Every option lives in a :class:`contextvars.ContextVar`, so a change made with
:func:`using_config` is seen only by the thread or asyncio task that made it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
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
        if var is None:  # setdefault: two threads naming a new option at once get one var
            made = contextvars.ContextVar(f"zerograd.Config.{name}", default=default)
            var = self._vars.setdefault(name, made)
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

Examples:
    >>> import zerograd
    >>> zerograd.Config.enable_backprop
    True
"""

_enable_backprop = Config._var("enable_backprop")


@contextlib.contextmanager
def using_config(name: str, value: Any) -> Iterator[None]:
    """Set ``Config.<name>`` to ``value`` inside a ``with`` block, in this thread or task only.

    Args:
        name: The option, such as ``"enable_backprop"`` or ``"train"``.
        value: Its value inside the block; the previous one comes back on exit.

    Returns:
        A context manager.

    Examples:
        >>> with using_config("train", False):
        ...     Config.train
        False
    """
    token = Config._var(name).set(value)
    try:
        yield
    finally:
        Config._vars[name].reset(token)


def _switch(name: str, value: Any, func: Callable | None, caller: str) -> Any:
    if func is None:
        return using_config(name, value)
    if not callable(func):
        raise TypeError(
            f"{caller}: use it as `with {caller}():`, `@{caller}` or `@{caller}()`; got "
            f"{type(func).__name__} {func!r} as an argument."
        )

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with using_config(name, value):
            return func(*args, **kwargs)

    return wrapper


def no_grad(func: Callable | None = None) -> Any:
    """Turn off graph recording (``enable_backprop=False``) in a block or a function.

    Use it as ``with no_grad():``, or as a decorator, bare (``@no_grad``) or called
    (``@no_grad()``), as PyTorch's ``torch.no_grad``.

    Args:
        func: The function to decorate, or None for the ``with`` / ``@no_grad()`` forms.

    Returns:
        A context manager when ``func`` is None, else ``func`` wrapped.

    Raises:
        TypeError: ``func`` is given but not callable.

    Examples:
        >>> @no_grad
        ... def evaluate():
        ...     return Config.enable_backprop
        >>> evaluate()
        False
    """
    return _switch("enable_backprop", False, func, "no_grad")


def test_mode(func: Callable | None = None) -> Any:
    """Switch to test mode (``using_config('train', False)``) in a block or a function.

    Like :func:`no_grad`, it is also a decorator, bare or called; its argument, result and
    error are :func:`no_grad`'s.

    Examples:
        >>> with test_mode():
        ...     Config.train
        False
    """
    return _switch("train", False, func, "test_mode")


test_mode.__test__ = False  # keep pytest from collecting it
