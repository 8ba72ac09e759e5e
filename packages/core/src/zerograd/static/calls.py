"""A static-graph call's arguments: their leaves, and the key a replay is filed under."""

from __future__ import annotations

from typing import Any

from ..backends.registry import registry
from ..config import Config
from ..utils import is_named_tuple
from ..variable import Variable

_by_type = registry.by_type
_SCALARS = (type(None), bool, int, str, bytes)
_not_arrays: dict[type, bool] = {}  # types with a shape that no backend owns (numpy scalars)
registry.type_caches.append(_not_arrays)  # emptied when the backends change


def arguments(args: tuple, kwargs: dict) -> tuple[tuple, list]:
    """The key of a call and its leaves.

    The leaves are the Variables and arrays inside ``args`` and ``kwargs`` (through tuples,
    lists and dicts), in order: what a replay reads its inputs from and gives gradients to.
    The key holds what a trace depends on besides them: each leaf's array type (its
    backend), shape and dtype, whether a Variable holds a gradient, which leaves are the
    same object (or hold the same array), every other argument's value (numbers, strings;
    floats by their bits, so that ``-0.0`` is not ``0.0``; other objects by identity), the
    structure, and ``Config``'s ``train`` and ``enable_backprop``.

    Args:
        args: the positional arguments.
        kwargs: the keyword arguments.

    Returns:
        ``(key, leaves)``; the key is hashable.
    """
    key: list = [Config.train, Config.enable_backprop]
    leaves: list = []
    _flatten(args, key, leaves)
    if kwargs:
        _flatten(kwargs, key, leaves)
    seen: dict[int, int] = {}
    for i, leaf in enumerate(leaves):  # a trace reads one array once: note repeats
        held = leaf.data if isinstance(leaf, Variable) else None
        for obj in (leaf,) if held is None else (leaf, held):
            first = seen.setdefault(id(obj), i)
            if first != i:
                key.append((i, first))
    return tuple(key), leaves


def _flatten(x: Any, key: list, leaves: list) -> None:
    t = type(x)
    if t in _by_type:
        key.append((t, x.shape, x.dtype))
        leaves.append(x)
    elif isinstance(x, Variable):
        d = x.data
        key.append((t, type(d), getattr(d, "shape", None), getattr(d, "dtype", None)))
        key.append(x.grad is None)
        leaves.append(x)
    elif t is tuple or t is list or is_named_tuple(x):  # a named tuple: its class too
        key.append((t, len(x)))
        for v in x:
            _flatten(v, key, leaves)
    elif t is dict:
        key.append((t, tuple(x)))
        for v in x.values():
            _flatten(v, key, leaves)
    elif t in _SCALARS:
        key.append((t, x))
    elif isinstance(x, (float, complex)):  # by bits: -0.0 is not 0.0, and nan is nan
        key.append((t, _float_bits(x)))
    elif _unmet_array(t, x):
        key.append((t, x.shape, x.dtype))
        leaves.append(x)
    elif getattr(x, "shape", None) == () and hasattr(x, "tobytes") and hasattr(x, "dtype"):
        key.append((t, str(x.dtype), x.tobytes()))  # a library scalar (numpy.float32(-0.0))
    else:
        try:
            key.append((t, hash(x), x))  # a hashable value: compared by equality
        except TypeError:
            key.append((t, _Same(x)))  # anything else: by identity


def _unmet_array(t: type, x: Any) -> bool:
    """Whether ``x`` is an array of a type that no operation has met yet.

    That is the first call of a process, or the first after the backends changed: the
    type is not in the registry's cache yet. Keyed by identity, as an unknown object, the
    array would make a kind of call of its own, and live as long as the function.
    """
    if t in _not_arrays or not hasattr(x, "shape"):
        return False
    if registry.resolve_type(t) is None:
        _not_arrays[t] = True
        return False
    return True


def by_identity(key: tuple) -> list[str]:
    """The type names of the arguments that ``key`` (an :func:`arguments` key) holds by identity.

    Those are the objects that are no array, Variable, number or string, nor a tuple, list,
    dict or named tuple of them, and that compare by identity (unhashable ones, and those
    keeping ``object``'s ``==``): a new such object makes a new kind of call.
    """
    names = set()
    for e in key:
        if type(e) is not tuple:
            continue
        if len(e) == 2 and type(e[1]) is _Same:
            names.add(e[0].__qualname__)
        elif len(e) == 3 and type(e[2]) is e[0] and e[0].__eq__ is object.__eq__:
            names.add(e[0].__qualname__)
    return sorted(names)


def _float_bits(x: float | complex) -> tuple[str, ...]:
    if isinstance(x, complex):
        return (float(x.real).hex(), float(x.imag).hex())
    return (float(x).hex(),)


class _Same:
    """An unhashable argument in a key: equal only to itself, and kept alive with the key.

    Keyed by ``id`` alone, a freed argument's address could be reused by a new object, which
    would then replay the old one's recording (its parameters) without any warning.
    """

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return type(other) is _Same and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)
