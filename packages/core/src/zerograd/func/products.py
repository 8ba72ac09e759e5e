"""``vjp`` and ``jvp``: products with the Jacobian from the left and from the right.

``jvp`` is built from two vector-Jacobian products on the reverse-mode engine (the
"double vjp"): ``g(u) = J^T u`` is linear in ``u``, so the vjp of ``g`` with cotangent
``t`` is ``J t``. It costs the function's evaluation and two backward walks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..arrays import as_array
from ..backends import backend_of, device_of
from ..checks import flag
from ..variable import Constant, Variable
from . import arguments
from .batched import BatchedData, peel, wrap
from .linearize import Linearization, is_floating
from .trees import Tree, flatten, flatten_outputs


def _check_like(values: list, refs: list, paths: list[str], what: str, op: str) -> list:
    """``values`` checked against ``refs`` leaf by leaf: the same shapes (None allowed)."""
    for v, r, p in zip(values, refs, paths):
        if v is None:
            continue
        vs, rs = tuple(getattr(v, "shape", ())), tuple(getattr(r, "shape", ()))
        if vs != rs:
            raise ValueError(
                f"{op}: the {what} for {p.strip() or 'the output'} has shape {vs}, but "
                f"it must have the shape of the value it goes with, {rs}."
            )
    return values


def flat_like(value: Any, tree: Tree, what: str, op: str) -> list:
    """The leaves of ``value`` (cotangents, tangents), which must have ``tree``'s structure.

    Raises:
        ValueError: ``value``'s structure is not ``tree``'s (named for the transform ``op``
            and for ``what`` the value is).
    """
    leaves, t = flatten(value)
    if t.size != tree.size or t.paths() != tree.paths():
        raise ValueError(
            f"{op}: the {what} must have the structure of the value it goes with "
            f"({tree.size} value{'s' if tree.size != 1 else ''} at {tree.paths() or ['the top']}), "
            f"got {t.size} at {t.paths() or ['the top']}."
        )
    return leaves


def floating_tangents(tangents: list, primals: tuple, op: str) -> None:
    """Refuse a tangent that is not floating point (None, no direction, passes).

    A tangent is a direction in its primal's floating-point space: an integer or bool one
    is a mistake (``torch.func.jvp`` refuses it, ``jax.jvp`` wants ``float0`` there),
    refused before the function runs, as an integer primal is.

    Args:
        tangents: the tangents' leaves, in the order of ``primals``' leaves.
        primals: the primals (a tuple of arguments), to name a tangent by its argument.
        op: the transform's name.

    Raises:
        TypeError: a tangent is not floating point (or complex).
    """
    for k, t in enumerate(tangents):
        if t is None or is_floating(t):
            continue
        paths = [f"argument {i}{p}" for i, a in enumerate(primals) for p in flatten(a)[1].paths()]
        d = t.data if isinstance(t, Variable) else t
        dtype = getattr(d, "dtype", type(t).__name__)
        raise TypeError(
            f"{op}: the tangent for {paths[k]} has dtype {dtype}; a tangent must be floating "
            f"point, as its primal is (torch.func.jvp and jax.jvp refuse it too). Convert it "
            f"first: t.astype(x.dtype)."
        )


def vjp(f: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``f``'s outputs at ``primals`` and a function giving vector-Jacobian products there.

    ``out, vjp_fn = vjp(f, x)``; then ``vjp_fn(ct)`` is ``ct^T J`` (for each primal, the
    gradient of ``sum(out * ct)``), with ``ct`` of ``out``'s structure and shapes, cast to
    each output's dtype as torch does (a Variable cotangent with a graph is used as given,
    so the result stays connected to it). The graph is kept, so ``vjp_fn`` can be called
    many times (in a vmap: all rows of the Jacobian at once, as :func:`jacrev` does).

    Args:
        f: a function of the primals, returning a Variable or a structure of them.
        *primals: the point (arrays, numbers, Variables, or structures of them).
        has_aux: ``f`` returns ``(output, aux)``; the aux comes back as :func:`grad`'s
            does (arrays where the primals are arrays).

    Returns:
        ``(out, vjp_fn)``, or ``(out, vjp_fn, aux)`` with ``has_aux``. ``vjp_fn`` returns a
        tuple with one gradient per primal.

    Raises:
        TypeError: ``f`` is not callable; a primal is not floating point.
        ValueError: (``vjp_fn``) the cotangent's structure or shapes differ from the output's.

    Examples:
        >>> import numpy as np
        >>> from zerograd.func import vjp
        >>> out, vjp_fn = vjp(lambda x: x * x, np.array([1.0, 2.0]))
        >>> vjp_fn(np.array([1.0, 10.0]))
        (array([ 2., 40.]),)
    """
    has_aux = flag("vjp", "has_aux", has_aux)
    arguments.function(f, "vjp")
    nums = tuple(range(len(primals)))
    leaves, paths, trees = arguments.differentiated(primals, nums)
    lin = Linearization("vjp", leaves, paths)
    out = lin.call(f, *arguments.replaced(primals, nums, trees, lin.standins))
    lin.release()
    aux = None
    if has_aux:
        out, aux = _split(out, "vjp")
    out_leaves, out_tree = flatten_outputs(out, "vjp")
    out_paths = out_tree.paths()

    def vjp_fn(cotangents: Any) -> tuple[Any, ...]:
        cts = flat_like(cotangents, out_tree, "cotangent", "vjp")
        for ct, o, p in zip(cts, out_leaves, out_paths):
            if ct is None and tuple(getattr(o, "shape", ())):  # the walk would seed ones
                raise TypeError(
                    f"vjp: the cotangent for {p or 'the output'} is None; give an array of "
                    f"the output's shape {tuple(o.shape)} (zeros for an output that should "
                    f"not contribute). None stands for 1 only for a scalar output."
                )
        _check_like(cts, out_leaves, out_paths, "cotangent", "vjp")
        cts = [_cast_like(ct, o) for ct, o in zip(cts, out_leaves)]
        caught = lin.walk(out_leaves, cts)
        grads = [lin.result(i, g) for i, g in enumerate(caught)]
        return tuple(arguments.regroup(trees, grads, False))

    result = lin.finish(out)
    return (result, vjp_fn, lin.finish(aux)) if has_aux else (result, vjp_fn)


