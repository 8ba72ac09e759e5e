"""Batching rules of zerograd-nn's functions, for :func:`zerograd.func.vmap`.

One module per module of :mod:`zerograd_nn.functional`; importing zerograd-nn registers
them. Functions with no rule here (dropout's and batch norm's, whose results depend on the
whole batch or on random draws) run once per sample inside vmap, with a warning.
"""

from . import activation, arrays, conv, linear, loss, pooling  # noqa: F401
