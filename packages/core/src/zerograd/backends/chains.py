"""Chains of elementwise operations: what a static-graph replay asks a backend to fuse.

A chain reads some arrays of one dtype (each of the output's shape, or 0-d), computes
intermediates that nothing outside the chain reads, and makes one array. A replay hands
each such chain to :meth:`~zerograd.backends.Backend.fuse`; a backend that can run it as one
kernel returns a function doing so (zerograd-cupy: one ``cupy.ElementwiseKernel``), the
others return None and the replay calls the operations one by one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ARITY: dict[str, int] = {
    "add": 2,
    "sub": 2,
    "mul": 2,
    "div": 2,
    "neg": 1,
    "maximum": 2,
    "greater": 2,
    "where": 3,
    "sqrt": 1,
    "exp": 1,
    "log": 1,
    "tanh": 1,
    "sin": 1,
    "cos": 1,
}
"""Each op a chain may hold and its operand count. Each computes what the numpy function of
its name computes on same-dtype operands (``add``: ``numpy.add``, ``div``:
``numpy.divide``, ``greater`` and ``where``: the comparison as the dtype's 0 or 1, and
``where(c, a, b)`` choosing ``a`` where ``c`` is not 0)."""

FUNCTIONS: dict[str, Any] = {
    "add": lambda xp, a, b: a + b,
    "sub": lambda xp, a, b: a - b,
    "mul": lambda xp, a, b: a * b,
    "div": lambda xp, a, b: a / b,
    "neg": lambda xp, a: -a,
    "maximum": lambda xp, a, b: xp.maximum(a, b),
    "greater": lambda xp, a, b: (a > b).astype(a.dtype),
    "where": lambda xp, c, a, b: xp.where(c != 0, a, b),
    "sqrt": lambda xp, a: xp.sqrt(a),
    "exp": lambda xp, a: xp.exp(a),
    "log": lambda xp, a: xp.log(a),
    "tanh": lambda xp, a: xp.tanh(a),
    "sin": lambda xp, a: xp.sin(a),
    "cos": lambda xp, a: xp.cos(a),
}
"""Each chain op as ``f(xp, *operands)`` on an array module ``xp``: what :data:`ARITY`
says it computes, one call, the reference a fused kernel must match."""


@dataclass(frozen=True)
class Step:
    """``name = op(*args)``, one elementwise operation of a chain.

    An argument is a chain input's or an earlier step's name, or a Python float (a constant
    cast to the chain's dtype, as numpy casts a scalar operand).
    """

    name: str
    op: str
    args: tuple[str | float, ...]


@dataclass(frozen=True)
class Chain:
    """Elementwise steps over ``inputs``; the last step's value is the output.

    Chains are compared by value, so a backend may keep one kernel per chain.

    Raises:
        ValueError: an op is unknown, has the wrong operand count, or reads a name that
            is neither an input nor made by an earlier step; or there are no steps.
    """

    inputs: tuple[str, ...]
    steps: tuple[Step, ...]

    def __post_init__(self) -> None:
        known = set(self.inputs)
        for step in self.steps:
            if step.op not in ARITY:
                raise ValueError(f"fusion: no elementwise op {step.op!r} (known: {sorted(ARITY)})")
            arity = ARITY[step.op]
            if len(step.args) != arity:
                raise ValueError(f"fusion: {step.op} takes {arity} operands, got {len(step.args)}")
            for arg in step.args:
                if isinstance(arg, str) and arg not in known:
                    raise ValueError(f"fusion: step {step.name!r} reads {arg!r} before it is made")
            known.add(step.name)
        if not self.steps:
            raise ValueError("fusion: a chain needs at least one step")


def op_of(fn: Any) -> str | None:
    """The chain op that the class of the Function ``fn`` itself declares (``fuses_as``).

    Nothing is inherited: a subclass may compute something else with its parent's kernel.

    Args:
        fn: a Function.

    Returns:
        The op's name (a key of :data:`ARITY`), or None.
    """
    return type(fn).__dict__.get("fuses_as")
