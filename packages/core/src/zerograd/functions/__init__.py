"""Differentiable tensor functions (``import zerograd.functions as F``).

Every function takes Variables, backend arrays or (where it makes sense) Python
scalars and returns a Variable whose gradient is itself differentiable. Each is an op
defined once, as its Function class (see :mod:`zerograd.functions.ops`); ``__all__`` is
what the op modules export.
"""

from . import arithmetic, broadcast, elementwise, join, linalg, reduction, shape
from .arithmetic import *  # noqa: F403
from .broadcast import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .join import *  # noqa: F403
from .linalg import *  # noqa: F403
from .reduction import *  # noqa: F403
from .shape import *  # noqa: F403

__all__ = sorted(
    {
        name
        for module in (arithmetic, broadcast, elementwise, join, linalg, reduction, shape)
        for name in module.__all__
    }  # fmt: skip
)
