"""Hyperparameter attributes: ``opt.lr`` reads group 0 and sets every group."""

from __future__ import annotations

import math
import sys
from typing import Any

from zerograd.checks import is_real


class hyperparameter:
    """A hyperparameter attribute (``opt.lr``): reads group 0's value, sets every group's.

    ``hyperparameter("lr")`` under another attribute name makes an alias (Adam's ``alpha``).
    ``low``/``high`` bound the accepted values; ``open`` names the bounds that are excluded
    (``"high"`` for Adam's betas, ``"low"`` for ``eps``). Every value is checked when set,
    in a parameter group, in a loaded state dict, and at the start of each update.
    ``missing`` is the value of a hyperparameter added to an optimizer later, for groups
    saved (pickled) before it existed.

    Args:
        key: the group key it stands for (None: the attribute's own name).
        low: the lowest accepted value.
        high: the highest accepted value.
        open: which of ``"low"`` and ``"high"`` are excluded.
        missing: the value a group without this key has (None: such a group is refused).
    """

    def __init__(
        self,
        key: str | None = None,
        *,
        low: float = 0.0,
        high: float = math.inf,
        open: tuple[str, ...] = (),  # noqa: A002 - reads well at the definitions
        missing: float | None = None,
    ) -> None:
        self.key = key
        self.missing = missing
        self.low, self.high = low, high
        self.low_open, self.high_open = "low" in open, "high" in open

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.key = self.key or name

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        groups = obj.__dict__.get("param_groups")
        return groups[0][self.key] if groups else obj.defaults[self.key]

    def __set__(self, obj: Any, value: Any) -> None:
        value = check_hyper(type(obj).__name__, self.name, value, self)
        obj.defaults[self.key] = value
        for group in obj.param_groups:
            group[self.key] = value

    def interval(self) -> str:
        """The accepted values in words: ``>= 0``, ``> 0`` or ``in [0, 1)``.

        Returns:
            The interval as text, for error messages.
        """
        if self.high == math.inf:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        left = "(" if self.low_open else "["
        right = ")" if self.high_open else "]"
        return f"in {left}{self.low:g}, {self.high:g}{right}"

    def accepts(self, v: float) -> bool:
        """Whether the float ``v`` lies in the accepted interval.

        Args:
            v: the value to test.

        Returns:
            True when ``v`` is accepted.
        """
        above = v > self.low if self.low_open else v >= self.low
        below = v < self.high if self.high_open else v <= self.high
        return above and below

    def closed_finite(self) -> tuple[float, float]:
        """``(lo, hi)``: a float ``v`` is accepted and finite exactly when ``lo <= v <= hi``.

        An open bound becomes the nearest float inside it; an infinite one the largest
        finite float (nan fails every comparison).
        """
        lo = math.nextafter(self.low, math.inf) if self.low_open else self.low
        hi = math.nextafter(self.high, -math.inf) if self.high_open else self.high
        return max(lo, -sys.float_info.max), min(hi, sys.float_info.max)


_SPECS: dict[type, list] = {}  # optimizer class -> [(group key, hyperparameter)]
_BOUNDS: dict[type, list] = {}  # optimizer class -> [(group key, lo, hi)]: closed_finite()
_KEYS: dict[type, frozenset] = {}  # optimizer class -> the keys a group may hold
_ANY = hyperparameter()  # finite and >= 0: the check of hyperparameters without a spec
_GROUP_ONLY = ("params", "param_names")  # a group's keys besides its hyperparameters
#: PyTorch's group keys with another spelling here
_PYTORCH_KEYS = {"betas": "PyTorch's betas are group['beta1'] and group['beta2']. "}


