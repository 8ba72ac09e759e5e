"""``vmap``: a function of one sample, run on a whole batch at once."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

from .. import functions as F
from .. import modes
from ..arrays import as_array
from ..backends import backend_of, get_array_module
from ..checks import int_like, positive_int
from ..variable import Constant, Variable
from . import arguments
from .batched import BatchedData, BatchedVariable, Level, constant
from .trees import broadcast_prefix, flatten, flatten_outputs


def _check_axes(value: Any, what: str) -> None:
    """Refuse ``in_axes``/``out_axes`` values other than ints and Nones (or structures of them)."""
    if value is None or int_like(value):
        return
    if isinstance(value, (tuple, list)):
        for v in value:
            _check_axes(v, what)
        return
    if isinstance(value, dict):
        for v in value.values():
            _check_axes(v, what)
        return
    raise TypeError(
        f"vmap: {what} must be an int, None, or a tuple/list/dict of them, got {value!r} "
        f"({type(value).__name__})"
    )


def _ndim(v: Any) -> int:
    if isinstance(v, Variable):
        return v.ndim
    return getattr(v, "ndim", 0)


def _axis(axis: Any, ndim: int, where: str) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        valid = f"valid: {-ndim}..{ndim - 1}" if ndim else "it has no axis: use None"
        raise ValueError(
            f"vmap: in_axes {axis} is out of range for {where}, which has {ndim} axes ({valid})"
        )
    return axis % ndim


def _batched_input(v: Any, axis: int, level: Level) -> BatchedVariable:
    """Argument leaf ``v`` as a batched value: its ``axis`` moved to the front."""
    if isinstance(v, Variable):
        phys = v if axis == 0 else F.transpose(v, _to_front(axis, v.ndim))
    else:
        a = as_array(v)
        if axis:
            a = backend_of(a).xp.permute_dims(a, _to_front(axis, a.ndim))
        phys = constant(a)
    return BatchedVariable(phys, level)


def _to_front(axis: int, ndim: int) -> tuple[int, ...]:
    return (axis, *(i for i in range(ndim) if i != axis))


def _from_front(axis: int, ndim: int) -> tuple[int, ...]:
    order = list(range(1, ndim))
    order.insert(axis, 0)
    return tuple(order)


def _output(v: Any, axis: Any, level: Level, path: str, arrays: bool) -> Any:
    """Output leaf ``v`` of the batched call with its batch axis at ``axis``.

    ``arrays``: no argument was a Variable, so an output with no graph comes as an array.
    """
    if type(v) is not BatchedVariable and isinstance(v, Variable):
        d = v.data
        if isinstance(d, BatchedData) and d.level is level:
            v = d.as_variable()  # Variable(x.data), as accuracy returns: the batch, no graph
    if type(v) is BatchedVariable and v.level is level:
        if axis is None:
            raise ValueError(
                f"vmap: output{path} is batched, but out_axes gives it None (no batch axis); "
                f"give it an axis, or return a value that does not depend on the batch."
            )
        phys = v.phys
        ndim = phys.ndim
        axis = _out_axis(axis, ndim, path)
        if arrays and _plain(phys):
            a = phys.data
            return a if axis == 0 else get_array_module(a).permute_dims(a, _from_front(axis, ndim))
        return phys if axis == 0 else F.transpose(phys, _from_front(axis, ndim))
    if isinstance(v, (BatchedData,)):
        raise TypeError(
            f"vmap: output{path} is the raw array of a batched Variable (x.data); return the "
            f"Variable itself."
        )
    if axis is None:
        return v.data if arrays and isinstance(v, Variable) and _of_arrays(v) else v
    # does not depend on the batch: the same value for every sample
    x = v if isinstance(v, Variable) else Variable(as_array(v))
    arrays = arrays and _of_arrays(x)
    ndim = x.ndim + 1
    axis = _out_axis(axis, ndim, path)
    shape = list(x.shape)
    shape.insert(axis, 1)
    target = list(x.shape)
    target.insert(axis, level.n)
    out = F.broadcast_to(F.reshape(x, tuple(shape)), tuple(target))
    return out.data if arrays else out


def _plain(x: Variable) -> bool:
    """Whether ``x`` has no graph and no outer vmap's batch: a value vmap gives as an array."""
    return x.creator is None and type(x) is not BatchedVariable


