"""Nested arguments and results: tuples, lists and dicts of arrays or Variables.

Named tuples (``collections.namedtuple``, ``typing.NamedTuple``) are tuples here, rebuilt
as their own class, as JAX's and PyTorch's trees take them.

A transform takes and returns such structures (a model's parameters as a dict of arrays, a
function's outputs as a tuple); it works on their *leaves* (anything else: an array, a
Variable, a number, None) and puts results back in the same shape.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

from ..utils import is_named_tuple
from ..variable import Variable


class Tree:
    """The shape of a nested structure with its leaves taken out.

    ``kind`` is ``"leaf"``, ``"tuple"``, ``"list"`` or ``"dict"``; ``keys`` holds a dict's
    keys in order (a named tuple's field names), ``children`` the sub-structures, ``named``
    a named tuple's class (None for any other kind).
    """

    __slots__ = ("kind", "keys", "children", "named")

    def __init__(
        self, kind: str, keys: tuple = (), children: tuple = (), named: type | None = None
    ) -> None:
        self.kind, self.keys, self.children, self.named = kind, keys, children, named

    @property
    def size(self) -> int:
        """How many leaves the structure holds."""
        if self.kind == "leaf":
            return 1
        total = 0
        for c in self.children:
            total += c.size
        return total

    def rebuild(self, leaves: list) -> Any:
        """The structure with ``leaves`` (in flatten order) in place of the old ones."""
        it = iter(leaves)
        return self._build(it)

    def _build(self, it: Any) -> Any:
        if self.kind == "leaf":
            return next(it)
        parts = [c._build(it) for c in self.children]
        if self.kind == "dict":
            return dict(zip(self.keys, parts))
        if self.named is not None:
            return self.named(*parts)
        return tuple(parts) if self.kind == "tuple" else parts

    def paths(self, root: str = "") -> list[str]:
        """Each leaf's place, written as an index would reach it (``"[0]['W']"``)."""
        if self.kind == "leaf":
            return [root]
        out = []
        if self.named is not None:
            return [p for f, c in zip(self.keys, self.children) for p in c.paths(f"{root}.{f}")]
        labels = self.keys if self.kind == "dict" else range(len(self.children))
        for label, c in zip(labels, self.children):
            out += c.paths(f"{root}[{label!r}]")
        return out


def flatten(x: Any) -> tuple[list, Tree]:
    """Split ``x`` into its leaves (depth first, dicts in their order) and its shape.

    Args:
        x: a leaf, or a tuple (named tuples too), list or dict of further structures.

    Returns:
        ``(leaves, tree)``.
    """
    leaves: list = []
    return leaves, _flatten(x, leaves)


def _flatten(x: Any, leaves: list) -> Tree:
    if type(x) is tuple or type(x) is list:
        return Tree(
            "tuple" if type(x) is tuple else "list", (), tuple(_flatten(v, leaves) for v in x)
        )
    if type(x) is dict:
        return Tree("dict", tuple(x), tuple(_flatten(v, leaves) for v in x.values()))
    if is_named_tuple(x):
        children = tuple(_flatten(v, leaves) for v in x)
        return Tree("tuple", tuple(type(x)._fields), children, type(x))
    leaves.append(x)
    return Tree("leaf")


def flatten_outputs(out: Any, op: str) -> tuple[list, Tree]:
    """:func:`flatten` of a function's outputs, each leaf checked to be one.

    A leaf that is not a Variable, an array or a number (None from a missing ``return``, a
    string) would otherwise be taken as a constant and give zeros, or fail deep inside.

    Args:
        out: what the function returned (its aux taken out).
        op: the transform's name, for the error.

    Returns:
        ``(leaves, tree)``.

    Raises:
        TypeError: a leaf is not a Variable, an array or a number.
    """
    leaves, tree = flatten(out)
    for v, path in zip(leaves, tree.paths()):
        if isinstance(v, (Variable, numbers.Number)) or (
            hasattr(v, "shape") and hasattr(v, "dtype")
        ):
            continue
        raise TypeError(
            f"{op}: the function's output{' ' + path if path else ''} is "
            f"{type(v).__name__} {v!r:.40}, not a Variable, an array or a number"
            f"{' (a missing return?)' if v is None else ''}."
        )
    return leaves, tree


def map_leaves(fn: Callable[[Any], Any], x: Any) -> Any:
    """``x`` with ``fn`` applied to each leaf."""
    leaves, tree = flatten(x)
    return tree.rebuild([fn(v) for v in leaves])


def broadcast_prefix(prefix: Any, tree: Tree, what: str, of: str = "argument") -> list:
    """One value of ``prefix`` per leaf of ``tree``: ``prefix`` spelled over its top levels.

    A leaf of ``prefix`` (an int or None) covers the whole sub-structure at its place, as
    JAX's ``in_axes`` does: ``(None, 0)`` for a dict of parameters and a batch of inputs.

    Args:
        prefix: a structure whose top levels match ``tree``'s.
        tree: the full structure.
        what: how the caller names ``prefix`` in errors.
        of: how errors name what ``tree`` is the structure of (``"output"`` for out_axes).

    Returns:
        One value per leaf of ``tree``.

    Raises:
        ValueError: ``prefix`` does not match ``tree``'s structure.
    """
    out: list = []
    _broadcast(prefix, tree, what, "", out, of)
    return out


def _broadcast(prefix: Any, tree: Tree, what: str, path: str, out: list, of: str) -> None:
    if type(prefix) not in (tuple, list, dict) and not is_named_tuple(prefix):
        out.extend([prefix] * tree.size)
        return
    kind = {list: "list", dict: "dict"}.get(type(prefix), "tuple")
    if tree.kind == "leaf" or (kind == "dict") != (tree.kind == "dict"):
        raise ValueError(
            f"{what}{path} is a {kind} but the {of} there is "
            f"{'a single value' if tree.kind == 'leaf' else 'a ' + tree.kind}; give one int or "
            f"None per {of}, or a structure matching the {of}'s."
        )
    if kind == "dict":
        if set(prefix) != set(tree.keys):
            raise ValueError(
                f"{what}{path} has keys {sorted(map(str, prefix))} but the {of} has "
                f"{sorted(map(str, tree.keys))}; give the same keys."
            )
        for key, child in zip(tree.keys, tree.children):
            _broadcast(prefix[key], child, what, f"{path}[{key!r}]", out, of)
        return
    if len(prefix) != len(tree.children):
        raise ValueError(
            f"{what}{path} has {len(prefix)} entries but the {of} has "
            f"{len(tree.children)}; give one entry per element."
        )
    for i, (p, child) in enumerate(zip(prefix, tree.children)):
        _broadcast(p, child, what, f"{path}[{i}]", out, of)
