"""A function evaluated at stand-ins for some of its inputs, ready for backward walks.

Every differentiating transform is built on :class:`Linearization`: it gives each input to
differentiate a *stand-in*, the output of a :class:`Tap` (an identity Function) applied to
the input's value, runs the function on the stand-ins (under the transforms'
:mod:`~zerograd.func.guard`), and then walks backward from outputs with ordinary
``Variable.backward`` calls, seeded with cotangents. The taps catch the gradients that
reach them and pass nothing further, so a walk changes no gradient outside its own graph.

An input that is a Variable stays connected to its stand-in (the tap's input is the
Variable), so the results can be differentiated again, by the user's ``backward`` or an
outer transform; an array gets a fresh leaf. Where the walks must be differentiable they
run with ``create_graph=True``. What the transform gives back goes through
:meth:`Linearization.give`: where nothing outside the transform can reach its graph (its
inputs are arrays, or vmap's batches of them, and no outer transform runs) the graph is
dropped there, as ``torch.func`` unwraps a result at its level, so arrays in give arrays
out, under vmap too.

Inside :func:`~zerograd.func.vmap` the stand-ins hold a batch: every input is expanded to
the active vmap levels (a broadcast view where it was not batched), so that each sample's
output depends on that sample's stand-in only, and one walk from the batch of outputs
gives every sample's gradient (the sum over samples has each sample's gradient as its
own). Walks asked for later inside further vmaps (``vmap(vjp_fn)``, how
:func:`~zerograd.func.jacrev` runs) carry batched cotangents through the graph instead:
each derivative then runs on the batch by the functions' batching rules.
"""

from __future__ import annotations

import numbers
from typing import Any

from .. import modes
from ..arrays import as_array
from ..backends import backend_of, device_of
from ..config import using_config
from ..function import Function
from ..variable import Constant, Variable
from . import guard as _guard
from .batched import (
    Level,
    active_levels,
    below_levels,
    expanded,
    peel,
    permuted,
    wrap,
)
from .trees import map_leaves

BLOCK, CATCH, PASS = "block", "catch", "pass"


