"""Shapes: reshape, transpose, indexing, broadcasting, sum_to, concatenate, stack.

Where a shape holds the batch axis, the node must not freeze its length: a reshape copies
it from the input (``0``) or infers it (``-1``), a broadcast keeps it from the input
(``1`` in ``Expand``'s shape).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from zerograd.backends import as_numpy

from ..context import OpContext
from .base import INT64_MAX, INT64_MIN, emits


def reshape_target(ctx: OpContext, x: str, out: str) -> list[int]:
    """The ``Reshape`` shape giving ``out``'s shape from ``x``, batch axes left free.

    A batch axis of the result that is the same axis of ``x`` at both batch sizes copies
    it (``0``); one other batch axis is inferred (``-1``).

    Args:
        ctx: the call.
        x: the reshaped value.
        out: the result.

    Returns:
        The target shape for ONNX ``Reshape``.

    Raises:
        ExportError: two axes of the result follow the batch size without being copies
            of the input's.
    """
    shape = list(ctx.shape(out))
    in_shape, in_other = ctx.shape(x), ctx.other_shape(x)
    out_other = ctx.other_shape(out)
    inferred = []
    for axis in sorted(ctx.dynamic(out)):
        copies = (
            axis < len(in_shape)
            and axis in ctx.dynamic(x)
            and in_shape[axis] == shape[axis]
            and in_other is not None
            and out_other is not None
            and in_other[axis] == out_other[axis]
        )
        if copies:
            shape[axis] = 0
        else:
            inferred.append(axis)
            shape[axis] = -1
    if len(inferred) > 1:
        raise ctx.error(
            f"the result's axes {inferred} (shape {ctx.shape(out)}) both follow the batch size; "
            f"ONNX's Reshape infers one axis only. Keep the batch on one axis, or export with "
            f"dynamic_batch=False."
        )
    if 0 in ctx.shape(out) and not ctx.dynamic(out):
        raise ctx.error(f"a reshape to the empty shape {ctx.shape(out)} is not supported")
    return shape


@emits("Reshape")
def reshape(ctx: OpContext) -> None:
    """``Reshape`` to the recorded result shape, batch axes copied or inferred."""
    (x,) = ctx.inputs
    target = reshape_target(ctx, x, ctx.outputs[0])
    ctx.node("Reshape", [x, ctx.ints(target)], ctx.outputs[0])


@emits("Transpose")
def transpose(ctx: OpContext) -> None:
    """``Transpose`` by the constructor's ``axes`` (None reverses them)."""
    (x,) = ctx.inputs
    ndim = len(ctx.shape(x))
    axes = ctx.fn.axes
    perm = list(range(ndim))[::-1] if axes is None else [operator.index(a) % ndim for a in axes]
    ctx.node("Transpose", [x], ctx.outputs[0], perm=perm)


@emits("Concat")
def concatenate(ctx: OpContext) -> None:
    """``Concat`` along the constructor's ``axis``."""
    ndim = len(ctx.shape(ctx.outputs[0]))
    axis = operator.index(ctx.fn.axis) % ndim
    ctx.node("Concat", ctx.inputs_as_output_dtype(), ctx.outputs[0], axis=axis)


@emits("Unsqueeze", "Concat")
def stack(ctx: OpContext) -> None:
    """Each input given the new axis (``Unsqueeze``), then ``Concat`` along it."""
    ndim = len(ctx.shape(ctx.outputs[0]))
    axis = operator.index(ctx.fn.axis) % ndim
    parts = [ctx.node("Unsqueeze", [x, ctx.ints([axis])]) for x in ctx.inputs_as_output_dtype()]
    ctx.node("Concat", parts, ctx.outputs[0], axis=axis)


@emits("Expand")
def broadcast_to(ctx: OpContext) -> None:
    """``Expand`` to the result's shape; a batch axis the input has is kept from it (1)."""
    (x,) = ctx.inputs
    out = ctx.outputs[0]
    shape = list(ctx.shape(out))
    in_shape = ctx.shape(x)
    lead = len(shape) - len(in_shape)
    for axis in ctx.dynamic(out):
        a = axis - lead
        if a < 0 or a not in ctx.dynamic(x):
            raise ctx.error(
                f"broadcasting {in_shape} to {tuple(shape)} creates the batch axis {axis}; "
                f"ONNX's Expand would freeze its length. Broadcast with an operator against a "
                f"value that has the batch axis (x + zeros), or export with dynamic_batch=False."
            )
        shape[axis] = 1  # Expand broadcasts both ways: the input's length is kept
    ctx.node("Expand", [x, ctx.ints(shape)], out)


