"""Where Variable and Function get what is written above them: the one module that does.

``variable.py`` and ``function.py`` sit at the bottom of the engine, and what they run is
written above them (the operators are ops of :mod:`zerograd.functions`, the backward walk is
:mod:`zerograd.backprop`, a direct ``Function.backward`` runs on
:mod:`zerograd.namespaces`' :data:`~zerograd.namespaces.VARIABLE_OPS`). Importing them from
below would make an import circle, so this module, above all of them, installs each:

- ``Variable.backward`` runs :func:`zerograd.backprop.backward` (``Variable._engine``);
- ``Function.backward`` runs a vjp on :data:`~zerograd.namespaces.VARIABLE_OPS`
  (``Function._graph_ops``);
- every Variable method and operator an op names in its definition (``x + y`` is
  :func:`zerograd.functions.add`, ``x.sum()`` is :func:`zerograd.functions.sum`;
  :data:`zerograd.functions.ops.OP_METHODS` lists them), including those of ops defined
  later (your own).

``import zerograd`` (or any of its modules) imports it.
"""

from __future__ import annotations

from typing import Any

from .backprop import backward
from .function import Function
from .functions.ops import subscribe
from .namespaces import VARIABLE_OPS
from .variable import Variable

Variable._engine = backward
Function._graph_ops = VARIABLE_OPS


def _install(name: str, attribute: Any) -> None:
    setattr(Variable, name, attribute)


subscribe(_install)
