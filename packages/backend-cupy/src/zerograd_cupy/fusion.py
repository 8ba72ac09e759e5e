"""Chains of elementwise operations as a small IR, and the one CuPy kernel each becomes.

A chain reads some same-shape (or 0-d, broadcast) arrays, computes intermediates that
nothing outside the chain reads, and writes one output; it runs as one
``cupy.ElementwiseKernel`` instead of one kernel per operation. Each op is written with the
function CuPy's own ufunc calls (``exp``, ``log``, ``tanh``, ``sqrt``), and the kernel is
compiled with ``--fmad=false`` so that ``a * b + c`` is not contracted into one fused
multiply-add: every step rounds as the unfused replay's separate kernels do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OPS: dict[str, tuple[int, str]] = {
    "add": (2, "{0} + {1}"),
    "sub": (2, "{0} - {1}"),
    "mul": (2, "{0} * {1}"),
    "div": (2, "{0} / {1}"),
    "neg": (1, "-{0}"),
    # numpy.maximum returns the NaN operand when either is NaN
    "maximum": (2, "(({0} > {1} || {0} != {0}) ? {0} : {1})"),
    "greater": (2, "(T)({0} > {1})"),
    "where": (3, "({0} != (T)0 ? {1} : {2})"),
    "sqrt": (1, "sqrt({0})"),
    "exp": (1, "exp({0})"),
    "log": (1, "log({0})"),
    "tanh": (1, "tanh({0})"),
}
"""Each op the generator knows: its operand count and its C expression over ``T`` values."""

EXACT = frozenset({"add", "sub", "mul", "div", "neg", "maximum", "greater", "where", "sqrt"})
"""Ops that are one correctly rounded IEEE operation (or a choice between operands), so any
conforming compiler gives the bits numpy gives; the others call a libm whose last bit may
differ between numpy, the host C library and CUDA's."""


@dataclass(frozen=True)
class Step:
    """``name = op(*args)``, one elementwise operation of a chain.

    An argument is a chain input's or an earlier step's name, or a Python float (a constant
    cast to the kernel's dtype, as numpy casts a scalar operand).
    """

    name: str
    op: str
    args: tuple[str | float, ...]


@dataclass(frozen=True)
class Chain:
    """Elementwise steps over ``inputs``; the last step's value is the output."""

    inputs: tuple[str, ...]
    steps: tuple[Step, ...]

    def __post_init__(self) -> None:
        known = set(self.inputs)
        for step in self.steps:
            if step.op not in OPS:
                raise ValueError(f"fusion: no elementwise op {step.op!r} (known: {sorted(OPS)})")
            arity = OPS[step.op][0]
            if len(step.args) != arity:
                raise ValueError(f"fusion: {step.op} takes {arity} operands, got {len(step.args)}")
            for arg in step.args:
                if isinstance(arg, str) and arg not in known:
                    raise ValueError(f"fusion: step {step.name!r} reads {arg!r} before it is made")
            known.add(step.name)
        if not self.steps:
            raise ValueError("fusion: a chain needs at least one step")


def _operand(arg: str | float, names: dict[str, str]) -> str:
    if isinstance(arg, str):
        return names[arg]
    return f"(T)({float(arg)!r})"


def kernel_parts(chain: Chain) -> tuple[str, str, str]:
    """The ``in_params``, ``out_params`` and CUDA C ``body`` of the chain's kernel."""
    names = {name: f"in{k}" for k, name in enumerate(chain.inputs)}
    lines = []
    for k, step in enumerate(chain.steps):
        expr = OPS[step.op][1].format(*(_operand(a, names) for a in step.args))
        if k == len(chain.steps) - 1:
            lines.append(f"out0 = {expr};")
        else:
            names[step.name] = f"t{k}"
            lines.append(f"const T t{k} = {expr};")
    in_params = ", ".join(f"T in{k}" for k in range(len(chain.inputs)))
    return in_params, "T out0", "\n".join(lines)


def elementwise_kernel(chain: Chain, name: str = "zerograd_fused") -> Any:
    """The chain as a ``cupy.ElementwiseKernel``; call it with the inputs in order.

    Imports CuPy, so only the CuPy backend calls it.
    """
    import cupy

    in_params, out_params, body = kernel_parts(chain)
    return cupy.ElementwiseKernel(in_params, out_params, body, name, options=("--fmad=false",))
