"""Which of a replay's elementwise forwards its backend runs as one fused call.

A forward joins the forward that reads its value when nothing else does (no vjp, no other
forward, no gradient store, not the call's result or an optimizer's state), no effect runs
between the two, and both compute on arrays of one backend and dtype, each of the output's
shape or 0-d. Joined forwards form a tree whose root is the last one to run; the backend's
:meth:`~zerograd.backends.Backend.fuse` then decides (numpy: never; CuPy: one
``ElementwiseKernel``). A chain runs where its root ran, on inputs that all exist by then.
Its names are positional (inputs ``x0, x1, ...``, steps ``t0, t1, ...``), so the same
operations give an equal chain in every replay, and a backend may keep one kernel for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from ..backends.chains import Chain, Step, op_of
from ..backends.registry import registry
from .trace import Effect, Forward


@dataclass
class Fused:
    """A chain the backend fuses: ``slot(out) = call(*slots(ins))`` where its root ran."""

    out: int
    ins: list[int]
    call: Any


def plan(code: list, meta: dict, uses: dict[int, list[int]]) -> tuple[dict, dict]:
    """The chains of ``code`` its backends fuse.

    Args:
        code: the trace's instructions.
        meta: slot -> ``(type, shape, dtype)``.
        uses: slot -> the indices of the instructions reading it, with ``len(code)`` for a
            read after the replay (its result, an optimizer's state).

    Returns:
        ``(fused, joined)``: root index -> :class:`Fused`, and the index of every other
        forward of a fused chain -> its root's index.
    """
    into: dict[int, int] = {}  # forward index -> the forward index that reads its value
    effects = list(accumulate(type(c) is Effect for c in code))  # how many up to each index
    for i, ins in enumerate(code):
        if not _fusable(ins, meta):
            continue
        readers = uses.get(ins.outs[0], ())
        if len(readers) != 1 or readers[0] >= len(code):
            continue
        j = readers[0]
        reader = code[j]
        if not _fusable(reader, meta) or meta[reader.outs[0]] != meta[ins.outs[0]]:
            continue
        if effects[j] != effects[i]:
            continue  # an effect may write into an input (an optimizer's update, in place)
        into[i] = j
    # a reader runs after what it reads (j > i): from the last forward back, each one's root
    # is its reader's, found already (one step each, where following the links from every
    # forward of a chain L long took L**2 / 2: seconds for a deep backward's chain)
    order = sorted(into)
    roots: dict[int, int] = {}
    for i in reversed(order):
        j = into[i]
        roots[i] = roots.get(j, j)
    members: dict[int, list[int]] = {}
    for i in order:  # (chains in the order of their first forward, as backends are asked)
        members.setdefault(roots[i], []).append(i)
    fused, joined = {}, {}
    for root, inner in members.items():
        found = _chain(code, sorted([*inner, root]), meta)
        if found is not None:
            fused[root] = found
            joined.update(dict.fromkeys(inner, root))
    return fused, joined


def _fusable(ins: Any, meta: dict) -> bool:
    """Whether ``ins`` is a one-output forward whose kernel computes a chain op.

    Its arrays must share the output's backend and dtype and have its shape, or none.
    """
    if type(ins) is not Forward or ins.kernel is None or ins.attrs or len(ins.outs) != 1:
        return False
    if ins.many or op_of(ins.fn) is None or ins.fn.check_values_of:
        return False
    typ, shape, dtype = meta[ins.outs[0]]
    if shape == ():
        return False
    for n in ins.ins:
        t, s, d = meta[n]
        if t is not typ or d != dtype or (s != shape and s != ()):
            return False
    return True


def _chain(code: list, order: list[int], meta: dict) -> Fused | None:
    """The chain of the forwards at ``order`` (the root last), if their backend fuses it."""
    made = {code[i].outs[0] for i in order}
    ins: list[int] = []
    names: dict[int, str] = {}  # slot -> its name in the chain
    for i in order:
        for n in code[i].ins:
            if n not in made and n not in names:
                names[n] = f"x{len(ins)}"
                ins.append(n)
    steps = []
    for k, i in enumerate(order):
        f = code[i]
        names[f.outs[0]] = f"t{k}"
        steps.append(Step(f"t{k}", op_of(f.fn), tuple(names[n] for n in f.ins)))
    out = code[order[-1]].outs[0]
    typ, _, dtype = meta[out]
    backend = registry.by_type.get(typ)
    if backend is None:
        return None
    chain = Chain(tuple(names[n] for n in ins), tuple(steps))
    call = backend.fuse(chain, dtype)
    return None if call is None else Fused(out, ins, call)
