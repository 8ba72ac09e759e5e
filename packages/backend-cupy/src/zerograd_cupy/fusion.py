"""The one CuPy kernel a chain of elementwise operations (:mod:`zerograd.backends.chains`) becomes.

A chain reads some same-shape (or 0-d, broadcast) arrays, computes intermediates that
nothing outside the chain reads, and writes one output; it runs as one
``cupy.ElementwiseKernel`` instead of one kernel per operation. Each op is written with the
function CuPy's own ufunc calls (``exp``, ``log``, ``tanh``, ``sqrt``), and the kernel is
compiled with ``--fmad=false`` so that ``a * b + c`` is not contracted into one fused
multiply-add: every step rounds as the unfused replay's separate kernels do.
"""

from __future__ import annotations

from typing import Any

from zerograd.backends.chains import Chain

EXPRESSIONS: dict[str, str] = {
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} * {1}",
    "div": "{0} / {1}",
    "neg": "-{0}",
    # numpy.maximum returns the NaN operand when either is NaN
    "maximum": "(({0} > {1} || {0} != {0}) ? {0} : {1})",
    "greater": "(T)({0} > {1})",
    "where": "({0} != (T)0 ? {1} : {2})",
    "sqrt": "sqrt({0})",
    "exp": "exp({0})",
    "log": "log({0})",
    "tanh": "tanh({0})",
}
"""Each op of :data:`zerograd.backends.chains.ARITY` as a C expression over ``T`` values."""

EXACT = frozenset({"add", "sub", "mul", "div", "neg", "maximum", "greater", "where", "sqrt"})
"""Ops that are one correctly rounded IEEE operation (or a choice between operands), so any
conforming compiler gives the bits numpy gives; the others call a libm whose last bit may
differ between numpy, the host C library and CUDA's."""


def _operand(arg: str | float, names: dict[str, str]) -> str:
    if isinstance(arg, str):
        return names[arg]
    return f"(T)({float(arg)!r})"


def kernel_parts(chain: Chain) -> tuple[str, str, str]:
    """The ``in_params``, ``out_params`` and CUDA C ``body`` of the chain's kernel."""
    names = {name: f"in{k}" for k, name in enumerate(chain.inputs)}
    lines = []
    for k, step in enumerate(chain.steps):
        expr = EXPRESSIONS[step.op].format(*(_operand(a, names) for a in step.args))
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
