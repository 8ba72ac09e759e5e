"""Batching rules for :func:`zerograd.func.vmap`: one module per module of zerograd.functions.

Importing this package registers the rules of zerograd's own functions; zerograd-nn
registers those of its functions when it is imported. :func:`batching_rule` registers a
rule for any Function class.
"""

from . import arithmetic, broadcast, elementwise, join, linalg, reduction, shape  # noqa: F401
from .registry import Batch, batching_rule, rule_for

__all__ = ["Batch", "batching_rule", "rule_for"]
