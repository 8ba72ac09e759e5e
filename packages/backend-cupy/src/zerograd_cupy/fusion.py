"""The one CuPy kernel a chain of elementwise operations (:mod:`zerograd.backends.chains`) becomes.

A chain reads some same-shape (or 0-d, broadcast) arrays, computes intermediates that
nothing outside the chain reads, and writes one output; it runs as one
``cupy.ElementwiseKernel`` instead of one kernel per operation, with the bits of those
kernels:

- the four arithmetic steps call CUDA's round-to-nearest intrinsics (``__fmul_rn``,
  ``__dadd_rn``, ...: :data:`PREAMBLE`), which the compiler never contracts into a fused
  multiply-add, so ``a * b + c`` rounds twice, as two kernels do;
- ``exp``, ``log``, ``tanh``, ``sin``, ``cos`` and ``sqrt`` are the functions CuPy's own
  ufuncs call, and the kernel is compiled with CuPy's default options, as those ufuncs are
  (turning contraction off for the whole kernel, ``--fmad=false``, could change how those
  functions compile).
"""

from __future__ import annotations

from typing import Any

from zerograd.backends.chains import Chain

EXPRESSIONS: dict[str, str] = {
    "add": "zg_add({0}, {1})",
    "sub": "zg_sub({0}, {1})",
    "mul": "zg_mul({0}, {1})",
    "div": "zg_div({0}, {1})",
    "neg": "-{0}",
    # numpy.maximum returns the NaN operand when either is NaN
    "maximum": "(({0} > {1} || {0} != {0}) ? {0} : {1})",
    "greater": "(T)({0} > {1})",
    "where": "({0} != (T)0 ? {1} : {2})",
    "sqrt": "sqrt({0})",
    "exp": "exp({0})",
    "log": "log({0})",
    "tanh": "tanh({0})",
    "sin": "sin({0})",
    "cos": "cos({0})",
}
"""Each op of :data:`zerograd.backends.chains.ARITY` as a C expression over ``T`` values."""

PREAMBLE = "".join(
    f"__device__ __forceinline__ {t} zg_{op}({t} a, {t} b) {{ return __{p}{op}_rn(a, b); }}\n"
    for t, p in (("float", "f"), ("double", "d"))
    for op in ("add", "sub", "mul", "div")
)
"""CUDA definitions of the arithmetic steps, for float and double: each one IEEE operation,
rounded to nearest, never merged with another into a fused multiply-add."""

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
    return cupy.ElementwiseKernel(in_params, out_params, body, name, preamble=PREAMBLE)
