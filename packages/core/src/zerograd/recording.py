"""The recording context: whether a static-graph trace records this thread's work.

The engine has a few hook points (``Function.__call__``, ``Variable.backward``, the value
reads of ``Variable``; zerograd-nn's ``Optimizer.update``, ``Layer`` attributes and calls),
none inside the backward walk: a trace plans the walk's schedule from the graph. Each reads
:data:`switch` first: a plain attribute that is 0 unless some trace records somewhere, so
the eager engine pays one attribute read per call and nothing else. Only then does it ask
:func:`current` for this thread's (or asyncio task's) recorder, which is None in every
other thread. :mod:`zerograd.static` holds the recorder; what each hook reports is the
:class:`Recorder` protocol below.

Two more things live here because every package's owners need them without importing the
recorder: :func:`while_recording` lets an owner install a watcher that exists only while
some trace records (``Variable.data`` reads from user code, an optimizer's attribute
writes), so the eager engine pays nothing for it the rest of the time; and
:data:`structure` is a counter the owners of what a recording names (a Layer's Parameters
and sub-layers, an optimizer's target) move when they replace one, so that a replay made
before the change runs no more.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from .switch import Switch

switch = Switch()
"""``switch.on``: how many traces are recording now, in any thread (0: none)."""
_watchers: list[Callable[[bool], None]] = []


class _Version:
    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


class _Here(threading.local):
    n = 0  # (a class attribute: every thread starts from it)


structure = _Version()
"""``structure.n``: moved by :func:`replaced` whenever an object a recording may name is
replaced by another (a Layer's Parameter or sub-layer, an optimizer's target)."""
_here = _Here()
_counting = threading.Lock()


def replaced() -> None:
    """Note that a Parameter, a sub-layer or an optimizer's target was replaced.

    Every replay recorded before then re-records its next call (see :data:`structure`).
    """
    with _counting:  # (two threads at once must not move it once)
        structure.n += 1
    _here.n += 1


def replaced_here() -> int:
    """How many times :func:`replaced` was called in this thread so far.

    A trace compares it at its call's start and end: a replacement in another thread
    meanwhile is not the call's doing (that thread's work is no part of the recording).

    Returns:
        The count.
    """
    return _here.n


def while_recording(watch: Callable[[bool], None]) -> None:
    """Call ``watch(True)`` when a first trace starts recording, ``watch(False)`` after the last.

    An owner installs there what only a recording needs (a watching property in place of a
    plain attribute), so that nothing of it runs while nothing records. Called at once with
    the present state.

    Args:
        watch: the function switching the watcher on or off.
    """
    with switch.lock:
        _watchers.append(watch)
        if switch.on:
            watch(True)


_recorder: contextvars.ContextVar[Any] = contextvars.ContextVar("zerograd.recorder", default=None)


class Recorder(Protocol):
    """What the hook points tell a recording trace (implemented by :mod:`zerograd.static`)."""

    def before_call(self, fn: Any) -> Any:
        """``fn`` (a Function) is about to run its forward; returns what ``called`` gets."""

    def called(self, fn: Any, before: Any, inputs: tuple, outputs: Any) -> None:
        """``fn`` ran: ``inputs`` (Variables) gave ``outputs`` (a Variable or a list)."""

    def backward(self, y: Any, retain_grad: bool, create_graph: bool, run: Callable) -> None:
        """``y.backward(retain_grad, create_graph)`` was called; the recorder calls ``run``.

        ``run(retain_grad, create_graph)`` is the eager walk (:func:`zerograd.backprop.backward`
        for ``y``), which reports nothing: what it does is the recorder's to learn, from the
        graph the call built and the gradients before and after.
        """

    def effect(self, fn: Callable[[], Any], params: list, settings: Callable[[], Any]) -> Any:
        """Run ``fn`` (an optimizer's update) as one step of its own; return its result.

        ``params`` are the Parameters whose gradients it reads and whose data it changes;
        ``settings()`` returns what it reads from Python (its hyperparameters), comparable
        with ``==``: a replay calls ``fn`` again, so they must not change inside the call.
        """

    def attribute(self, owner: Any, name: str, value: Any) -> None:
        """``owner.name = value`` is about to happen on a Layer (a state such as ``h``)."""

    def data(self, x: Any, frame: Any, value: Any) -> None:
        """Code running in ``frame`` reads ``x.data`` (``value`` is :data:`READ`) or assigns it."""

    def depends(self, owner: Any, read: Callable[[Any], Any], value: Any) -> None:
        """The call's work depends on ``read(owner)``, which is ``value`` now (a layer's mode)."""

    def setting(self, owner: Any, name: str, what: str | None = None) -> None:
        """``owner.name`` is assigned, where ``owner``'s value is read by replayed work.

        ``what`` names the assignment in the message where ``Type.name`` would not (an
        item of a dict: an optimizer's parameter group).
        """

    def drew(self, frame: Any, what: str, seeds: bool) -> None:
        """Code running in ``frame`` draws random numbers in Python (``what``: the call).

        ``seeds``: the call sets the random state (a seed) rather than drawing from it.
        """


READ = object()
"""The ``value`` of :meth:`Recorder.data` for a read."""


def current() -> Recorder | None:
    """The recorder of this thread or task, or None when nothing records here.

    Returns:
        A :class:`Recorder` or None.
    """
    return _recorder.get() if switch.on else None


@contextlib.contextmanager
def recording(recorder: Recorder) -> Iterator[None]:
    """Make ``recorder`` this thread's (or task's) recorder inside the block.

    Args:
        recorder: what the hook points report to.

    Returns:
        A context manager.
    """
    token = _recorder.set(recorder)
    with switch.lock:
        switch.on += 1
        if switch.on == 1:
            for watch in _watchers:
                watch(True)
    try:
        yield
    finally:
        with switch.lock:
            switch.on -= 1
            if switch.on == 0:
                for watch in _watchers:
                    watch(False)
        _recorder.reset(token)


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Record nothing inside the block (work that a replay runs as one step of its own).

    Returns:
        A context manager.
    """
    token = _recorder.set(None)
    try:
        yield
    finally:
        _recorder.reset(token)
