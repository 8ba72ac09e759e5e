"""Batching rules of :mod:`zerograd_nn.functional.arrays`."""

from __future__ import annotations

from zerograd.func import batching_rule
from zerograd.func.rules.arithmetic import elementwise

from ..functional.arrays import AsFloat, Cast

batching_rule(AsFloat)(elementwise)
batching_rule(Cast)(elementwise)