def _of_arrays(x: Variable) -> bool:
    """Whether ``x``, an output that does not depend on the batch, is computed from arrays.

    True for a Variable with no graph, and for one whose graph starts at Constants alone
    (``F.sum(captured_array)``: the function recorded it, but nothing upstream takes a
    gradient); False where a Variable the function captured (a leaf, or one with a graph
    of its own) or an outer vmap's batch is upstream. The graph is walked once, here, for
    unbatched outputs only.
    """
    if type(x) is BatchedVariable:
        return False
    seen: set[int] = set()
    stack = [x]
    while stack:
        v = stack.pop()
        fn = v.creator
        if fn is None:
            if v is not x and type(v) is not Constant:
                return False
            continue
        if id(fn) not in seen:
            seen.add(id(fn))
            stack.extend(fn.inputs)
    return True


def _out_axis(axis: Any, ndim: int, path: str) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"vmap: out_axes {axis} is out of range for output{path}, which has {ndim} axes "
            f"with the batch axis (valid: {-ndim}..{ndim - 1})"
        )
    return axis % ndim


class _Axis0:
    """What ``in_axes``/``out_axes`` and torch.func's ``in_dims``/``out_dims`` are, left out.

    Axis 0; an object of its own, not 0, so that vmap can tell ``in_axes=0`` given from
    nothing given, and refuse both spellings at once.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "0"


_AXIS_0 = _Axis0()


def _one_spelling(axes: Any, dims: Any, name: str, torch_name: str) -> Any:
    """``in_axes``, or ``in_dims`` (torch.func's name for it), whichever was given; 0 if neither."""
    if dims is _AXIS_0:
        return 0 if axes is _AXIS_0 else axes
    if axes is not _AXIS_0:
        raise TypeError(
            f"vmap: got {name}={axes!r} and {torch_name}={dims!r}, which are one argument "
            f"({torch_name} is torch.func's name for {name}); give one of them."
        )
    return dims


def _check_randomness(randomness: Any) -> None:
    """Refuse a ``randomness`` other than 'different', the one zerograd's vmap has."""
    if type(randomness) is str and randomness == "different":
        return
    if not isinstance(randomness, str):
        raise TypeError(
            f"vmap: randomness must be a string ('different'), got {randomness!r} "
            f"({type(randomness).__name__})"
        )
    does = (
        "inside vmap, a zerograd function that draws random numbers (dropout) draws them for "
        "each sample on its own, as torch.func's randomness='different' does"
    )
    if randomness == "error":
        raise ValueError(
            f"vmap: randomness='error' (torch.func's default) is not available: {does}, and "
            f"no draw is refused. Leave randomness out (or write 'different'), or draw "
            f"outside vmap."
        )
    if randomness == "same":
        raise ValueError(
            f"vmap: randomness='same' is not available: {does}. For one draw shared by every "
            f"sample, draw it outside vmap and pass it with in_axes None (a dropout mask m: "
            f"x * m / (1 - p))."
        )
    # another string: also what JAX's vmap(f, in_axes, out_axes, axis_name) passes
    raise ValueError(
        f"vmap: randomness must be 'different' (torch.func's 'error' and 'same' are not "
        f"available), got {randomness!r}. randomness is torch.func's fourth parameter, "
        f"vmap(f, in_dims, out_dims, randomness); JAX's axis_name, its fourth, is not "
        f"supported (zerograd's vmap has no named axes): leave it out."
    )


_NO_NAMED_AXES = (
    "zerograd's vmap has no named axes, so nothing inside f reduces over the batch by name "
    "(JAX's psum(x, 'i')); leave it out, and reduce the batched result outside instead: "
    "F.sum(vmap(f)(xs), axis=0)"
)
_JAX_KEYWORDS = {
    "axis_name": _NO_NAMED_AXES,
    "spmd_axis_name": _NO_NAMED_AXES,
    "axis_size": "the batch size is read from the batched arguments, of which there must be "
    "at least one (an in_axes entry that is not None); leave it out",
}


def _refuse_jax_keywords(given: dict[str, Any]) -> None:
    """Refuse keywords vmap does not take; JAX's own (``axis_name``) say what instead."""
    for key in given:
        if key in _JAX_KEYWORDS:
            raise TypeError(f"vmap: {key}= is JAX's keyword, not zerograd's: {_JAX_KEYWORDS[key]}.")
    raise TypeError(f"vmap() got an unexpected keyword argument {next(iter(given))!r}")


def _batch(in_axes: Any, args: tuple) -> tuple[list, list, list, int]:
    """``args`` taken apart for a batched call, ``in_axes`` checked against them.

    Returns:
        The leaves, each one's batch axis (None: not batched), the arguments' trees, and
        the batch size.
    """
    if isinstance(in_axes, (tuple, list)):
        if len(in_axes) != len(args):
            raise ValueError(
                f"vmap: in_axes has {len(in_axes)} entries but the function got "
                f"{len(args)} positional argument{'s' if len(args) != 1 else ''}; give "
                f"one entry per argument (or one int or None for all of them)."
            )
        per_arg = list(in_axes)
    elif isinstance(in_axes, dict):
        raise ValueError(
            "vmap: in_axes is a dict; give a tuple with one entry per positional "
            "argument (a dict may stand for one argument inside it)"
        )
    else:
        per_arg = [in_axes] * len(args)
    leaves, axes, where, trees = [], [], [], []
    for i, (arg, ax) in enumerate(zip(args, per_arg)):
        ls, tree = flatten(arg)
        trees.append(tree)
        leaves += ls
        axes += broadcast_prefix(ax, tree, f"vmap: in_axes[{i}]")
        where += [f"argument {i}{p}" for p in tree.paths()]
    sizes = {}
    for k, (v, ax) in enumerate(zip(leaves, axes)):
        if ax is None:
            continue
        if v is None or not (isinstance(v, Variable) or hasattr(v, "shape")):
            v = leaves[k] = as_array(v) if v is not None else v
            if v is None:
                raise ValueError(f"vmap: {where[k]} is None but in_axes gives it axis {ax}")
        axes[k] = _axis(ax, _ndim(v), where[k])
        sizes[k] = tuple(v.shape)[axes[k]]
    if not sizes:
        raise ValueError(
            "vmap: no argument is batched (in_axes is None for all of them); give the "
            "batched arguments an axis."
        )
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"{where[k]} (axis {axes[k]}): {n}" for k, n in sizes.items())
        raise ValueError(
            f"vmap: the batched arguments differ in size along their in_axes: {listed}; "
            f"give them one batch size."
        )
    return leaves, axes, trees, next(iter(sizes.values()))


