"""Random numbers drawn in Python inside a recorded call, which a replay would not draw.

A Function that draws in its forward (dropout's mask) draws again on every replay. A step
that draws in its own Python (``if np.random.rand() < 0.5: x = x[:, ::-1]``) does not: the
replay repeats the branch its recordings took. While a trace records, the module-level
functions of numpy's global random state (``numpy.random.rand``, ``shuffle``, ``seed``...)
and of Python's :mod:`random` report each call to the recording thread's recorder, which
tells zerograd's own calls (a Function's forward, a layer sizing itself) from the step's;
a seed set inside the call (``zerograd.seed(0)`` included) counts whoever sets it.
Nothing is wrapped while nothing records. Random states the step reaches by name (a
``numpy.random.Generator``, a ``random.Random``) are compared at the call's start and end
(:func:`state_of`).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from typing import Any

from ..recording import current, while_recording

_installed: list[tuple[Any, str, Any]] = []  # (module, name, the original function)
_SEEDING = frozenset(["seed", "set_state", "setstate"])  # Python state, whoever calls them


def _reporting(fn: Callable, what: str, seeds: bool) -> Callable:
    def draw(*args: Any, **kwargs: Any) -> Any:
        rec = current()
        if rec is not None:
            rec.drew(sys._getframe(1), what, seeds)
        return fn(*args, **kwargs)

    draw.__wrapped__ = fn  # type: ignore[attr-defined]
    draw.__name__ = getattr(fn, "__name__", what)
    draw.__doc__ = getattr(fn, "__doc__", None)
    return draw


def _targets() -> list[tuple[Any, str, str]]:
    out = []
    inst = getattr(random, "_inst", None)
    for name in random.__all__:
        if name != "getstate" and getattr(getattr(random, name, None), "__self__", 1) is inst:
            out.append((random, name, f"random.{name}()"))
    np = sys.modules.get("numpy")
    nr = getattr(np, "random", None) if np is not None else None
    state = getattr(getattr(nr, "mtrand", None), "_rand", None)
    if state is not None:
        for name in getattr(nr, "__all__", ()):
            fn = getattr(nr, name, None)
            if name == "seed" or (name != "get_state" and getattr(fn, "__self__", 1) is state):
                out.append((nr, name, f"numpy.random.{name}()"))
    return out


def _watch(on: bool) -> None:
    if on:
        for module, name, what in _targets():
            fn = getattr(module, name)
            _installed.append((module, name, fn))
            setattr(module, name, _reporting(fn, what, name in _SEEDING))
        return
    while _installed:
        module, name, fn = _installed.pop()
        setattr(module, name, fn)


while_recording(_watch)


def state_of(value: Any) -> Any:
    """The state of a random generator the step names, or None for anything else.

    Args:
        value: any object (a ``numpy.random.Generator`` or ``RandomState``, a
            ``random.Random``).

    Returns:
        Something that compares equal while the generator draws nothing.
    """
    try:
        if isinstance(value, random.Random):
            return value.getstate()
        if not (type(value).__module__ or "").startswith("numpy.random"):
            return None
        if hasattr(value, "bit_generator"):  # a Generator
            return _plain(value.bit_generator.state)
        if hasattr(value, "get_state"):  # a RandomState
            return _plain(value.get_state(legacy=False))
    except (NotImplementedError, TypeError, AttributeError):  # SystemRandom keeps no state
        return None
    return None


def _plain(x: Any) -> Any:
    if type(x) is dict:
        return tuple([(k, _plain(v)) for k, v in x.items()])
    if hasattr(x, "tobytes"):
        return (str(getattr(x, "dtype", "")), x.tobytes())
    return x
