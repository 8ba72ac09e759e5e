"""The guard of the differentiating transforms: Variables from outside stay out of their graphs.

While a transform (:func:`~zerograd.func.grad`, :func:`~zerograd.func.vjp`, ...) runs the
user's function, a :class:`Guard` is the :mod:`zerograd.modes` mode of the context. It knows
the Variables the transforms made (their inputs' stand-ins, their results) and every output
of a Function applied under it; any other Variable given to a Function (one the function
captured from outside: a model's Parameter, a global) is replaced there by a
:class:`~zerograd.Constant` holding the same array. So the transforms' backward walks never
leave their own graphs: they change no gradient held outside (``x.grad``) and differentiate
only with respect to the arguments asked for, as JAX and ``torch.func`` do.

One guard serves the outermost transform and every transform nested in it: a Variable made
by an outer transform is its own to an inner one. A ``backward()`` that the user's function
starts under it is refused (:meth:`Guard.refuse_backward`): such a walk could reach no
variable outside the transforms' graphs, and none inside is a leaf.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

from .. import modes
from ..variable import Constant, Variable
from .batched import BatchedVariable

_guard: contextvars.ContextVar[Guard | None] = contextvars.ContextVar(
    "zerograd.func.guard", default=None
)


class Guard:
    """The mode that cuts foreign Variables out of the functions applied under it.

    Args:
        parent: the mode current when the guard is entered.
    """

    def __init__(self, parent: Any) -> None:
        self.parent = parent
        self.owned: dict[int, Variable] = {}
        self._cut: dict[int, tuple[Variable, Variable]] = {}
        self.walks = 0  # the transforms' own backward walks running under this guard now

    def refuse_backward(self) -> None:
        """Refuse a ``backward()`` that the user's function starts (``modes.check_backward``).

        The transforms' own walks (nested transforms walk under an outer transform's
        guard) count themselves in :attr:`walks` and pass, as does a book-style
        ``backward`` that starts a walk of its own while they run.

        Raises:
            RuntimeError: always, unless a walk of the transforms is running.
        """
        if self.walks:
            return
        raise RuntimeError(
            "backward() inside a function given to a zerograd.func transform (grad, vjp, "
            "jvp, jacrev, jacfwd, hessian, hvp): the transform differentiates the function "
            "itself, and the Variables the function captures or makes are constants there, "
            "so this walk would give no variable its gradient (an argument's x.grad stays "
            "None). Differentiate with the transforms instead (zerograd.func.grad nests: "
            "grad(lambda x: F.sum(grad(f)(x) ** 2))), or call backward() outside the transform."
        )

    def own(self, v: Any) -> None:
        """Count ``v`` (and the Variables under a batched one) as made by the transforms."""
        while isinstance(v, Variable):
            self.owned[id(v)] = v
            v = v.phys if type(v) is BatchedVariable else None

    def owns(self, v: Any) -> bool:
        """Whether ``v`` (or, for a batched value, the value under it) is the transforms'."""
        while isinstance(v, Variable):
            if id(v) in self.owned:
                return True
            v = v.phys if type(v) is BatchedVariable else None
        return False

    def apply(self, fn: Any, inputs: tuple) -> Any:
        """Apply ``fn`` with foreign Variables cut; its outputs are then the transforms'."""
        owned = self.owned
        new = None
        for i, x in enumerate(inputs):
            if isinstance(x, Variable) and id(x) not in owned:
                if new is None:
                    new = list(inputs)
                new[i] = self._cut_of(x)
        out = modes.below(self, fn, *(inputs if new is None else new))
        if type(out) is list:
            for o in out:
                owned[id(o)] = o
        else:
            owned[id(out)] = out
        return out

    def _cut_of(self, x: Variable) -> Variable:
        hit = self._cut.get(id(x))
        if hit is not None:
            return hit[1]
        if self._made_from_own(x):
            raise RuntimeError(
                "zerograd.func: the function uses a value computed from the transform's "
                "inputs outside the transform: in another thread (a pool, a thread it "
                "started), which does not carry the transform (each thread has its own), so "
                "that part cannot be differentiated and its derivative would be left out. "
                "Compute in the calling thread, or run the other thread's work in the "
                "caller's context: ctx = contextvars.copy_context(), then "
                "pool.submit(ctx.run, fn, *args)."
            )
        c = cut(x)
        self._cut[id(x)] = (x, c)  # x kept alive: its id stays its own
        return c

    def _made_from_own(self, x: Variable) -> bool:
        """Whether the graph behind ``x`` (a Variable not made here) reaches one made here.

        Once per foreign Variable (:meth:`_cut_of` keeps its cut): a Parameter or a leaf
        captured from outside has no graph to walk.
        """
        owned = self.owned
        return any(id(v) in owned for f in upstream(x) for v in f.inputs)


def upstream(x: Variable) -> Iterator[Any]:
    """Each Function upstream of ``x`` once, from ``x``'s creator on, without recursion.

    What the transforms ask of a value made outside them (in another thread): whether its
    graph reaches one of theirs. Slow paths only: it reads every function's inputs.
    """
    seen: set[int] = set()
    todo = [x.creator]
    while todo:
        f = todo.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        yield f
        todo.extend([v.creator for v in f.inputs])


def cut(x: Variable) -> Variable:
    """``x``'s value with no graph behind it and no gradient to receive (a Constant)."""
    if type(x) is BatchedVariable:
        return BatchedVariable(cut(x.phys), x.level)
    if x.data is None or type(x) is Constant:
        return x
    return Constant(x.data)


@contextlib.contextmanager
def walking() -> Iterator[None]:
    """Mark a backward walk of the transforms, which the guard in force lets through.

    Returns:
        A context manager (it does nothing outside every transform).
    """
    g = _guard.get()
    if g is None:
        yield
        return
    g.walks += 1
    try:
        yield
    finally:
        g.walks -= 1


def current() -> Guard | None:
    """The guard of the transform running here, or None outside every transform."""
    return _guard.get()


@contextlib.contextmanager
def guarding() -> Iterator[Guard]:
    """Run the block under this context's guard: a new one unless a transform runs already.

    Returns:
        A context manager giving the guard.
    """
    g = _guard.get()
    if g is not None:
        yield g
        return
    g = Guard(modes.current())
    token = _guard.set(g)
    try:
        with modes.entered(g):
            yield g
    finally:
        _guard.reset(token)