@emits("ReduceSum", "Squeeze")
def sum_to(ctx: OpContext) -> None:
    """``ReduceSum`` over the broadcast axes, then ``Squeeze`` of the leading ones."""
    (x,) = ctx.inputs
    out = ctx.outputs[0]
    shapes = [(ctx.shape(x), ctx.shape(out))]
    if ctx.other_shape(x) is not None:
        shapes.append((ctx.other_shape(x), ctx.other_shape(out)))
    axes: set[int] = set()
    for in_shape, shape in shapes:
        lead = len(in_shape) - len(shape)
        axes.update(range(lead))
        axes.update(a for a in range(lead, len(in_shape)) if shape[a - lead] == 1 != in_shape[a])
    lead = len(ctx.shape(x)) - len(ctx.shape(out))
    if not axes:
        ctx.node("Identity", [x], out)
        return
    summed = ctx.node("ReduceSum", [x, ctx.ints(sorted(axes))], None if lead else out, keepdims=1)
    if lead:
        ctx.node("Squeeze", [summed, ctx.ints(range(lead))], out)


# -- indexing ------------------------------------------------------------------------------
def _is_array(s: Any) -> bool:
    return hasattr(s, "shape") and hasattr(s, "dtype")


def _expand(ctx: OpContext, slices: Any, ndim: int) -> list[Any]:
    """The index as one entry per input axis, with Nones where new axes go."""
    items = list(slices) if isinstance(slices, tuple) else [slices]
    items = [np.asarray(s) if isinstance(s, list) else s for s in items]
    consumed = 0
    for s in items:
        if s is None or s is Ellipsis:
            continue
        if _is_array(s) and as_numpy(s).dtype == np.bool_:
            consumed += as_numpy(s).ndim
        else:
            consumed += 1
    if sum(s is Ellipsis for s in items) > 1:
        raise ctx.error("an index with more than one Ellipsis")
    if Ellipsis in [s for s in items if not _is_array(s)]:
        i = next(k for k, s in enumerate(items) if not _is_array(s) and s is Ellipsis)
        items[i : i + 1] = [slice(None)] * (ndim - consumed)
    else:
        items += [slice(None)] * (ndim - consumed)
    return items


@emits("Slice", "Gather", "Unsqueeze")
def get_item(ctx: OpContext) -> None:
    """``x[index]``: ``Slice``, then ``Gather`` (ints, one array), then ``Unsqueeze`` (None).

    An index array that the graph computed (an input's ids, as :func:`embed_id` passes
    them) stays an input of the ``Gather``; a constant one becomes an initializer. A 1-d
    boolean mask becomes the indices where it is True.
    """
    (x,) = ctx.inputs
    shape = ctx.shape(x)
    items = _expand(ctx, ctx.fn.slices, len(shape))
    for s in items:
        if _is_array(s) and np.ndim(as_numpy(s)) == 0 and as_numpy(s).dtype == np.bool_:
            raise ctx.error(
                "a boolean scalar as an index (numpy adds an axis of length 1 for True, 0 "
                "for False) is not supported; index with None to add an axis."
            )
    starts, ends, axes, steps = [], [], [], []
    ints: list[tuple[int, int]] = []
    arrays: list[tuple[int, Any]] = []
    new_axes: list[int] = []
    axis = position = 0
    for s in items:
        if s is None:
            new_axes.append(position)
            position += 1
        elif isinstance(s, slice):
            if s != slice(None) and s != slice(None, None, 1):
                _refuse_hidden_batch_length(ctx, x, axis, s)
                step = 1 if s.step is None else operator.index(s.step)
                if step > 0:
                    start, stop = s.start or 0, INT64_MAX if s.stop is None else s.stop
                else:
                    start = INT64_MAX if s.start is None else s.start
                    stop = INT64_MIN if s.stop is None else s.stop
                starts.append(operator.index(start))
                ends.append(operator.index(stop))
                axes.append(axis)
                steps.append(step)
            axis += 1
            position += 1
        elif _is_array(s) and (np.ndim(as_numpy(s)) > 0 or ctx.value_of(s) is not None):
            arrays.append((axis, s))
            axis += 1
            position += np.ndim(as_numpy(s))
        else:
            ints.append((axis, operator.index(as_numpy(s) if _is_array(s) else s)))
            axis += 1
    if len(arrays) > 1 or (arrays and ints):
        raise ctx.error(
            f"an index with more than one array or integer next to an array ({_text(items)}) "
            f"selects by numpy's advanced-indexing rules, which zerograd-onnx does not write "
            f"as ONNX; index one axis with an array at a time."
        )
    y = x
    last = not (ints or arrays or new_axes)
    if axes:
        y = ctx.node(
            "Slice",
            [y, ctx.ints(starts), ctx.ints(ends), ctx.ints(axes), ctx.ints(steps)],
            ctx.outputs[0] if last else None,
        )
    for a, s in arrays:
        out = None if new_axes else ctx.outputs[0]
        y = ctx.node("Gather", [y, _indices(ctx, s)], out, axis=a)
    for n, (a, i) in enumerate(sorted(ints, reverse=True)):
        last = n == len(ints) - 1 and not new_axes
        index = ctx.constant(np.asarray(i, dtype=np.int64), "index")
        y = ctx.node("Gather", [y, index], ctx.outputs[0] if last else None, axis=a)
    if new_axes:
        y = ctx.node("Unsqueeze", [y, ctx.ints(new_axes)], ctx.outputs[0])
    if y != ctx.outputs[0]:  # the whole-array index x[...]
        ctx.node("Identity", [y], ctx.outputs[0])


