"""The registry of batching rules, keyed by Function class, and what a rule receives.

A batching rule says how a Function runs on a whole batch at once: ``rule(fn, batch)``
gets the Function instance about to be applied (its settings, such as ``fn.axis``, are the
call's) and a :class:`Batch` describing the inputs, and returns the result for every
sample, the batch on axis 0: a Variable (or a list of them for several outputs), computed
with zerograd functions on the plain Variables underneath, so that it has a graph and
every derivative is the functions' own. A rule may return ``NotImplemented`` for inputs
it does not handle; the function then runs once per sample. A ValueError or IndexError
a rule meets (its own check, or a function it applies to the whole batch) is replaced by
the one the function gives on the first sample that fails, so that errors name one
sample's shapes; a rule's own refusal of another kind (a TypeError) stays as it is.

Rules live next to the ops they batch: :mod:`zerograd.func.rules` has one module per module
of :mod:`zerograd.functions`; zerograd-nn registers its own for its functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ... import functions as F
from ...backends import get_array_module
from ...variable import Constant, Variable

Rule = Callable[[Any, "Batch"], Any]
RULES: dict[type, Rule] = {}
"""Function class -> its batching rule."""
READS: dict[type, tuple[str, ...]] = {}
"""Function class -> the attributes that may hold arrays of the batch (an index's arrays)."""


def batching_rule(*classes: type, reads: tuple[str, ...] = ()) -> Callable[[Rule], Rule]:
    """Register the decorated function as the batching rule of ``classes``.

    The rule is looked up by the exact class of the Function applied (a subclass that
    changes what a function computes needs a rule of its own).

    Args:
        *classes: Function classes.
        reads: names of the functions' attributes that may hold batched arrays besides the
            inputs (``GetItem.slices``: ``x[ids]`` with ``ids`` per sample); the rule then
            runs when one of them is batched too.

    Returns:
        A decorator that registers its function and returns it unchanged.

    Raises:
        TypeError: a class is not a class.

    Examples:
        >>> from zerograd import Function
        >>> class Twice(Function):
        ...     def forward(self, x):
        ...         return 2 * x
        ...     def vjp(self, xp, xs, y, gy):
        ...         return 2 * gy
        >>> @batching_rule(Twice)
        ... def _twice(fn, batch):
        ...     return fn(batch.xs[0])  # elementwise: the same function on the whole batch
    """
    for c in classes:
        if not isinstance(c, type):
            raise TypeError(f"batching_rule: expected Function classes, got {c!r}")

    def register(rule: Rule) -> Rule:
        for c in classes:
            RULES[c] = rule
            if reads:
                READS[c] = tuple(reads)
        return rule

    return register


def rule_for(cls: type) -> Rule | None:
    """The batching rule registered for the Function class ``cls``, or None."""
    return RULES.get(cls)


def reads_of(fn: Any) -> list:
    """The values held by the attributes :data:`READS` names for ``fn``'s class (flattened)."""
    names = READS.get(type(fn))
    if not names:
        return []
    out: list = []
    for name in names:
        v = getattr(fn, name, None)
        out.extend(v if isinstance(v, tuple) else (v,))
    return out


class Batch:
    """The inputs of a Function applied inside vmap, as its batching rule sees them.

    Attributes:
        n: the batch size.
        xs: one value per input: the whole batch (a plain Variable or array, the batch on
            axis 0) where the input is batched, else the input as it was given.
        batched: one bool per input: whether it is batched.
    """

    __slots__ = ("n", "xs", "batched", "_arrays")

    def __init__(self, n: int, xs: list, batched: list, arrays: Callable[[Any], Any]) -> None:
        self.n, self.xs, self.batched, self._arrays = n, xs, batched, arrays

    def batch_array(self, v: Any) -> Any:
        """The whole batch's array of ``v`` (an index array a rule reads), or None.

        None when ``v`` is not batched by this vmap.
        """
        return self._arrays(v)

    def ndim(self, i: int) -> int:
        """The number of axes of one sample of input ``i``."""
        x = self.xs[i]
        nd = getattr(x, "ndim", 0)
        return nd - 1 if self.batched[i] else nd

    def shape(self, i: int) -> tuple[int, ...]:
        """The shape of one sample of input ``i``."""
        s = tuple(getattr(self.xs[i], "shape", ()))
        return s[1:] if self.batched[i] else s

    def aligned(self, i: int, ndim: int) -> Any:
        """Input ``i`` ready to broadcast against samples of ``ndim`` axes.

        A batched input gets axes of length 1 after the batch axis until its samples have
        ``ndim`` axes; an unbatched one is returned as it is (broadcasting aligns it to the
        right, away from the batch axis).
        """
        x = self.xs[i]
        if not self.batched[i]:
            return x
        missing = ndim - (x.ndim - 1)
        if missing <= 0:
            return x
        return reshape(x, (x.shape[0], *(1,) * missing, *x.shape[1:]))

    def expanded(self, i: int) -> Any:
        """Input ``i`` batched: an unbatched one broadcast to the batch (a view, no copy)."""
        x = self.xs[i]
        if self.batched[i]:
            return x
        shape = tuple(getattr(x, "shape", ()))
        if type(x) is Constant:
            return Constant(get_array_module(x.data).broadcast_to(x.data, (self.n, *shape)))
        if isinstance(x, Variable):
            return F.broadcast_to(x, (self.n, *shape))
        return get_array_module(x).broadcast_to(x, (self.n, *shape))

    def merged(self, i: int) -> Any:
        """Batched input ``i`` with its batch axis folded into its first sample axis.

        For functions that treat their first axis as a batch of their own (convolution,
        pooling): shape ``(n, N, ...)`` becomes ``(n * N, ...)``.
        """
        x = self.xs[i]
        return reshape(x, (x.shape[0] * x.shape[1], *x.shape[2:]))

    def split(self, y: Any) -> Any:
        """The inverse of :meth:`merged` for a result: ``(n * N, ...)`` -> ``(n, N, ...)``."""
        return reshape(y, (self.n, y.shape[0] // self.n, *y.shape[1:]))


def reshape(x: Any, shape: tuple) -> Any:
    """``x`` reshaped: through zerograd for a Variable, through its backend for an array.

    A Constant stays a Constant (nothing upstream of it needs a gradient, so the result
    records no function whose derivative the backward would compute).
    """
    if type(x) is Constant:
        return Constant(get_array_module(x.data).reshape(x.data, shape))
    if isinstance(x, Variable):
        return F.reshape(x, shape)
    return get_array_module(x).reshape(x, shape)
