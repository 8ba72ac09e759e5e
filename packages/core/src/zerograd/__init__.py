"""zerograd: define-by-run automatic differentiation with pluggable array backends.

>>> import numpy as np
>>> from zerograd import Variable
>>> x = Variable(np.array(2.0))
>>> y = x ** 3
>>> y.backward(create_graph=True)
>>> x.grad
variable(12.0)
"""

import operator
from importlib.metadata import version as _distribution_version

# wiring sits above everything the engine runs and installs it on Variable and Function
# (the operators, the backward walk, the higher-order namespace): see zerograd.wiring
from . import backends, backprop, func, functions, namespaces, wiring  # noqa: F401
from .backends.registry import registry as _registry
from .config import Config, no_grad, test_mode, using_config
from .function import Function
from .static import StaticGraphWarning, static_graph
from .variable import Constant, Parameter, Variable, as_array, as_variable

__version__ = _distribution_version("zerograd")  # the repository's VERSION file


def seed(n: int) -> None:
    """Seed the random state of every installed, available backend (``Backend.seed``).

    With zerograd-numpy this seeds ``numpy.random``, which zerograd-nn's layers and dropout
    draw from.

    Args:
        n: the seed, an integer in ``[0, 2**32)``.

    Raises:
        TypeError: ``n`` is not an integer.
        ValueError: ``n`` is out of range.

    Examples:
        >>> import numpy as np
        >>> seed(0); a = np.random.rand()
        >>> seed(0); a == np.random.rand()
        True
    """
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"zerograd.seed: the seed must be an int, got {n!r}") from None
    if not 0 <= n < 2**32:
        raise ValueError(f"zerograd.seed: the seed must be in [0, 2**32), got {n}")
    _registry.ensure_loaded()
    available = _registry.usable(list(_registry.backends.values()))
    # Twice: a backend's first seed may import its library, and an import may draw from
    # another backend's random state (JAX draws from numpy's); the second pass resets all.
    for _ in range(2):
        for backend in available:
            backend.seed(n)


is_simple_core = False
"""DeZero's ``dezero.is_simple_core``: False, zerograd has one core, the full one.

The book's steps 28 and 29 test it (``if not dezero.is_simple_core:``) before importing
``Variable`` and ``setup_variable`` from ``dezero.core_simple``; with zerograd both come
from ``zerograd`` itself.
"""


def setup_variable() -> None:
    """Do nothing; kept for the book's code.

    The book's ``dezero.core_simple.setup_variable()`` installs Variable's operators, which
    zerograd's Variable always has.
    """


__all__ = [
    "Config",
    "Constant",
    "Function",
    "Parameter",
    "Variable",
    "as_array",
    "as_variable",
    "backends",
    "func",
    "functions",
    "is_simple_core",
    "no_grad",
    "seed",
    "setup_variable",
    "static_graph",
    "StaticGraphWarning",
    "test_mode",
    "using_config",
]