def _part(v: Any, axis: int, start: int, stop: int) -> Any:
    """Samples ``start:stop`` of leaf ``v``, batched along ``axis``."""
    index = (slice(None),) * axis + (slice(start, stop),)
    if isinstance(v, Variable):
        return F.get_item(v, index)
    return backend_of(v).getitem(v, index)


def _joined(outs: list, out_axes: Any) -> Any:
    """The outputs of calls on consecutive chunks of the batch, as one call's outputs."""
    flat = [flatten_outputs(out, "vmap") for out in outs]
    tree = flat[0][1]
    leaves = []
    for k, axis in enumerate(broadcast_prefix(out_axes, tree, "vmap: out_axes", of="output")):
        column = [ls[k] for ls, _ in flat]
        if axis is None:  # not batched: every chunk gave this value
            leaves.append(column[0])
        elif any(isinstance(v, Variable) for v in column):
            leaves.append(F.concatenate(column, axis=axis))
        else:
            leaves.append(get_array_module(column[0]).concat(column, axis=axis))
    return tree.rebuild(leaves)


def vmap(
    f: Callable[..., Any],
    in_axes: Any = _AXIS_0,
    out_axes: Any = _AXIS_0,
    randomness: str = "different",
    *,
    chunk_size: int | None = None,
    in_dims: Any = _AXIS_0,
    out_dims: Any = _AXIS_0,
    **jax: Any,
) -> Callable[..., Any]:
    """Run ``f``, written for one sample, on a batch at once; the results stacked.

    ``vmap(f)(xs)`` equals stacking ``f(x)`` for each ``x`` in ``xs`` along axis 0, with
    no Python loop: each zerograd function ``f`` applies runs once on the whole batch (its
    batching rule). A function with no rule runs once per sample, the same result, with
    one :class:`VmapFallbackWarning` naming it. Composes with the other transforms:
    ``vmap(grad(loss), in_axes=(None, 0, 0))(params, xs, ts)`` gives per-sample gradients.

    Inside ``f`` the batched arguments are :class:`BatchedVariable` s: they have one sample's
    shape; their values cannot be read (``float(x)``, ``x.numpy()``), since there is no one
    sample to read, and ``x.backward()`` is refused (use :func:`grad`).

    Args:
        f: a function of one sample.
        in_axes: which axis of each positional argument is the batch: an int, None (not
            batched: the same value for every sample), or a tuple with one entry per
            argument, each an int, None or a structure matching the argument (a dict of
            parameters with None). Keyword arguments are not batched.
        out_axes: where the batch axis goes in each output: an int, None (the output must
            not depend on the batch), or a structure matching the output.
        randomness: torch.func's switch, for its users: 'different' is what zerograd does
            (a zerograd function that draws random numbers, such as dropout, draws them
            for each sample on its own; numbers drawn in Python, ``np.random`` in ``f``,
            once for the whole batch). torch.func's 'error' and 'same' are refused.
        chunk_size: run the batch this many samples at a time (the last chunk may be
            smaller) and concatenate the results, as torch.func does: the same values,
            less memory at once, more Python calls. None: the whole batch at once.
        in_dims: torch.func's name for ``in_axes``; give one of the two.
        out_dims: torch.func's name for ``out_axes``; give one of the two.
        **jax: Refused: JAX's ``axis_name``, ``spmd_axis_name`` and ``axis_size``, each
            with what to do instead.

    Returns:
        The batched function. An output computed from arrays only (no argument and
        nothing the function captured is a Variable with a graph) comes as an array; any
        other as a Variable, connected to what it was computed from. What a transform
        inside ``f`` returns counts as computed from arrays where its arguments are (the
        Variables it captures are its constants): ``vmap(hessian(f))(x)``,
        ``vmap(jacrev(f))(x)``, ``jvp``'s outputs, ``value_and_grad``'s value and an aux
        come as arrays, as from ``torch.func.vmap`` and ``jax.vmap``;
        ``vmap(lambda x: grad(f)(x) * w)`` with a Variable ``w`` stays connected to ``w``.

    Raises:
        TypeError: ``f`` is not callable; ``in_axes``/``out_axes`` are not ints, Nones
            and structures of them; both ``in_axes`` and ``in_dims`` (or ``out_axes`` and
            ``out_dims``) are given; ``chunk_size`` is not an int; ``randomness`` is not a
            string; a keyword vmap does not take (JAX's ``axis_name=``: zerograd's vmap has
            no named axes; ``axis_size=``: the batch size comes from the arguments).
        ValueError: ``chunk_size`` is below 1; ``randomness`` is not 'different' (the
            message says that JAX's fourth parameter, ``axis_name``, has no counterpart); (when
            called) ``in_axes`` does not match the arguments; an axis is out of range; the
            batched arguments differ in size along their axes (the message names them and
            their sizes); no argument is batched.

    Examples:
        >>> import numpy as np
        >>> import zerograd.functions as F
        >>> from zerograd.func import vmap
        >>> vmap(lambda x, w: F.sum(x * w))(np.ones((3, 2)), np.arange(6.0).reshape(3, 2))
        array([1., 5., 9.])
        >>> vmap(lambda x: x * 2.0, in_dims=1, chunk_size=2)(np.arange(6.0).reshape(2, 3))
        array([[ 0.,  6.],
               [ 2.,  8.],
               [ 4., 10.]])
    """
    if jax:
        _refuse_jax_keywords(jax)
    arguments.function(f, "vmap")
    in_axes = _one_spelling(in_axes, in_dims, "in_axes", "in_dims")
    out_axes = _one_spelling(out_axes, out_dims, "out_axes", "out_dims")
    _check_axes(in_axes, "in_axes")
    _check_axes(out_axes, "out_axes")
    _check_randomness(randomness)
    if chunk_size is not None:
        chunk_size = positive_int("vmap", "chunk_size", chunk_size)
    name = getattr(f, "__name__", type(f).__name__)

    @functools.wraps(f)
    def batched(*args: Any, **kwargs: Any) -> Any:
        leaves, axes, trees, n = _batch(in_axes, args)
        arrays = not any(isinstance(v, Variable) for v in leaves)
        level = Level(n, modes.current(), name)
        new_leaves = [
            v if ax is None else _batched_input(v, ax, level) for v, ax in zip(leaves, axes)
        ]
        call_args, k = [], 0
        for tree in trees:
            call_args.append(tree.rebuild(new_leaves[k : k + tree.size]))
            k += tree.size
        try:
            with modes.entered(level):
                out = f(*call_args, **kwargs)
            out_leaves, out_tree = flatten_outputs(out, "vmap")
            out_ax = broadcast_prefix(out_axes, out_tree, "vmap: out_axes", of="output")
            paths = out_tree.paths()
            return out_tree.rebuild(
                [_output(v, ax, level, p, arrays) for v, ax, p in zip(out_leaves, out_ax, paths)]
            )
        finally:
            level.active = False

    if chunk_size is None:
        return batched

    @functools.wraps(f)
    def chunked(*args: Any, **kwargs: Any) -> Any:
        leaves, axes, trees, n = _batch(in_axes, args)
        if n <= chunk_size:
            return batched(*args, **kwargs)
        outs = []
        for start in range(0, n, chunk_size):
            part = [
                v if ax is None else _part(v, ax, start, start + chunk_size)
                for v, ax in zip(leaves, axes)
            ]
            outs.append(batched(*arguments.regroup(trees, part, False), **kwargs))
        return _joined(outs, out_axes)

    return chunked
