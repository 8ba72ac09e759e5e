"""Parameters tied through memory: found before a copy, tied again in the copy.

Two Parameters may hold views of one array (a decoder's weight that is the encoder's,
transposed: ``dec.W.data = enc.W.data.T``); the optimizers keep such parameters tied (see
:mod:`.optimizers.flat`). ``copy.deepcopy`` and ``pickle`` copy each numpy array on its
own, so a copy of the model would hold two arrays where the original holds one, and train
differently. A layer or an optimizer that is copied therefore records, next to its
state, a copy of the memory its tied parameters share (:func:`find_ties`), and the copy
gives each of its parameters the same view of that memory again (:func:`restore_ties`).

Memory is compared by address range, on the host (numpy arrays): arrays whose ranges
meet are tied, ranges that do not meet are apart, whatever array they are views of (the
parameters an optimizer packed into one buffer are apart).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any


class _Memory:
    """A range of host memory, as numpy reads it through ``__array_interface__``."""

    def __init__(self, start: int, size: int, owner: Any) -> None:
        self.owner = owner  # an array in the range, kept alive while the range is read
        self.__array_interface__ = {
            "data": (start, True),
            "shape": (size,),
            "typestr": "|u1",
            "version": 3,
        }


def _owner(a: Any, ndarray: type) -> Any:
    """What holds the memory of the numpy array ``a``: an array, or another buffer."""
    while isinstance(a.base, ndarray):
        a = a.base
    return a if a.base is None else a.base


def _extent(a: Any) -> tuple[int, int] | None:
    """The byte range ``[low, high)`` that the numpy array ``a`` reads; None when empty."""
    low = high = a.__array_interface__["data"][0]
    if a.flags.c_contiguous:  # (a parameter an optimizer packed: its view of the buffer)
        return (low, low + a.nbytes) if a.size else None
    for n, stride in zip(a.shape, a.strides):
        if n == 0:
            return None
        if stride < 0:
            low += (n - 1) * stride
        else:
            high += (n - 1) * stride
    return low, high + a.itemsize


def find_ties(params: Iterable[Any]) -> list[tuple] | None:
    """The groups of ``params`` whose arrays share memory, each with a copy of that memory.

    Parameters holding one array object are not looked for (a copy keeps them on one
    array anyway) unless a view of that array is another parameter's.

    Args:
        params: Parameters (or Variables); those without a numpy array are left out.

    Returns:
        None when no two arrays share memory (a copy needs nothing more); else, per
        group, ``(memory, views)``: ``memory`` a new uint8 array holding the bytes the
        group reads, ``views`` a list of ``(parameters holding one array, offset, shape,
        strides, dtype, writeable)``. It pickles and deep-copies as plain values.
    """
    np = sys.modules.get("numpy")
    if np is None:  # no numpy array was ever made
        return None
    arrays: dict[int, tuple[Any, list]] = {}
    for p in params:
        a = getattr(p, "data", None)
        if isinstance(a, np.ndarray):
            arrays.setdefault(id(a), (a, []))[1].append(p)
    if len(arrays) < 2:
        return None
    by_owner: dict[int, list] = {}  # arrays of different owners never share memory
    for a, holders in arrays.values():
        by_owner.setdefault(id(_owner(a, np.ndarray)), []).append((a, holders))
    ranged = []
    for shared in by_owner.values():
        if len(shared) > 1:
            for a, holders in shared:
                extent = _extent(a)
                if extent is not None:
                    ranged.append((extent, a, holders))
    if len(ranged) < 2:
        return None
    ranged.sort(key=lambda r: r[0])
    groups, reach = [], None
    for r in ranged:  # by start: a range joins the group whose reach it starts before
        if reach is not None and r[0][0] < reach:
            groups[-1].append(r)
            reach = max(reach, r[0][1])
        else:
            groups.append([r])
            reach = r[0][1]
    ties = []
    for group in groups:
        if len(group) < 2:
            continue
        low = group[0][0][0]
        high = max(extent[1] for extent, _, _ in group)
        memory = np.array(_Memory(low, high - low, group[0][1]), copy=True)
        views = [
            (
                tuple(holders),
                a.__array_interface__["data"][0] - low,
                a.shape,
                a.strides,
                a.dtype,
                bool(a.flags.writeable),
            )
            for _, a, holders in group
        ]
        ties.append((memory, views))
    return ties or None


def restore_ties(ties: list[tuple]) -> None:
    """Give the parameters of :func:`find_ties`'s groups their views of its memory copies.

    Called on a copy, with the copy of what :func:`find_ties` returned for the original:
    each group's parameters then share one new array as the original's share theirs.

    Args:
        ties: what :func:`find_ties` returned (not None).
    """
    np = sys.modules["numpy"]  # the memory copies are numpy arrays
    for memory, views in ties:
        for holders, offset, shape, strides, dtype, writeable in views:
            view = np.ndarray(shape, dtype=dtype, buffer=memory, offset=offset, strides=strides)
            if not writeable:
                view.flags.writeable = False
            for p in holders:
                p.data = view


def tied_loads(params: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new`` with the arrays of tied parameters made views of one new memory, as now.

    A load replaces each parameter's array; parameters that share memory (tied weights, or
    one array held by two) would each get an array of its own and then train apart. Each
    group of them gets a new memory instead: the loaded arrays are written into their views
    of it, in ``params``' order; a tied parameter missing from ``new`` keeps its values, on
    its view of the new memory.

    Args:
        params: ``{name: parameter}``, every parameter of the model.
        new: ``{name: array}``, the arrays to load, each of its parameter's shape and dtype
            and shared with nothing.

    Returns:
        ``{name: array}`` to assign: ``new``'s, with the views in their place, and the
        views of tied parameters not in ``new``.

    Raises:
        ValueError: two tied parameters are given different values where their arrays
            share memory (the message names them); nothing is changed.
    """
    np = sys.modules.get("numpy")
    if np is None:
        return dict(new)
    names = {id(p): k for k, p in params.items()}
    out = dict(new)
    groups = []  # (memory, views) as find_ties gives them, one array held twice included
    ties = find_ties(params.values()) or []
    in_ties = {id(p) for _, views in ties for view in views for p in view[0]}
    holders: dict[int, list] = {}
    for p in params.values():
        a = getattr(p, "data", None)
        if isinstance(a, np.ndarray) and id(p) not in in_ties:
            holders.setdefault(id(a), [a, []])[1].append(p)
    for a, ps in holders.values():
        if len(ps) > 1 and any(names[id(p)] in new for p in ps):
            memory = np.array(a, order="C")  # (a copy: a parameter not loaded keeps its values)
            groups.append((memory, [(tuple(ps), 0, a.shape, memory.strides, a.dtype, True)]))
    groups += ties
    for memory, views in groups:
        if not any(names[id(p)] in new for view in views for p in view[0]):
            continue
        made = []
        for ps, offset, shape, strides, dtype, writeable in views:
            view = np.ndarray(shape, dtype=dtype, buffer=memory, offset=offset, strides=strides)
            keys = [names[id(p)] for p in ps]
            for k in keys:
                if k in new:
                    view[...] = new[k]
            made.append((view, keys, writeable))
        for view, keys, writeable in made:
            for k in keys:
                if k in new and not bool(
                    ((view == new[k]) | ((view != view) & (new[k] != new[k]))).all()
                ):
                    shared = [k for _, ks, _ in made for k in ks]
                    raise ValueError(
                        f"parameters {', '.join(map(repr, shared))} share memory in the model "
                        f"(tied weights), but the values given for them differ where their "
                        f"arrays overlap; give equal values there, or untie them "
                        f"first (p.data = p.data.copy())"
                    )
            if not writeable:
                view.flags.writeable = False
            for k in keys:
                out[k] = view
    return out
