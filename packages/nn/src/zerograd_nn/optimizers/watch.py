"""What an update reads from Python, as a static-graph recording sees it.

A replayed step calls the optimizer's ``update()`` again, which reads its hyperparameters,
its own attributes (a DeZero-style optimizer's ``lr``) and its hooks' (``WeightDecay.rate``,
``ClipGrad.max_norm``) at that time. That is right when they are changed between calls (a
scheduler), and wrong when the step's own Python changes them, which a replay does not
run. So, while a trace records (and only then), assignments to the attributes of the
classes registered here, and writes into a :class:`ParamGroup`, are reported to the
recording thread's recorder, and :func:`snapshot` gives what a recording compares at the
call's start, the update and the call's end to see changes made some other way.
"""

from __future__ import annotations

import types
from typing import Any

from zerograd.recording import current, switch, while_recording

_classes: list[type] = []
_SCALARS = (int, float, bool, complex, str, type(None))


def _reporting_setattr(self: Any, name: str, value: Any) -> None:
    rec = current()
    if rec is not None:
        rec.setting(self, name)
    object.__setattr__(self, name, value)


class ParamGroup(dict):
    """A parameter group of an optimizer (``optimizer.param_groups[i]``): a dict.

    A value written into it inside a recorded static-graph call (``group["lr"] = 0.01``,
    PyTorch's habit, or a scheduler's step) refuses the recording, as an optimizer attribute
    assigned there does: a replay would not write it again, while the update it replays
    reads it (an lr changed between calls would then stay, where the eager call writes it
    back). The writes themselves are watched because comparing the group before and after
    cannot see one that puts back the object already there (``group["lr"] = 0.1`` on every
    call). Outside recordings it is a plain dict, at a plain dict's speed.
    """

    __slots__ = ()


def _reporting_setitem(self: ParamGroup, key: Any, value: Any) -> None:
    _report_group_write(self, key)
    dict.__setitem__(self, key, value)


def _reporting_update(self: ParamGroup, *args: Any, **kwargs: Any) -> None:
    for key in dict(*args, **kwargs):
        _report_group_write(self, key)
    dict.update(self, *args, **kwargs)


def _report_group_write(group: ParamGroup, key: Any) -> None:
    rec = current()
    if rec is not None:
        what = f"a parameter group's {key!r} (group[{key!r}] = ..., or a scheduler's step)"
        rec.setting(group, str(key), what)


def _watch(on: bool) -> None:
    for cls in _classes:
        if on:
            cls.__setattr__ = _reporting_setattr  # type: ignore[method-assign]
        elif cls.__dict__.get("__setattr__") is _reporting_setattr:
            del cls.__setattr__
    if on:
        ParamGroup.__setitem__ = _reporting_setitem  # type: ignore[method-assign,assignment]
        ParamGroup.update = _reporting_update  # type: ignore[method-assign,assignment]
    elif ParamGroup.__dict__.get("__setitem__") is _reporting_setitem:
        del ParamGroup.__setitem__
        del ParamGroup.update


def report_assignments(cls: type) -> type:
    """Make assignments to ``cls``'s attributes visible to a recording (a class decorator).

    Args:
        cls: a class whose instances an update reads (an optimizer, a hook).

    Returns:
        ``cls``.
    """
    _classes.append(cls)
    if switch.on:
        cls.__setattr__ = _reporting_setattr  # type: ignore[method-assign]
    return cls


while_recording(_watch)


def snapshot(obj: Any) -> tuple:
    """What ``obj`` (an optimizer, a hook) holds, comparable with ``==``.

    Numbers and 0-d arrays by value and identity (an equal number assigned anew counts as
    a change), dicts and lists one level down (parameter groups), anything else by
    identity; a function hook by the values of its closure cells.

    Args:
        obj: the object.

    Returns:
        A tuple.
    """
    if type(obj) is types.FunctionType:
        cells = obj.__closure__ or ()
        return (id(obj), tuple([_key(_cell(c), 1) for c in cells]))
    d = getattr(obj, "__dict__", None)
    if type(d) is not dict:
        return (id(obj),)
    return (id(obj), tuple([(k, _key(v, 2)) for k, v in d.items()]))


def _cell(c: Any) -> Any:
    try:
        return c.cell_contents
    except ValueError:
        return None


def _key(v: Any, depth: int) -> Any:
    t = type(v)
    if t in _SCALARS:
        return (t, repr(v), id(v))
    if depth and (t is dict or t is ParamGroup):
        return (id(v), tuple([(k, _key(x, depth - 1)) for k, x in v.items()]))
    if depth and t in (list, tuple):
        return (id(v), tuple([_key(x, depth - 1) for x in v]))
    if getattr(v, "shape", None) == () and hasattr(v, "tobytes"):  # a 0-d array, a scalar
        return (t, v.tobytes(), id(v))
    return (t, id(v))