class Tap(Function):
    """The identity standing for one input of a transform; it catches that input's gradient.

    ``state`` says what a backward walk reaching it gets: ``"catch"`` (the transform's own
    walks): the gradient is added to ``caught`` and goes no further; ``"block"`` (while the
    transform evaluates the function: walks nested in it, whose derivatives do not ask for
    this input): nothing goes further; ``"pass"`` (after the transform: walks of the user or
    of an outer transform): the gradient goes on to the input, as an identity's does.
    """

    vjp_reads_outputs = False

    def __init__(self) -> None:
        self.state = BLOCK
        self.caught: Any = None

    def forward(self, x: Any) -> Any:
        return x

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Pass ``gy`` on in the ``"pass"`` state; otherwise catch it (or not) and stop."""
        if self.state == PASS:
            return gy
        if self.state == CATCH and gy is not None:
            if self.caught is None:
                self.caught = gy
            else:
                total = self.caught + gy
                if isinstance(total, numbers.Number):  # numpy: 0-d + 0-d is a numpy scalar
                    total = as_array(total, like=gy)
                self.caught = total
        return None


def _reaches(v: Variable, taps: list[Tap]) -> bool:
    """Whether the graph of ``v`` reaches one of ``taps``: ``v`` was computed from a stand-in."""
    mine = {id(t) for t in taps}
    return any(id(f) in mine for f in _guard.upstream(v))


def is_floating(v: Any) -> bool:
    """Whether ``v`` (a Variable, array or number) holds floating-point (or complex) data."""
    d = v.data if isinstance(v, Variable) else v
    dtype = getattr(d, "dtype", None)
    if dtype is None:
        return isinstance(v, (float, complex))
    if isinstance(d, numbers.Number):  # a numpy scalar (numpy.float64), not a backend's array
        d = as_array(d)
    return backend_of(d).dtype_kind(d.dtype) in "fc"


class Linearization:
    """The function of a transform, evaluated at stand-ins for the inputs to differentiate.

    Args:
        op: the transform's name, for error messages.
        values: the inputs to differentiate (arrays, numbers, Variables).
        paths: how each is named in errors (``"argument 0['W']"``).
        plain: whether the results are plain values (see :attr:`plain`); by default
            decided from ``values``. A linearization of a function that reads another
            one's stand-ins (jvp's second walk) passes that one's.
        own: the function :meth:`call` runs is the transforms' own (jvp's walk of another
            linearization), whose values are made outside the guard on purpose; a user's
            function must make its values under the guard (see :meth:`call`).

    Raises:
        TypeError: an input is not floating point (integers have no gradient).
    """

    def __init__(
        self,
        op: str,
        values: list,
        paths: list[str],
        plain: bool | None = None,
        *,
        own: bool = False,
    ) -> None:
        self.op = op
        self.own = own
        self.levels = active_levels()
        self.bottom = below_levels(self.levels)
        self.nested = _guard.current() is not None
        self.taps: list[Tap] = []
        self.standins: list[Variable] = []
        self.variables: list[bool] = []  # whether each input was a Variable
        self.connected = False
        self._outputs: dict[int, Any] = {}
        for v, path in zip(values, paths):
            if not is_floating(v):
                d = v.data if isinstance(v, Variable) else v
                dtype = getattr(d, "dtype", type(v).__name__)
                other = (  # vjp, jvp and hvp differentiate every primal: no argnums
                    "give it to the function through a closure rather than as a primal"
                    if op in ("vjp", "jvp", "hvp")
                    else "leave it out of argnums"
                )
                raise TypeError(
                    f"{op}: {path} has dtype {dtype}; only floating-point inputs have "
                    f"gradients. Convert it first (x.astype('float64')), or {other}."
                )
        with modes.suspended(self.bottom), using_config("enable_backprop", True):
            for v in values:
                self._add(v)
        if plain is None:
            plain = not (self.nested or self.connected) and bool(
                self.levels or not any(self.variables)
            )
        self.plain = plain
        """Whether the results are plain values, with no graph: no input is connected to
        a graph (each is an array, or a batch of arrays inside vmap) and no outer transform
        runs (the function may read its stand-ins, which the guard lets in)."""

    def _add(self, v: Any) -> None:
        is_var = isinstance(v, Variable)
        if is_var:
            base, have = peel(v)
            connected = type(base) is not Constant
            if not connected:
                base = base.data
        else:
            base, have, connected = as_array(v), [], False
        full = expanded(base, have, self.levels)
        if not connected:
            full = Variable(full)
        tap = Tap()
        self.taps.append(tap)
        self.standins.append(wrap(tap(full), self.levels))
        self.variables.append(is_var)
        self.connected = self.connected or connected

    def call(self, f: Any, *args: Any, **kwargs: Any) -> Any:
        """``f(*args, **kwargs)`` under the guard; its outputs may then be walked from.

        The graph is recorded even inside ``no_grad()`` (a transform differentiates by
        definition); ``Config.train`` and everything else are left as they are.

        Raises:
            RuntimeError: the function returned a value computed from the stand-ins where
                the guard does not see it (another thread): its derivative would be zeros.
        """
        with _guard.guarding() as g, using_config("enable_backprop", True):
            for s in self.standins:
                g.own(s)
            out = f(*args, **kwargs)
            self._note_outputs(g, out)
        return out

    def _note_outputs(self, g: _guard.Guard, out: Any) -> None:
        stack = [out]
        while stack:
            v = stack.pop()
            if isinstance(v, (tuple, list)):
                stack.extend(v)
            elif isinstance(v, dict):
                stack.extend(v.values())
            elif isinstance(v, Variable):
                if g.owns(v):
                    self._outputs[id(v)] = v
                elif not self.own and _reaches(peel(v)[0], self.taps):  # (slow path)
                    raise RuntimeError(
                        f"{self.op}: the function returned a value computed from its inputs "
                        f"outside the transform: in another thread (a pool, a thread it "
                        f"started), which does not carry the transform (each thread has its "
                        f"own), so that work cannot be differentiated and would give zeros. "
                        f"Compute in the calling thread, or run the other thread's work in "
                        f"the caller's context: ctx = contextvars.copy_context(), then "
                        f"pool.submit(ctx.run, fn, *args)."
                    )

    def release(self) -> None:
        """Let walks of the user or of outer transforms pass the taps from now on."""
        for t in self.taps:
            t.state = PASS

    def walk(
        self, outs: list, cts: list, create_graph: bool = False, trusted: bool = False
    ) -> list:
        """Walk backward from ``outs`` seeded with ``cts``; each stand-in's gradient, or None.

        Args:
            outs: values computed from the stand-ins (Variables; others are not connected).
            cts: one cotangent per output, of its shape (None: ones); inside a vmap entered
                after this linearization, batched by it.
            create_graph: make the gradients differentiable (they are anyway where an outer
                transform, a batched cotangent or an input Variable needs it).
            trusted: ``outs`` were made by the transforms (not returned by the user's
                function, whose outputs are walked from only where made under the guard).

        Returns:
            One gradient per stand-in, as a value of the active vmap levels (a Variable, or
            an array for a first-order walk outside vmap), or None where nothing reached it.

        Raises:
            RuntimeError: called outside a vmap this linearization was made in.
        """
        now = active_levels()
        k = len(self.levels)
        if len(now) < k or any(a is not b for a, b in zip(now, self.levels)):
            raise RuntimeError(
                f"{self.op}: the function it returned was called outside the vmap it was "
                f"made in; call it inside that vmap, or return its results from it."
            )
        new = now[k:]
        graph = create_graph or self.nested or self.connected or bool(new)
        proxies: list[Level] = []
        parent = self.bottom
        for lv in new:
            parent = Level(lv.n, parent, lv.name, proxy=True)
            proxies.append(parent)
        states = [t.state for t in self.taps]
        for t in self.taps:
            t.state, t.caught = CATCH, None
        try:
            with modes.suspended(self.bottom), using_config("enable_backprop", True):
                seeds = []
                for out, ct in zip(outs, cts):
                    if not isinstance(out, Variable) or not (trusted or id(out) in self._outputs):
                        continue
                    base, have = peel(out)
                    if len(have) != k or base.creator is None:
                        continue  # not batched like the stand-ins: not computed from them
                    seeds.append((base, None if ct is None else self._to_walk(ct, new, proxies)))
                self._run(seeds, proxies, graph)
                caught = [t.caught for t in self.taps]
                return [None if g is None else self._from_walk(g, new, proxies) for g in caught]
        finally:
            for t, s in zip(self.taps, states):
                t.state, t.caught = s, None
            for p in proxies:
                p.active = False

    def _run(self, seeds: list, proxies: list[Level], graph: bool) -> None:
        if proxies:
            with modes.entered(proxies[0]):
                return self._run(seeds, proxies[1:], graph)
        with _guard.walking():
            for base, seed in seeds:
                held = base.grad
                base.grad = seed
                try:
                    base.backward(create_graph=graph)
                finally:
                    base.grad = held

    def _to_walk(self, ct: Any, new: list[Level], proxies: list[Level]) -> Any:
        """A cotangent of the active levels as the walk carries it (see :meth:`walk`).

        Its plain value gets an axis per level (this linearization's, then the newer ones),
        which the walk carries as a batch of the newer levels' stand-ins (``proxies``)
        holding plain values with this linearization's axes.
        """
        if isinstance(ct, Variable):
            base, have = peel(ct)
        else:
            base, have = as_array(ct), []
        full = expanded(base, have, self.levels + new)
        k, m = len(self.levels), len(new)
        full = permuted(full, list(range(k, k + m)) + list(range(k)))
        if not isinstance(full, Variable):
            full = Constant(full)
        return wrap(full, proxies)

    def _from_walk(self, g: Any, new: list[Level], proxies: list[Level]) -> Any:
        """A caught gradient as a value of the active levels (the inverse of :meth:`_to_walk`)."""
        if not new:
            if not self.levels or isinstance(g, Variable):
                return wrap(g, self.levels)
            return wrap(Constant(g) if self.plain else Variable(g), self.levels)
        base, have = peel(g)
        full = expanded(base, have, proxies)
        k, m = len(self.levels), len(new)
        full = permuted(full, list(range(m, m + k)) + list(range(m)))
        if not isinstance(full, Variable):
            full = Variable(full)
        return wrap(full, self.levels + new)

    def result(self, i: int, g: Any) -> Any:
        """Stand-in ``i``'s gradient as the transform returns it (see :meth:`give`).

        Zeros of the input's shape where nothing reached it (the output does not depend on
        it). The value is the transforms' own for an outer transform's guard.
        """
        if g is None:
            s = self.standins[i]
            xp = backend_of(s.data).xp
            g = xp.zeros(
                s.shape, dtype=s.dtype, device=device_of(s.data.data if self.levels else s.data)
            )
        if isinstance(g, Variable):
            g = self.give(g)
        elif not self.plain:
            g = Variable(g)
        elif self.levels:
            g = Constant(g)  # zeros inside vmap: a Constant, as plain gradients there are
        guard = _guard.current()
        if guard is not None:
            guard.own(g)
        return g

    def give(self, v: Any) -> Any:
        """One value the transform returns (an output, a gradient, a Jacobian, an aux leaf).

        Where the results are :attr:`plain`, a Variable's graph is dropped: outside vmap
        it comes as its array, inside as a Constant, or a batch of them (which vmap gives
        back as an array). Otherwise it is returned as it is, connected to the inputs or to
        an outer transform's values. Anything else (a number, a string) is unchanged.
        """
        if not self.plain or not isinstance(v, Variable):
            return v
        base, have = peel(v)  # have: the levels v is a batch of (vmap(vjp_fn) adds some)
        if not have and not self.levels:
            return v.data
        if type(base) is Constant:
            return v
        return wrap(Constant(base.data), have)

    def finish(self, value: Any) -> Any:
        """A structure (tuples, lists, dicts) of results, each leaf as :meth:`give` gives it."""
        if not self.plain:
            return value
        return map_leaves(self.give, value)
