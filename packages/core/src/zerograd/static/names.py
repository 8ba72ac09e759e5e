"""The objects a step reaches by name: its globals, closure cells and instance attributes.

A replay runs none of the step's Python: the model, the optimizer and every other object a
global name, a closure cell or (for a method) an attribute of the instance referred to
when the step was recorded are the ones the replay works on, and a list, dict or set it
named held what it held then (``cfg["scale"]``). A name rebound between calls
(``model = MLP(...)`` for the next fold, ``target = copy.deepcopy(model)``) must therefore
stop the replay; a name rebound, or a list or dict changed, inside a call (a counter
``n += 1``, ``history.append(loss)``) is Python work a replay would not do.

:func:`watched` lists those names for a function, following the plain Python functions
it names (a helper that reads ``model`` counts too); a :class:`Name` remembers what each
referred to and tells whether it still does.
"""

from __future__ import annotations

import collections
import dis
import types
import weakref
from collections.abc import Callable
from typing import Any

from .randomness import state_of

_MISSING = object()  # what a name that does not exist (any more) refers to
_LOADS = {"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"}
_ATTRS = {"LOAD_ATTR", "LOAD_METHOD", "STORE_ATTR", "DELETE_ATTR"}
_CONTAINERS = (list, dict, set, collections.deque, bytearray)
_MAX_NAMES = 256  # a step reaching more names than this is watched through the first ones
_MAX_ITEMS = 256  # containers up to this length are compared item by item (identity)
# code -> its names; weakly: a step redefined leaves its old code to be freed
_code_names: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class WeaklyBound:
    """A method bound to its instance by a weak reference.

    Called, it calls the function with the instance first, as a bound method does.

    An instance's own StaticGraph of a decorated method (``StaticGraph.__get__``) lives in
    the instance's ``__dict__`` and calls this: a bound method there would hold the
    instance, a reference cycle that kept a dropped instance (and the model it names)
    until the cyclic garbage collector ran. So ``obj.step`` does not keep ``obj`` alive.

    Args:
        fn: the function (the method's ``__func__``).
        instance: the instance (one that takes weak references).
    """

    __slots__ = ("__func__", "_ref")

    def __init__(self, fn: Callable, instance: Any) -> None:
        self.__func__ = fn
        self._ref = weakref.ref(instance)

    @property
    def __self__(self) -> Any:
        """The instance, None once it is gone."""
        return self._ref()

    def __getattr__(self, name: str) -> Any:  # __name__, __qualname__, __dict__: the function's
        return getattr(self.__func__, name)

    def __reduce__(self) -> tuple:  # a copy is a bound method of its own
        return (types.MethodType, (self.__func__, self._ref()))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        instance = self._ref()
        if instance is None:
            raise ReferenceError(
                f"{self.__func__.__qualname__}: the object whose static_graph method this is "
                f"was freed; obj.{self.__func__.__name__} does not keep obj alive (its "
                f"recordings live in obj): keep a reference to the object while you call it."
            )
        return self.__func__(instance, *args, **kwargs)


class Name:
    """One name a step reads: ``holder`` (a globals dict, a cell, an instance) and its value.

    An instance is held weakly (:attr:`holder` reads it back): the instance may keep the
    recordings that hold this Name (see :class:`WeaklyBound`).

    Args:
        holder: where the name lives.
        name: the name (a cell's variable name, for a cell).
        value: what it refers to now.
    """

    __slots__ = ("place", "name", "value", "fingerprint")

    def __init__(self, holder: Any, name: str, value: Any) -> None:
        if type(holder) is not dict and type(holder) is not types.CellType:
            try:
                holder = weakref.ref(holder)
            except TypeError:  # (an instance that takes no weak references: held)
                pass
        self.place, self.name, self.value = holder, name, value
        self.fingerprint = _fingerprint(value)

    @property
    def holder(self) -> Any:
        """Where the name lives: the globals dict, the cell or the instance (None if gone)."""
        place = self.place
        return place() if type(place) is weakref.ReferenceType else place

    def contents(self) -> Any:
        """What a replay compares of a list, dict or set the name refers to, or None.

        Returns:
            The fingerprint of the container's items (by identity), or None when the name
            refers to anything else (a random generator's state is compared only within
            a call: drawing from it between calls is the caller's business).
        """
        fp = self.fingerprint
        return None if fp is None or type(fp) is _Drawn else fp

    def current(self) -> Any:
        """What the name refers to now (a private sentinel when it is gone).

        Returns:
            The object.
        """
        return value_of(self.place, self.name)

    def describe(self) -> str:
        """The name as the step's code spells it, for messages.

        Returns:
            ``'model'``, or ``'self.target'`` for an instance attribute.
        """
        if type(self.place) is dict or type(self.place) is types.CellType:
            return self.name
        return f"self.{self.name}"

    def changed(self) -> str | None:
        """How the name changed since it was watched, or None.

        Returns:
            ``'rebound'``, ``'changed'`` (a list, dict or set changed in place), ``'drew'``
            (a random generator drew numbers), or None.
        """
        now = self.current()
        if now is not self.value:
            return "rebound"
        if self.fingerprint is not None and _fingerprint(now) != self.fingerprint:
            return "drew" if type(self.fingerprint) is _Drawn else "changed"
        return None


