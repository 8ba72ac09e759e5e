"""Function modes: a transform that takes over every Function applied in its context.

``Function.__call__`` reads :data:`switch` first: a plain attribute that is 0 unless some
mode is entered somewhere, so the eager engine pays one attribute read per call. Only then
does it ask :func:`current` for this thread's (or asyncio task's) mode, and when there is
one, the call becomes ``mode.apply(fn, inputs)``. The mode decides what the application
means (:func:`zerograd.func.vmap` runs it on a whole batch, a gradient transform keeps
Variables from outside out of its graph) and usually ends by applying functions itself
with :func:`below`, which makes the mode it covers current for that work. Modes nest as
the transforms do; the mode entered last is asked first.

A mode is any object with the attributes of :class:`FunctionMode`. Modes live in
:mod:`contextvars`, as :class:`~zerograd.Config` does: a mode entered in one thread or task
is never seen by another.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from .switch import Switch

switch = Switch()
"""``switch.on``: how many modes are entered now, in any thread (0: none)."""
_mode: contextvars.ContextVar[Any] = contextvars.ContextVar("zerograd.mode", default=None)


class FunctionMode(Protocol):
    """What ``Function.__call__`` asks of a mode.

    A mode may also define ``refuse_backward()``, which :func:`check_backward` calls.
    """

    parent: FunctionMode | None
    """The mode that was current when this one was entered (None: none)."""

    def apply(self, fn: Any, inputs: tuple) -> Any:
        """Apply the Function ``fn`` to ``inputs`` (as given to ``fn(*inputs)``).

        Returns what ``fn(*inputs)`` returns: a Variable, or a list of them.
        """


def current() -> FunctionMode | None:
    """The mode of this thread or task, or None.

    Returns:
        The mode entered last here and not left yet, or None.
    """
    return _mode.get() if switch.on else None


def check_backward() -> None:
    """Let the modes in force refuse a ``Variable.backward()`` started here.

    A mode may define ``refuse_backward()``, which raises where a walk started under it
    cannot give the gradients it is asked for (the function given to a differentiating
    transform: see :mod:`zerograd.func.guard`). The current mode is asked, then the modes
    it covers (``parent``), innermost first. ``Variable.backward`` calls it only while
    some mode is entered (``switch.on``), so the eager engine pays one attribute read.

    Raises:
        RuntimeError: a mode refuses the walk (its message says why and what to do).
    """
    mode = current()
    while mode is not None:
        refuse = getattr(mode, "refuse_backward", None)
        if refuse is not None:
            refuse()
        mode = mode.parent


@contextlib.contextmanager
def entered(mode: FunctionMode) -> Iterator[None]:
    """Make ``mode`` this thread's (or task's) mode inside the block.

    ``mode.parent`` must be the mode current when the block starts.

    Args:
        mode: the mode.

    Returns:
        A context manager.
    """
    token = _mode.set(mode)
    with switch.lock:
        switch.on += 1
    try:
        yield
    finally:
        with switch.lock:
            switch.on -= 1
        _mode.reset(token)


def below(mode: FunctionMode, fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn(*args)`` with ``mode.parent`` current: work the mode does for its caller.

    Args:
        mode: the mode whose parent runs the work.
        fn: what to call (a Function, or any callable applying Functions).
        *args: its arguments.

    Returns:
        What ``fn`` returns.
    """
    token = _mode.set(mode.parent)
    try:
        return fn(*args)
    finally:
        _mode.reset(token)


@contextlib.contextmanager
def suspended(mode: FunctionMode | None) -> Iterator[None]:
    """Make ``mode`` current inside the block (None: no mode), without entering it anew.

    For work that belongs to an outer mode (or to none): a transform building its inputs
    underneath the modes of the transforms it runs inside.

    Args:
        mode: a mode entered around this block, or None.

    Returns:
        A context manager.
    """
    token = _mode.set(mode)
    try:
        yield
    finally:
        _mode.reset(token)
