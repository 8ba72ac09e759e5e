"""The arguments of the transforms: which ones to differentiate, and the checks on them."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ..checks import int_like
from ..variable import Variable
from .trees import Tree, flatten


def function(f: Any, op: str) -> Callable[..., Any]:
    """``f`` itself when it is callable; a TypeError naming ``op`` otherwise."""
    if not callable(f):
        raise TypeError(
            f"{op}: expected a function to transform, got {type(f).__name__} ({f!r:.40})"
        )
    return f


def argnums(value: Any, op: str) -> tuple[tuple[int, ...], bool]:
    """``argnums`` as a tuple of ints, and whether it was one int (results then unwrapped).

    Raises:
        TypeError: not an int or a tuple/list of ints (bools are not ints).
        ValueError: an empty tuple, or one naming an argument twice.
    """
    if int_like(value):
        return (operator.index(value),), True
    if isinstance(value, (tuple, list)) and all(int_like(a) for a in value):
        nums = tuple(operator.index(a) for a in value)
        if not nums:
            raise ValueError(f"{op}: argnums is empty; name at least one argument to differentiate")
        return nums, False
    raise TypeError(
        f"{op}: argnums must be an int or a tuple of ints, got {value!r} ({type(value).__name__})"
    )


def transform(f: Any, argnums_value: Any, op: str) -> tuple[tuple[int, ...], bool]:
    """The checks of a transform taking ``(f, argnums)``: :func:`function`, then :func:`argnums`.

    Returns:
        What :func:`argnums` returns.
    """
    function(f, op)
    return argnums(argnums_value, op)


def argument_tuples(primals: Any, tangents: Any, op: str, example: str) -> None:
    """Refuse ``primals`` or ``tangents`` that are not a tuple (or list) of arguments.

    Args:
        primals: the point, as given.
        tangents: the directions, as given.
        op: the transform, for the message.
        example: a correct call, for the message (``"jvp(f, (x,), (t,))"``).

    Raises:
        TypeError: either is not a tuple or a list.
    """
    for name, v in (("primals", primals), ("tangents", tangents)):
        if not isinstance(v, (tuple, list)):
            raise TypeError(
                f"{op}: {name} must be a tuple of the function's arguments, got "
                f"{type(v).__name__}; write {example}."
            )


def resolve(nums: tuple[int, ...], nargs: int, op: str) -> tuple[int, ...]:
    """``nums`` as positions among ``nargs`` arguments (negative ones count from the end).

    Raises:
        ValueError: a position is out of range, or two name one argument.
    """
    out = []
    for a in nums:
        if not -nargs <= a < nargs:
            raise ValueError(
                f"{op}: argnums {a} is out of range for a call with {nargs} positional "
                f"argument{'s' if nargs != 1 else ''} (valid: {-nargs}..{nargs - 1})"
            )
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: argnums {nums} names one argument twice")
    return tuple(out)


def differentiated(args: tuple, nums: tuple[int, ...]) -> tuple[list, list[str], list[Tree]]:
    """The leaves of the arguments at ``nums``, their names for errors, and their trees."""
    leaves: list = []
    paths: list[str] = []
    trees: list[Tree] = []
    for i in nums:
        ls, tree = flatten(args[i])
        leaves += ls
        paths += [f"argument {i}{p}" for p in tree.paths()]
        trees.append(tree)
    return leaves, paths, trees


def replaced(args: tuple, nums: tuple[int, ...], trees: list[Tree], leaves: list) -> list:
    """``args`` with the arguments at ``nums`` rebuilt from ``leaves`` (in their order)."""
    out = list(args)
    k = 0
    for i, tree in zip(nums, trees):
        n = tree.size
        out[i] = tree.rebuild(leaves[k : k + n])
        k += n
    return out


def regroup(trees: list[Tree], leaves: list, single: bool) -> Any:
    """Per-leaf results in the arguments' structures: one structure, or a tuple of them."""
    parts = []
    k = 0
    for tree in trees:
        n = tree.size
        parts.append(tree.rebuild(leaves[k : k + n]))
        k += n
    return parts[0] if single else tuple(parts)


def any_variable(values: Any) -> bool:
    """Whether a leaf of ``values`` is a Variable (results then come as Variables)."""
    leaves, _ = flatten(values)
    return any(isinstance(v, Variable) for v in leaves)
