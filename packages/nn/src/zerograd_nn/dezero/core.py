"""DeZero's ``dezero.core``: Variable, Function, Config and the arithmetic functions.

``from dezero.core import Variable`` -> ``from zerograd_nn.dezero.core import Variable``.
The objects are zerograd's (:mod:`zerograd`, :mod:`zerograd.functions`).
"""

from typing import Any

from zerograd import (
    Config,
    Function,
    Parameter,
    Variable,
    as_array,
    as_variable,
    no_grad,
    setup_variable,
    test_mode,
    using_config,
)
from zerograd.functions import (
    Add,
    Div,
    Mul,
    Neg,
    Pow,
    Sub,
    add,
    div,
    mul,
    neg,
    pow,
    rdiv,
    rsub,
    sub,
)

from .missing import missing_attribute

__all__ = [
    "Add",
    "Config",
    "Div",
    "Function",
    "Mul",
    "Neg",
    "Parameter",
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
    "test_mode",
    "using_config",
]


def __getattr__(name: str) -> Any:
    raise missing_attribute(__name__, name)