def check_hyper(owner: str, name: str, value: Any, spec: hyperparameter | None = None) -> float:
    """``value`` as a float, or a TypeError/ValueError naming ``owner.name`` and its range.

    Args:
        owner: the optimizer's class name, for the message.
        name: the hyperparameter's name, for the message.
        value: the value to check.
        spec: the hyperparameter's descriptor (its bounds); finite and >= 0 when None.

    Returns:
        ``float(value)``.

    Raises:
        TypeError: ``value`` is not a real number (bools refused; a 0-d array of
            integers or floats counts, as in :func:`zerograd.checks.is_real`).
        ValueError: ``value`` is not finite or out of the range.
    """
    if not is_real(value):
        raise TypeError(
            f"{owner}: {name} must be a real number, got {value!r} ({type(value).__name__})."
        )
    spec = spec or _ANY
    value = float(value)
    if not math.isfinite(value) or not spec.accepts(value):
        raise ValueError(
            f"{owner}: {name} must be a finite number {spec.interval()}, got {value!r}."
        )
    return value


def spec_of(specs: dict[str, hyperparameter], name: str) -> hyperparameter | None:
    """The descriptor for the attribute name or group key ``name`` (the key's own first).

    Args:
        specs: an optimizer's ``hyperparameter_specs()``.
        name: an attribute name (``"alpha"``) or a group key (``"lr"``).

    Returns:
        The descriptor, or None when ``name`` is no hyperparameter.
    """
    spec = specs.get(name)
    if spec is not None:
        return spec
    return next((s for s in specs.values() if s.key == name), None)


def check_group(cls: Any, hp: dict) -> dict:
    """One parameter group's hyperparameters, each checked against its range.

    Args:
        cls: the optimizer class (its ``hyperparameter`` attributes give the ranges).
        hp: the group (or the optimizer's defaults).

    Returns:
        ``hp`` itself when every hyperparameter is already a float in its range, else a
        copy with the values converted.

    Raises:
        TypeError, ValueError: a value someone put in the group by hand is not a number or
            out of range (named ``Cls.update(): key ...``).
        ValueError: the group holds a key that is no hyperparameter of ``cls`` (written
            after ``setup``, which refuses them: PyTorch's ``group["betas"]``).
    """
    specs = _SPECS.get(cls)
    if specs is None:
        by_name = cls.hyperparameter_specs()
        keys = {spec.key for spec in by_name.values()}
        specs = _SPECS[cls] = [(k, spec_of(by_name, k)) for k in sorted(keys)]
        _KEYS[cls] = frozenset([*keys, *_GROUP_ONLY])
        _BOUNDS[cls] = [(k, *(spec or _ANY).closed_finite()) for k, spec in specs]
    if not _KEYS[cls].issuperset(hp):
        _refuse_keys(cls, hp, [k for k, _ in specs])
    for key, lo, hi in _BOUNDS[cls]:  # asked at every update: floats in range, the usual
        v = hp.get(key)
        if type(v) is not float or not lo <= v <= hi:
            break
    else:
        return hp
    out = hp
    for key, spec in specs:
        v = hp.get(key, spec.missing)
        if type(v) is not float or not spec.accepts(v) or not math.isfinite(v) or key not in hp:
            if v is None and key not in hp:  # a group appended to param_groups by hand
                raise ValueError(
                    f"{cls.__name__}.update(): a parameter group has no {key!r}: a group "
                    f"appended to param_groups by hand holds only the keys it was given. "
                    f"Give it every hyperparameter, or set the optimizer up with all its "
                    f"groups (optimizer.setup([{{'params': ...}}, ...]) fills each group's "
                    f"missing keys from the defaults)."
                )
            out = dict(out) if out is hp else out  # never write into the group itself
            out[key] = check_hyper(f"{cls.__name__}.update()", key, v, spec)
    return out


def _refuse_keys(cls: Any, hp: dict, keys: list[str]) -> None:
    """Raise the ValueError of a group holding keys that ``cls`` never reads."""
    name = cls.__name__
    unknown = [k for k in hp if k not in _KEYS[cls]]
    hints = "".join(_PYTORCH_KEYS.get(k, "") for k in unknown if isinstance(k, str))
    raise ValueError(
        f"{name}.update(): a parameter group holds {unknown}, which {name} does not read "
        f"(its keys: {keys}); nothing was updated. {hints}Remove it: del "
        f"optimizer.param_groups[i][key]."
    )