def value_of(holder: Any, name: str) -> Any:
    """What ``name`` refers to in ``holder`` (a dict, a cell or an instance), or a sentinel.

    Args:
        holder: a globals dict, a cell, or an object with a ``__dict__`` (or a weak
            reference to one: :attr:`Name.place`).
        name: the name.

    Returns:
        The object, or a private sentinel when the name is gone.
    """
    if type(holder) is dict:
        return holder.get(name, _MISSING)
    if type(holder) is types.CellType:
        try:
            return holder.cell_contents
        except ValueError:  # an empty cell
            return _MISSING
    if type(holder) is weakref.ReferenceType:
        holder = holder()
        if holder is None:
            return _MISSING
    return holder.__dict__.get(name, _MISSING)


def watched(fn: Any) -> list[Name]:
    """The names ``fn`` reads: globals, closure cells, its instance's attributes (a method).

    Plain Python functions (and methods) that ``fn`` reaches by those names are followed,
    so a helper that reads ``model`` counts; of zerograd's own functions and methods only
    the instance's attributes count (a Trainer's model, optimizer and loss function).

    Args:
        fn: the step (a function, a bound method, or any callable).

    Returns:
        One :class:`Name` per name, in the order first reached.
    """
    out: list[Name] = []
    _walk(fn, out, set())
    return out


def _walk(fn: Any, out: list[Name], seen: set) -> None:
    instance = None
    if type(fn) is types.MethodType or type(fn) is WeaklyBound:
        instance, fn = fn.__self__, fn.__func__
    if type(fn) is not types.FunctionType:
        inner = getattr(fn, "__wrapped__", None)  # a decorated function: what it calls
        if inner is not None and inner is not fn and id(inner) not in seen:
            seen.add(id(inner))
            _walk(inner, out, seen)
        return
    key = (id(fn.__code__), id(instance))
    if key in seen or len(out) >= _MAX_NAMES:
        return
    seen.add(key)
    names, attrs = _names(fn.__code__)
    reached = []
    # zerograd's own functions read zerograd's globals; a method of its (the Trainer's
    # step) still reads its instance's attributes, which may be the user's objects
    if not _ours(fn.__globals__.get("__name__") or ""):
        g = fn.__globals__
        for name in names:
            if name in g:
                reached.append(Name(g, name, g[name]))
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            reached.append(Name(cell, name, value_of(cell, name)))
    d = getattr(instance, "__dict__", None)
    if type(d) is dict:
        for name in attrs:
            if name in d:
                reached.append(Name(instance, name, d[name]))
    for n in reached:
        if len(out) >= _MAX_NAMES:
            return
        out.append(n)
        if type(n.value) in (types.FunctionType, types.MethodType) or hasattr(
            n.value, "__wrapped__"
        ):
            _walk(n.value, out, seen)


def _ours(module: str) -> bool:
    return module == "zerograd" or module.startswith(("zerograd.", "zerograd_"))


def _names(code: types.CodeType) -> tuple[tuple, tuple]:
    """The global names and the attribute names ``code`` (and the code inside it) uses."""
    got = _code_names.get(code)
    if got is None:
        names: set[str] = set()
        attrs: set[str] = set()
        stack = [code]
        while stack:
            c = stack.pop()
            for ins in dis.get_instructions(c):
                if ins.opname in _LOADS:
                    names.add(ins.argval)
                elif ins.opname in _ATTRS:
                    attrs.add(ins.argval)
            stack.extend(k for k in c.co_consts if type(k) is types.CodeType)
        got = _code_names[code] = (tuple(sorted(names)), tuple(sorted(attrs)))
    return got


class _Drawn(tuple):
    """The fingerprint of a random generator: its state."""

    __slots__ = ()


def contents_of(value: Any) -> Any:
    """The fingerprint of a list, dict or set (see :meth:`Name.contents`); None otherwise.

    Args:
        value: any object.

    Returns:
        Something that compares equal while the container holds the same objects.
    """
    return None if not isinstance(value, _CONTAINERS) else _fingerprint(value)


def _fingerprint(value: Any) -> Any:
    """What changes when a list, dict or set is changed in place, or a generator draws.

    None for anything else.
    """
    if not isinstance(value, _CONTAINERS):
        state = state_of(value)
        return None if state is None else _Drawn((state,))
    if len(value) > _MAX_ITEMS:
        return len(value)
    if type(value) is dict:
        return tuple([(id(k), id(v)) for k, v in value.items()])
    if isinstance(value, (set, bytearray)):
        return (len(value), frozenset(value) if isinstance(value, set) else bytes(value))
    return tuple([id(v) for v in value])
