"""Batching rules of :mod:`zerograd.functions.elementwise`: the function on the whole batch."""

from __future__ import annotations

from ...functions.elementwise import Clip, Cos, Exp, Log, Sin, Sqrt, Square, Tanh
from .arithmetic import elementwise
from .registry import batching_rule

batching_rule(Exp, Log, Sin, Cos, Tanh, Square, Sqrt, Clip)(elementwise)