def _cast_like(ct: Any, out: Any) -> Any:
    """Cotangent ``ct`` in the dtype of its floating-point output ``out``, as torch casts it.

    A float32 function then keeps float32 gradients whatever the cotangent's dtype
    (``np.ones``' float64, an integer or bool array). Left as given: a cotangent of an
    integer or bool output (it reaches nothing), a complex one of a real output (the cast
    would drop its imaginary part), and a Variable with a graph (the result stays
    connected to it, which a cast's copy would not be; the walk promotes as numpy does).
    """
    if ct is None or not is_floating(out):
        return ct
    dtype = out.dtype
    layers: list = []
    if isinstance(ct, Variable):
        base, layers = peel(ct)
        if type(base) is not Constant:
            return ct
        d = base.data
    else:
        d = as_array(ct)
    if d.dtype == dtype:
        return ct
    backend = backend_of(d)
    if backend.dtype_kind(d.dtype) == "c" and backend.dtype_kind(dtype) != "c":
        return ct
    d = backend.astype(d, dtype)
    return wrap(Constant(d), layers) if isinstance(ct, Variable) else d


def _split(out: Any, op: str) -> tuple[Any, Any]:
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(
            f"{op}(has_aux=True): the function must return a pair (output, aux), got "
            f"{type(out).__name__}; return (output, aux), or leave has_aux False."
        )
    return out[0], out[1]


