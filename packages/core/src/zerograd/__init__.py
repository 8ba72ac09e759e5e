"""zerograd: define-by-run automatic differentiation with pluggable array backends.

>>> import numpy as np
>>> from zerograd import Variable
>>> x = Variable(np.array(2.0))
>>> y = x ** 3
>>> y.backward(create_graph=True)
>>> x.grad
variable(12.0)
"""

from importlib.metadata import version as _distribution_version

from . import backends, functions
from .config import Config, no_grad, test_mode, using_config
from .function import Function
from .variable import Constant, Parameter, Variable, as_array, as_variable

__version__ = _distribution_version("zerograd")  # the repository's VERSION file

__all__ = [
    "Config",
    "Constant",
    "Function",
    "Parameter",
    "Variable",
    "as_array",
    "as_variable",
    "backends",
    "functions",
    "no_grad",
    "test_mode",
    "using_config",
]
