"""Optimizer state dicts: hyperparameters, step counters and per-parameter arrays by name.

The functions take what the optimizer holds as arguments; :class:`Optimizer` gathers it
and assigns what :func:`check_state` returns.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from zerograd import Variable
from zerograd.backends import as_array_of, backend_of, get_array_module

from ..conversion import fitted
from .hyper import check_hyper, hyperparameter, spec_of


def arrays_for(st: dict | None, data: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """``names``' state arrays for a parameter holding ``data``.

    Args:
        st: the parameter's stored state, or None.
        data: the parameter's array.
        names: the state names to return.

    Returns:
        ``{name: array}``: ``st`` itself when it holds exactly those arrays, of ``data``'s
        type; else a new dict of the stored ones (moved to ``data``'s backend if the
        parameter moved) or zeros. ``st`` is never changed.
    """
    if st is not None and len(st) == len(names):
        kind = type(data)
        for n in names:
            if type(st.get(n)) is not kind:
                break
        else:
            return st
    out = {}
    for n in names:
        a = None if st is None else st.get(n)
        if a is None:
            a = get_array_module(data).zeros_like(data)
        elif type(a) is not type(data):
            a = as_array_of(a, backend_of(data))
        out[n] = a
    return out


def _nonnegative(a: Any) -> bool:
    """Whether every value of ``a`` is >= 0 (nan is not)."""
    xp = get_array_module(a)
    return bool(xp.all(a >= 0))


def _copy(a: Any) -> Any:
    return backend_of(a).astype(a, a.dtype)


def state_dict_of(
    name: str,
    grouped: list[tuple[dict, list[Any]]],
    names: dict[int, str],
    stored: Callable[[Any], dict | None],
    defaults: dict[str, float],
    counters: dict[str, int],
    entry_counts: Callable[[Any], dict[str, int]] | None = None,
) -> dict[str, Any]:
    """An optimizer's state dict (see :meth:`Optimizer.state_dict`) from what it holds.

    Args:
        name: the optimizer's class name.
        grouped: its ``grouped_params()``.
        names: its ``param_names()``.
        stored: the stored state arrays of a parameter, or None.
        defaults: its default hyperparameters.
        counters: its step counters by name.
        entry_counts: the step counts of a parameter with state, saved in its entry
            next to its arrays (Adam's own ``t``); None: none.

    Returns:
        The state as a dict of plain values and array copies.

    Raises:
        ValueError: two parameters share a name.
    """
    taken: dict[str, int] = {}
    for _, ps in grouped:
        for p in ps:
            k = names[id(p)]
            if taken.setdefault(k, id(p)) != id(p):
                raise ValueError(
                    f"{name}.state_dict(): two parameters are both named {k!r}; give each "
                    f"group's params as a dict of distinct names (model.named_params())."
                )
    groups = []
    state = {}
    for g, ps in grouped:
        entry = {k: v for k, v in g.items() if k not in ("params", "param_names")}
        entry["params"] = [names[id(p)] for p in ps]
        groups.append(entry)
        for p in ps:
            st = stored(p)
            if st:
                entry = state[names[id(p)]] = {k: _copy(a) for k, a in st.items()}
                if entry_counts is not None:
                    entry.update(entry_counts(p))
    return {
        "type": name,
        "defaults": dict(defaults),
        "groups": groups,
        "counters": dict(counters),
        "state": state,
    }


_KEYS = ("type", "defaults", "groups", "counters", "state")


def check_kind(name: str, d: Any) -> None:
    """Refuse ``d`` unless it is a state dict of a ``name`` optimizer.

    Args:
        name: the loading optimizer's class name.
        d: what was given to ``load_state_dict``.

    Raises:
        TypeError: ``d`` is not an optimizer state dict.
        ValueError: ``d`` is of another optimizer.
    """
    op = f"{name}.load_state_dict"
    if not isinstance(d, Mapping) or any(k not in d for k in _KEYS):
        raise TypeError(
            f"{op}(d): d must be the dict optimizer.state_dict() returns (with keys "
            f"{list(_KEYS)}), got {type(d).__name__}"
            + (f" with keys {sorted(d)}" if isinstance(d, Mapping) else "")
            + "."
        )
    if d["type"] != name:
        raise ValueError(
            f"{op}: the state dict was saved by {d['type']}, not {name}: load it into "
            f"{d['type']}(...).setup(...), or leave the optimizer out (load_checkpoint(..., "
            f"optimizer=None) restores the rest) and start {name} afresh."
        )
    bad = [
        f"d[{k!r}] is of type {type(d[k]).__name__}, not a {want}"
        for k, want, ok in (
            ("defaults", "dict", isinstance(d["defaults"], Mapping)),
            ("groups", "list of dicts", _all(d["groups"], list, Mapping)),
            ("counters", "dict", isinstance(d["counters"], Mapping)),
            ("state", "dict of dicts", _all(d["state"], Mapping, Mapping)),
        )
        if not ok
    ]
    if bad:
        raise TypeError(
            f"{op}(d): {'; '.join(bad)}; d must be what optimizer.state_dict() returns. "
            f"Nothing was changed."
        )


def _all(x: Any, outer: type, inner: type) -> bool:
    """Whether ``x`` is an ``outer`` (list or mapping) whose items (values) are ``inner``."""
    if not isinstance(x, outer):
        return False
    return all(isinstance(v, inner) for v in (x.values() if isinstance(x, Mapping) else x))


class Loaded(NamedTuple):
    """A checked state dict, converted for the optimizer that will hold it."""

    defaults: dict[str, float]
    groups: list[dict[str, float]]  # each group's hyperparameters
    state: weakref.WeakKeyDictionary  # parameter -> its state arrays
    counters: dict[str, int]
    entry_counts: dict  # parameter with an entry -> the step counts its entry holds


def check_state(
    name: str,
    d: Mapping[str, Any],
    grouped: list[tuple[dict, list[Any]]],
    names: dict[int, str],
    specs: dict[str, hyperparameter],
    state_names: tuple[str, ...],
    counter_names: tuple[str, ...],
    incoming: Mapping[int, Any] | None = None,
    nonnegative: tuple[str, ...] = (),
    entry_counters: tuple[str, ...] = (),
) -> Loaded:
    """Check a state dict of the right kind against the optimizer, changing nothing.

    ``incoming`` maps ``id(param)`` to the array a parameter is about to receive (a model
    loaded in the same step), for parameters that have no data yet.

    Args:
        name: the optimizer's class name.
        d: a dict that passed :func:`check_kind`.
        grouped: the optimizer's ``grouped_params()``.
        names: its ``param_names()``.
        specs: its ``hyperparameter_specs()``.
        state_names: the names of its per-parameter state arrays (any when empty).
        counter_names: the names of its step counters.
        incoming: arrays the parameters are about to receive, or None.
        nonnegative: the state arrays that are never below 0 (means of squares, whose
            root an update takes: Adam's ``v``).
        entry_counters: the step counts an entry may hold besides its arrays (Adam's own
            ``t``): ints >= 0.

    Returns:
        The values to assign, converted to each parameter's backend and dtype.

    Raises:
        ValueError: ``d`` does not fit the optimizer.
    """
    op = f"{name}.load_state_dict"
    if len(d["groups"]) != len(grouped):
        raise ValueError(
            f"{op}: the state dict has {len(d['groups'])} parameter groups, this optimizer "
            f"{len(grouped)}; nothing was changed. Set it up with the same groups."
        )
    known = {spec.key for spec in specs.values()}
    by_name = {}
    new_groups = []
    problems = []
    for i, ((_, ps), saved) in enumerate(zip(grouped, d["groups"])):
        mine = [names[id(p)] for p in ps]
        if list(saved.get("params", ())) != mine:
            problems.append(f"group {i} holds {list(saved.get('params', ()))}, here {mine}")
        hyper = {}
        for k, v in saved.items():
            if k == "params":
                continue
            if k not in known:
                problems.append(f"group {i}: unknown hyperparameter {k!r}")
                continue
            try:
                hyper[k] = check_hyper(name, k, v, spec_of(specs, k))
            except (TypeError, ValueError) as exc:
                problems.append(f"group {i}: {exc}")
        new_groups.append(hyper)
        by_name.update({names[id(p)]: p for p in ps})
    incoming = incoming or {}

    def current(p: Any) -> Any:
        return incoming.get(id(p), p.data)

    new_state = {}
    for k, st in dict(d["state"]).items():
        p = by_name.get(k)
        if p is None:
            problems.append(f"state for {k!r}, which is not a parameter here")
            continue
        if current(p) is None:
            problems.append(f"{k!r} has no data yet (run a forward pass or load the model first)")
            continue
        arrays, counts, given = {}, {}, dict(st)
        for sk, a in given.items():
            a = a.data if isinstance(a, Variable) else a
            if sk in entry_counters:
                if _is_count(a):
                    counts[sk] = operator.index(a)
                else:
                    problems.append(f"{k}.{sk}: a step count must be an int >= 0, got {a!r}")
            elif state_names and sk not in state_names:
                problems.append(f"{k}: unknown state {sk!r} (expected {list(state_names)})")
            elif not hasattr(a, "dtype") or tuple(a.shape) != tuple(current(p).shape):
                problems.append(
                    f"{k}.{sk}: shape {tuple(getattr(a, 'shape', ()))}, parameter "
                    f"{tuple(current(p).shape)}"
                )
            elif backend_of(a).dtype_kind(a.dtype) not in "fiu":
                problems.append(f"{k}.{sk}: dtype {a.dtype} is not numeric")
            elif sk in nonnegative and not _nonnegative(a):
                problems.append(
                    f"{k}.{sk}: holds negative or nan values; it is a mean of squares, never "
                    f"below 0 (an update would take its root)"
                )
            else:
                arrays[sk] = a
        absent = [sk for sk in state_names if sk not in given]
        if given and absent:  # every step makes all of them: a partial entry was cut
            problems.append(f"{k}: state {absent} missing (expected {list(state_names)})")
        new_state[k] = (p, arrays, counts)
    counters = {}
    for c in counter_names:
        v = dict(d["counters"]).get(c)
        if isinstance(v, bool) or not isinstance(v, (int,)) and not hasattr(v, "__index__"):
            problems.append(f"counter {c!r} must be an int >= 0, got {v!r}")
        elif v < 0:  # Adam's bias correction of a step before the first is not a number
            problems.append(f"counter {c!r} counts steps taken: an int >= 0, got {v!r}")
        else:
            counters[c] = int(v)
    defaults = {}
    for k, v in dict(d["defaults"]).items():
        if k in known:
            try:
                defaults[k] = check_hyper(name, k, v, spec_of(specs, k))
            except (TypeError, ValueError) as exc:
                problems.append(f"defaults: {exc}")
    if problems:
        raise ValueError(
            f"{op}: the state dict does not fit this optimizer ({'; '.join(problems)}). "
            f"Nothing was changed."
        )
    converted = weakref.WeakKeyDictionary()
    entry_counts = {}
    for p, arrays, counts in new_state.values():
        k = names[id(p)]
        converted[p] = {sk: fitted(a, current(p), f"{k}.{sk}", op) for sk, a in arrays.items()}
        entry_counts[p] = counts
    return Loaded(defaults, new_groups, converted, counters, entry_counts)


def _is_count(v: Any) -> bool:
    """Whether ``v`` is an int >= 0 (anything ``operator.index`` takes but a bool)."""
    if isinstance(v, bool):
        return False
    try:
        return operator.index(v) >= 0
    except TypeError:
        return False
