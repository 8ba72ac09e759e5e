"""Batching rules of zerograd-nn's functions, for :func:`zerograd.func.vmap`.

One module per module of :mod:`zerograd_nn.functional`; importing zerograd-nn registers
them. Functions with no rule here (dropout's mask, batch norm in test mode) run once per
sample inside vmap, with a warning; batch norm's running-statistics update is refused there.
"""

from . import activation, arrays, conv, linear, loss, normalization, pooling  # noqa: F401
