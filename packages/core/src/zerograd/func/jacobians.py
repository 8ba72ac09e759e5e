"""Jacobians and Hessians: ``jacrev``, ``jacfwd``, ``jacobian``, ``hessian``, ``hvp``.

``jacrev`` evaluates the function once and runs one backward walk per output leaf with
the whole basis of cotangents at once (a :func:`vmap` over ``vjp_fn``); ``jacfwd`` runs
the double-vjp's second walk with the whole basis of tangents. Both give
``J[out_index..., in_index...]``: the output's shape followed by the input's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import functions as F
from ..backends import backend_of, device_of
from ..checks import flag
from ..variable import Constant, Variable
from . import arguments
from .batched import BatchedData
from .gradient import check_scalar
from .linearize import Linearization
from .products import Pushforward, flat_like, floating_tangents
from .trees import flatten, flatten_outputs
from .vectorize import vmap


def _eye(like: Any, n: int, shape: tuple) -> Any:
    """The basis of ``n`` unit vectors of ``shape`` (``n`` = its size), as a Constant."""
    d = like.data if isinstance(like, Variable) else like
    if isinstance(d, BatchedData):
        d = d.data
    backend = backend_of(d)
    xp = backend.xp
    i = xp.arange(n, device=device_of(d))
    eye = backend.astype(xp.reshape(i, (n, 1)) == i, d.dtype)
    return Constant(xp.reshape(eye, (n, *shape)))


def _size(shape: tuple) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _to_variable(v: Any) -> Variable:
    return v if isinstance(v, Variable) else Variable(v)


def _arrange(rows: Any, lead: tuple, trail: tuple, first: bool) -> Any:
    """A vmapped block ``(n, *rest)`` as the Jacobian block ``(*out_shape, *in_shape)``.

    ``first``: the vmapped axis runs over the output (jacrev), else over the input (jacfwd,
    whose rows ``(n_in, *out_shape)`` are transposed to put the output first).
    """
    if first:
        return F.reshape(rows, lead + trail)
    k, m = len(trail), len(lead)
    moved = F.reshape(rows, trail + lead)
    return F.transpose(moved, tuple(range(k, k + m)) + tuple(range(k)))


def jacrev(
    f: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """The Jacobian of ``f`` by reverse mode: one evaluation, one batched walk per output.

    Args:
        f: a function returning a Variable (or a tuple/list/dict of them).
        argnums: the argument (or tuple of arguments) to differentiate.
        has_aux: ``f`` returns ``(output, aux)``; the aux comes back as :func:`grad`'s
            does.

    Returns:
        A function returning the Jacobian ``J[out_index..., in_index...]`` of shape
        ``out.shape + x.shape``, in the structure of the output (outer) and of the
        arguments (inner); ``(jacobian, aux)`` with ``has_aux``.

    Raises:
        TypeError: as for :func:`grad`.
        ValueError: as for :func:`grad` (any output shape is allowed).

    Examples:
        >>> import numpy as np
        >>> from zerograd.func import jacrev
        >>> jacrev(lambda x: x ** 2)(np.array([1.0, 2.0]))
        array([[2., 0.],
               [0., 4.]])
    """
    has_aux = flag("jacrev", "has_aux", has_aux)
    nums, single = arguments.transform(f, argnums, "jacrev")

    @functools.wraps(f)
    def jacobian_rev(*args: Any, **kwargs: Any) -> Any:
        idx = arguments.resolve(nums, len(args), "jacrev")
        leaves, paths, trees = arguments.differentiated(args, idx)
        lin = Linearization("jacrev", leaves, paths)
        out = lin.call(f, *arguments.replaced(args, idx, trees, lin.standins), **kwargs)
        lin.release()
        aux = None
        if has_aux:
            out, aux = _pair(out, "jacrev")
        out_leaves, out_tree = flatten_outputs(out, "jacrev")
        blocks = []
        for o in out_leaves:
            shape = tuple(getattr(o, "shape", ()))
            m = _size(shape)

            def pull(ct: Any, o: Any = o) -> tuple:
                caught = lin.walk([o], [ct])
                return tuple(_to_variable(lin.result(i, g)) for i, g in enumerate(caught))

            if m == 0 or not isinstance(o, Variable):
                rows = [_zero_block(shape, s) for s in lin.standins]
            elif m == 1:  # one row: a plain walk (what grad does), no batch of cotangents
                rows = [
                    _arrange(r, shape, tuple(s.shape), True)
                    for r, s in zip(pull(None), lin.standins)  # None: the engine's ones
                ]
            else:
                rows = vmap(pull)(_eye(o, m, shape))
                rows = [
                    _arrange(r, shape, tuple(s.shape), True) for r, s in zip(rows, lin.standins)
                ]
            blocks.append(lin.finish(arguments.regroup(trees, rows, single)))
        result = out_tree.rebuild(blocks)
        return (result, lin.finish(aux)) if has_aux else result

    return jacobian_rev


def _zero_block(out_shape: tuple, s: Any) -> Variable:
    d = s.data.data if isinstance(s.data, BatchedData) else s.data
    xp = backend_of(d).xp
    return Variable(xp.zeros(out_shape + tuple(s.shape), dtype=s.dtype, device=device_of(d)))


def _pair(out: Any, op: str) -> tuple[Any, Any]:
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(
            f"{op}(has_aux=True): the function must return a pair (output, aux), got "
            f"{type(out).__name__}; return (output, aux), or leave has_aux False."
        )
    return out[0], out[1]


def jacfwd(
    f: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """The Jacobian of ``f`` from Jacobian-vector products with the whole input basis.

    Built on the double-vjp construction (see :func:`jvp`): the function once, one walk
    for the linear map, then one batched walk per input leaf.

    Args:
        f: a function returning a Variable (or a structure of them).
        argnums: the argument (or tuple of arguments) to differentiate.
        has_aux: ``f`` returns ``(output, aux)``; the aux comes back as :func:`grad`'s
            does.

    Returns:
        A function returning the Jacobian, as :func:`jacrev` does.

    Raises:
        TypeError: as for :func:`grad`.
        ValueError: as for :func:`grad` (any output shape is allowed).

    Examples:
        >>> import numpy as np
        >>> from zerograd.func import jacfwd
        >>> jacfwd(lambda x: x[0] * x)(np.array([2.0, 3.0]))
        array([[4., 0.],
               [3., 2.]])
    """
    has_aux = flag("jacfwd", "has_aux", has_aux)
    nums, single = arguments.transform(f, argnums, "jacfwd")

    @functools.wraps(f)
    def jacobian_fwd(*args: Any, **kwargs: Any) -> Any:
        idx = arguments.resolve(nums, len(args), "jacfwd")

        def partial(*chosen: Any) -> Any:
            full = list(args)
            for i, v in zip(idx, chosen):
                full[i] = v
            return f(*full, **kwargs)

        pf = Pushforward("jacfwd", partial, tuple(args[i] for i in idx), has_aux)
        try:
            n_in = len(pf.leaves)
            per_input = []  # [input leaf][output leaf] -> block
            for j, s in enumerate(pf.lin.standins):
                shape = tuple(s.shape)
                m = _size(shape)

                def push(t: Any, j: int = j) -> tuple:
                    ts = [None] * n_in
                    ts[j] = t
                    return tuple(_to_variable(v) for v in pf.push(ts))

                if m == 0 or not pf.out_leaves:
                    cols = [_zero_block(tuple(getattr(o, "shape", ())), s) for o in pf.out_leaves]
                else:
                    cols = list(vmap(push)(_eye(s, m, shape)))
                    cols = [
                        _arrange(c, tuple(getattr(o, "shape", ())), shape, False)
                        for c, o in zip(cols, pf.out_leaves)
                    ]
                per_input.append(cols)
        finally:
            pf.release()
        blocks = []
        for k in range(len(pf.out_leaves)):
            block = arguments.regroup(pf.trees, [per_input[j][k] for j in range(n_in)], single)
            blocks.append(pf.lin.finish(block))
        result = pf.out_tree.rebuild(blocks)
        return (result, pf.aux()) if has_aux else result

    return jacobian_fwd


jacobian = jacrev
"""The Jacobian by reverse mode: the same function as :func:`jacrev` (JAX's ``jacobian``).

zerograd's engine is reverse mode; :func:`jacfwd` builds forward products from two
reverse walks, so reverse mode is the cheaper choice unless the output is much larger than
the input."""


def hessian(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """The Hessian of the scalar function ``f``: ``jacrev(jacrev(f))``.

    Reverse over reverse: the gradient's graph is built once, then walked with the whole
    basis at once. ``H[i..., j...]`` has shape ``x.shape + x.shape``.

    Args:
        f: a function returning a scalar.
        argnums: the argument (or tuple of arguments) to differentiate.

    Returns:
        A function returning the Hessian (for a tuple of arguments, a tuple of tuples of
        blocks).

    Examples:
        >>> import numpy as np
        >>> from zerograd.func import hessian
        >>> hessian(lambda x: (x ** 3).sum())(np.array([1.0, 2.0]))
        array([[ 6.,  0.],
               [ 0., 12.]])
    """
    arguments.transform(f, argnums, "hessian")
    return jacrev(jacrev(f, argnums), argnums)


def hvp(f: Callable[..., Any], primals: tuple, tangents: tuple) -> tuple[Any, Any]:
    """The gradient of the scalar function ``f`` at ``primals`` and its Hessian times ``tangents``.

    Reverse over reverse, without the Hessian: the gradient with a graph, then the
    gradient of its dot product with the tangents (two backward walks). The same values as
    ``jvp(grad(f), primals, tangents)``.

    Args:
        f: a function of the primals returning a scalar.
        primals: a tuple of the arguments (all differentiated).
        tangents: a tuple of the same structure and shapes.

    Returns:
        ``(gradient, hessian_times_tangents)``, each a tuple with one entry per primal.

    Raises:
        TypeError: ``f`` is not callable; ``primals``/``tangents`` are not tuples; a primal
            or a tangent is not floating point.
        ValueError: the tangents differ from the primals in structure or shape; the output
            is not a scalar.

    Examples:
        >>> import numpy as np
        >>> from zerograd.func import hvp
        >>> hvp(lambda x: (x ** 3).sum(), (np.array([1.0, 2.0]),), (np.array([1.0, 1.0]),))
        ((array([ 3., 12.]),), (array([ 6., 12.]),))
    """
    arguments.function(f, "hvp")
    arguments.argument_tuples(primals, tangents, "hvp", "hvp(f, (x,), (v,))")
    if len(primals) != len(tangents):
        raise ValueError(
            f"hvp: {len(primals)} primals but {len(tangents)} tangents; give one per primal."
        )
    nums = tuple(range(len(primals)))
    leaves, paths, trees = arguments.differentiated(tuple(primals), nums)
    t_leaves = flat_like(tuple(tangents), flatten(tuple(primals))[1], "tangents", "hvp")
    for t, p, name in zip(t_leaves, leaves, paths):
        ts, ps = tuple(getattr(t, "shape", ())), tuple(getattr(p, "shape", ()))
        if ts != ps:
            raise ValueError(f"hvp: the tangent for {name} has shape {ts}, the primal {ps}")
    floating_tangents(t_leaves, tuple(primals), "hvp")
    lin = Linearization("hvp", leaves, paths)
    out = lin.call(f, *arguments.replaced(tuple(primals), nums, trees, lin.standins))
    lin.release()
    check_scalar(out, "hvp")
    first = lin.walk([out], [None], create_graph=True)
    total = None
    for g, t in zip(first, t_leaves):
        if g is None:
            continue
        term = F.sum(g * t)
        total = term if total is None else total + term
    second = [None] * len(leaves) if total is None else lin.walk([total], [None], trusted=True)
    grads = [lin.result(i, g) for i, g in enumerate(first)]
    hv = [lin.result(i, g) for i, g in enumerate(second)]
    return tuple(arguments.regroup(trees, grads, False)), tuple(arguments.regroup(trees, hv, False))
