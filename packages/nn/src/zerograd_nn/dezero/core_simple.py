"""DeZero's ``dezero.core_simple`` (the book's steps 23-32): the same objects as ``core``.

zerograd has one core, the full one (``is_simple_core`` is False): ``Variable`` here is
:class:`zerograd.Variable`, and ``setup_variable()`` does nothing, its operators being
always installed.
"""

from typing import Any

from .core import (  # the same objects: zerograd has one core
    Add,
    Config,
    Div,
    Function,
    Mul,
    Neg,
    Pow,
    Sub,
    Variable,
    add,
    as_array,
    as_variable,
    div,
    mul,
    neg,
    no_grad,
    pow,
    rdiv,
    rsub,
    setup_variable,
    sub,
    using_config,
)
from .missing import missing_attribute

__all__ = [
    "Add",
    "Config",
    "Div",
    "Function",
    "Mul",
    "Neg",
    "Pow",
    "Sub",
    "Variable",
    "add",
    "as_array",
    "as_variable",
    "div",
    "mul",
    "neg",
    "no_grad",
    "pow",
    "rdiv",
    "rsub",
    "setup_variable",
    "sub",
    "using_config",
]


def __getattr__(name: str) -> Any:
    raise missing_attribute(__name__, name)