class Pushforward:
    """``f`` linearized at ``primals``: :meth:`push` gives Jacobian-vector products there.

    The first walk runs once (``g(u) = J^T u`` for zero cotangents ``u`` that are
    stand-ins themselves, with a graph); each :meth:`push` is one more walk, from ``g``
    with the tangents as cotangents, caught at ``u``.

    Args:
        op: the transform's name, for errors.
        f: the function.
        primals: its arguments, all differentiated.
        has_aux: ``f`` returns ``(output, aux)``.
    """

    def __init__(self, op: str, f: Callable[..., Any], primals: tuple, has_aux: bool) -> None:
        self.op = op
        nums = tuple(range(len(primals)))
        leaves, paths, self.trees = arguments.differentiated(primals, nums)
        self.leaves, self.paths = leaves, paths
        self.lin = lin = Linearization(op, leaves, paths)
        out = lin.call(f, *arguments.replaced(primals, nums, self.trees, lin.standins))
        self.given_aux = None
        if has_aux:
            out, self.given_aux = _split(out, op)
        self.out = out
        self.out_leaves, self.out_tree = flatten_outputs(out, op)
        # an integer or bool output (a count, a mask) has no tangent: it gets zeros (as it
        # gets zero gradients), of the first primal's float dtype, and is not walked from
        floating = [is_floating(o) for o in self.out_leaves]
        zeros = [
            _zeros_like(o) if f else _zeros_like(o, lin.standins[0].dtype if leaves else None)
            for o, f in zip(self.out_leaves, floating)
        ]
        walked = [o for o, f in zip(self.out_leaves, floating) if f]
        # the walk reads lin's stand-ins: its results are as plain as lin's
        self.cotan = Linearization(op, zeros, self.out_tree.paths(), plain=lin.plain, own=True)
        self.g = self.cotan.call(
            lambda *us: lin.walk(walked, [u for u, f in zip(us, floating) if f], create_graph=True),
            *self.cotan.standins,
        )

    def push(self, tangents: list) -> list:
        """``J t`` for one tangent per primal leaf (None: zeros), one per output leaf."""
        outs = [g for g, t in zip(self.g, tangents) if g is not None and t is not None]
        ts = [t for g, t in zip(self.g, tangents) if g is not None and t is not None]
        lin = self.lin
        caught = self.cotan.walk(outs, ts, create_graph=lin.connected, trusted=True)
        return [self.cotan.result(i, c) for i, c in enumerate(caught)]

    def release(self) -> None:
        """Let later walks (the user's, an outer transform's) pass the stand-ins."""
        self.lin.release()
        self.cotan.release()

    def result(self) -> Any:
        """The outputs, as the transform returns them."""
        return self.lin.finish(self.out)

    def aux(self) -> Any:
        """The function's aux (with ``has_aux``), as the transform returns it."""
        return self.lin.finish(self.given_aux)


def _zeros_like(o: Any, dtype: Any = None) -> Any:
    """Zeros of one sample of ``o``'s shape and dtype (or ``dtype``), on its backend."""
    d = o.data if isinstance(o, Variable) else o
    if isinstance(d, BatchedData):
        d = d.data
    if not hasattr(d, "shape"):
        return 0.0 * as_array(d)
    shape = tuple(getattr(o, "shape", ()))
    dtype = d.dtype if dtype is None else dtype
    return backend_of(d).xp.zeros(shape, dtype=dtype, device=device_of(d))


def jvp(
    f: Callable[..., Any], primals: tuple, tangents: tuple, has_aux: bool = False
) -> tuple[Any, ...]:
    """``f``'s outputs at ``primals`` and the Jacobian-vector product with ``tangents``.

    Computed by the double-vjp construction on the reverse-mode engine (the function once,
    two backward walks).

    Args:
        f: a function of the primals.
        primals: a tuple (or list) of the arguments.
        tangents: a tuple of the same structure and shapes: the direction.
        has_aux: ``f`` returns ``(output, aux)``; the aux comes back as :func:`grad`'s
            does.

    Returns:
        ``(out, tangent_out)`` (``tangent_out`` of ``out``'s structure), or
        ``(out, tangent_out, aux)`` with ``has_aux``.

    Raises:
        TypeError: ``f`` is not callable; ``primals``/``tangents`` are not tuples; a primal
            or a tangent is not floating point (an integer or bool tangent is refused,
            before ``f`` runs).
        ValueError: the tangents' structure or shapes differ from the primals'.

    Examples:
        >>> import numpy as np
        >>> from zerograd.func import jvp
        >>> jvp(lambda x: x ** 2, (np.array([1.0, 3.0]),), (np.array([1.0, 0.0]),))
        (array([1., 9.]), array([2., 0.]))
    """
    has_aux = flag("jvp", "has_aux", has_aux)
    arguments.function(f, "jvp")
    arguments.argument_tuples(primals, tangents, "jvp", "jvp(f, (x,), (t,))")
    if len(primals) != len(tangents):
        raise ValueError(
            f"jvp: {len(primals)} primals but {len(tangents)} tangents; give one tangent per "
            f"primal."
        )
    p_leaves, p_tree = flatten(tuple(primals))
    t_leaves = flat_like(tuple(tangents), p_tree, "tangents", "jvp")
    _check_like(t_leaves, p_leaves, p_tree.paths(), "tangent", "jvp")
    floating_tangents(t_leaves, tuple(primals), "jvp")
    pf = Pushforward("jvp", f, tuple(primals), has_aux)
    try:
        out_t = pf.push(t_leaves)
    finally:
        pf.release()
    tangent_out = pf.out_tree.rebuild(out_t)
    result = pf.result()
    return (result, tangent_out, pf.aux()) if has_aux else (result, tangent_out)