def _refuse_hidden_batch_length(ctx: OpContext, x: str, axis: int, s: slice) -> None:
    """Refuse a slice of a batch axis whose length the two runs saw as fixed but is not.

    ``x[::2]`` keeps 2 rows of 3 and of 4, ``x[:2]`` 2 of 4 and of 5: the result's axis looks
    fixed, and the graph would write its length into later nodes (a ``Reshape``, the
    outputs' shapes), where ONNX Runtime then fails or computes another shape at other
    batch sizes. A slice whose length is the same at every length of the axis (``x[-1:]``),
    or differs between the two runs (``x[1:]``, ``x[::-1]``), is exported.
    """
    if axis not in ctx.dynamic(x):
        return
    lengths = (ctx.shape(x)[axis], ctx.other_shape(x)[axis])
    kept = len(range(*s.indices(lengths[0])))
    if len(range(*s.indices(lengths[1]))) != kept:
        return  # the result's axis follows the batch size as well
    # past its bounds a slice keeps a fixed count or one that grows by one every `step`
    # lengths: counting up to twice the bounds (the step among them) shows which
    bounds = sum(abs(operator.index(v)) for v in (s.start, s.stop, s.step) if v is not None)
    for n in range(1, 2 * bounds + 3):
        other = len(range(*s.indices(n)))
        if other != kept:
            batch = ctx.graph.program.batch
            raise ctx.error(
                f"the slice {_slice_text(s)} of axis {axis}, which follows the batch size, keeps "
                f"{kept} of {lengths[0]} and of {lengths[1]} (at batch {batch[0]} and {batch[1]}) "
                f"but {other} of {n}: the graph would fix that length at {kept}, and ONNX Runtime "
                f"would fail or compute another shape at other batch sizes. Slice the batch "
                f"axis so that the count follows it (x[1:], x[::-1]) or is fixed (x[-1:], "
                f"x[0:1]), or export with dynamic_batch=False. Nothing was written."
            )


def _slice_text(s: slice) -> str:
    parts = ["" if v is None else str(v) for v in (s.start, s.stop, s.step)]
    return "[" + ":".join(parts if s.step is not None else parts[:2]) + "]"


def _indices(ctx: OpContext, s: Any) -> str:
    """The value of an index array: the graph's own, or an int64 initializer."""
    found = ctx.value_of(s)
    if found is not None:
        return ctx.cast(found, np.int64)
    a = as_numpy(s)
    if a.dtype == np.bool_:
        if a.ndim != 1:
            raise ctx.error(
                f"a {a.ndim}-d boolean mask as an index is not supported (1-d is): reshape "
                f"those axes into one and index it with mask.ravel(), which selects the same."
            )
        a = np.flatnonzero(a)
    return ctx.constant(a.astype(np.int64), "indices")


def _text(items: list[Any]) -> str:
    return ", ".join(f"array of shape {tuple(s.shape)}" if _is_array(s) else repr(s) for s in items)
