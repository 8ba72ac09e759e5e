"""Flat parameters: one contiguous buffer per group, array type and dtype.

An optimizer packs the parameters it updates in place (numpy, CuPy; on numpy those up to
:data:`PACK_LIMITS`' size) into segments: each segment holds the parameters of one group
that share an array type and dtype as views into one flat buffer, their state arrays
(momenta, moments) as views into one flat buffer per state name, and one flat buffer the
gradients are copied into at each step. The update rule then runs once over the whole
buffers, so a step makes the same few array calls whatever the number of parameters, and
(the rule being elementwise, with the same scalars, in the same order) writes the same
bits as the per-parameter update.

A segment is checked at every step against what it packed, by identity only (no array
call): the same parameters in the same order, each ``param.data`` still its view (of its
shape), each state array still its view. Anything else (``param.data`` rebound by the user,
``load_weights`` or ``to_gpu``, a layer added after ``setup``, a parameter frozen or
without a gradient this step, state loaded or cleared) makes a new segment from the
current values before the update, so nothing is updated through a stale copy.
"""

from __future__ import annotations

import operator
import sys
import weakref
from collections.abc import Callable, Container, Iterable
from itertools import repeat
from typing import Any

from zerograd.backends import backend_of, get_array_module, sum_dtype_of
from zerograd.utils import size_of

from . import state as _st

_data = operator.attrgetter("data")
_grad = operator.attrgetter("grad")
_shape = operator.attrgetter("shape")
_dtype = operator.attrgetter("dtype")
_writeable = operator.attrgetter("flags.writeable")
_is = operator.is_
_is_not = operator.is_not

#: the backends whose arrays are packed (where ``Backend.flatten_into`` is one copy)
PACKED_BACKENDS = frozenset({"numpy", "cupy"})

#: per backend, the largest parameter (in elements) it packs; a larger one takes the
#: per-parameter update. On the CPU, gathering a gradient that has left the cache costs more
#: than the calls packing saves (measured: an MLP 784-1000-1000-10 SGD update took 3.5 ms
#: packed, 2.4 ms with its two weight matrices left out); a GPU's bandwidth makes the
#: gather cheap and its launches dear, so CuPy packs every size
PACK_LIMITS = {"numpy": 1 << 16}


class Segment:
    """Parameters of one group, array type and dtype, as views into flat buffers.

    Made by :meth:`Packer.plan` (which allocates and copies the parameters' values in, and
    may fail); :meth:`fill` then copies their state in and hands the views to the
    parameters and the optimizer's state (nothing there can fail).

    Attributes:
        refs: weak references to the Parameters, in packing order (a segment keeps no
            parameter alive).
        names: the state names the rule uses.
        data: the flat parameter buffer; ``views[i]`` is ``params[i].data``.
        grad: the flat buffer the gradients are copied into at each step (a new one when
            gradients lent by :meth:`lend_grads` still read the old one).
        state: ``{name: flat buffer}``; ``state_views[i]`` is ``params[i]``'s state dict.
        scratch: the rule's flat scratch buffers.
    """

    __slots__ = (
        "refs",
        "names",
        "data",
        "grad",
        "state",
        "scratch",
        "views",
        "shapes",
        "flagged",
        "stored",
        "state_views",
        "lent",
        "lent_any",
    )

    def __init__(self, params: list, names: tuple[str, ...], backend: Any, n_scratch: int) -> None:
        self.refs = [weakref.ref(p) for p in params]
        self.names = names
        self.data = backend.flatten_into([p.data for p in params])  # their values of now
        xp = get_array_module(self.data)
        self.grad = xp.empty_like(self.data)
        self.lent: list | None = None  # the gradient views lend_grads gave, until an update
        self.lent_any = False  # views of ``grad`` were handed out since it was made
        self.state = {n: xp.empty_like(self.data) for n in names}
        self.scratch = [xp.empty_like(self.data) for _ in range(n_scratch)]
        self.views = _views(self.data, params)
        self.shapes = [v.shape for v in self.views]
        self.flagged = hasattr(getattr(self.data, "flags", None), "writeable")
        self.stored: Any = None  # the optimizer's {param: state dict} fill() wrote into
        self.state_views: list[dict] = [{} for _ in params]
        for n, buf in self.state.items():
            for d, v in zip(self.state_views, _views(buf, params)):
                d[n] = v

    def holds(self, params: list, names: tuple[str, ...], stored: Any, n_scratch: int) -> bool:
        """Whether this segment still packs exactly ``params`` as they are now.

        Args:
            params: the parameters to update, in order.
            names: the state names of this step.
            stored: the optimizer's ``{param: state dict}``.
            n_scratch: the scratch buffers this step's rule uses.

        Returns:
            True when every parameter's data and state are still this segment's views,
            of the shapes they were made with.
        """
        if names != self.names or len(params) != len(self.refs) or n_scratch != len(self.scratch):
            return False
        # identity tests over whole lists (map runs them in C: an update asks every step)
        if not all(map(_is, map(_data, params), self.views)):
            return False
        # numpy reshapes a contiguous view in place (``p.data.shape = ...``): the same
        # object, of another shape than its state and the gradients checked against it
        if list(map(_shape, self.views)) != self.shapes:
            return False
        if not all(map(_is, params, [q() for q in self.refs])):
            return False
        # the optimizer's {param: state dict} as fill() left it. Besides fill(), only the
        # optimizer's own code writes there: state() and _store() call Packer.forget(), and
        # the per-parameter update writes the dicts of parameters no segment packed in that
        # update (a segment that lost one is made again, a dropped one forgotten)
        return not names or stored is self.stored

    def takes(self, params: list, grads: list, stored: Any) -> list | None:
        """The gradients' arrays when an update may run on this segment as it stands.

        That is when it still :meth:`holds` ``params`` (with this step's state names and
        scratch count, which the caller compares) and each gradient is an array of the
        buffers' type, dtype and the view's shape, its view still writable: what
        ``Optimizer._validate`` and :meth:`Packer.split` would find, at the cost of one
        pass of attribute reads.

        Args:
            params: the group's parameters that have a gradient, in order.
            grads: their gradients (Variables), in the same order.
            stored: the optimizer's ``{param: state dict}``.

        Returns:
            The gradients' arrays, for :meth:`gather_grads`; None when the update must
            take the checked path.
        """
        if not self.holds(params, self.names, stored, len(self.scratch)):
            return None
        arrays = list(map(_data, grads))
        if list(map(_shape, arrays)) != self.shapes:
            return None
        kind, dtype = type(self.data), self.data.dtype
        if not all(map(_is, map(type, arrays), repeat(kind))):
            return None
        # a dtype is mostly the very object (hashing one is dear: no sets here)
        if not all(map(_is, map(_dtype, arrays), repeat(dtype))) and any(
            a.dtype != dtype for a in arrays
        ):
            return None
        # numpy's views can be made read-only (CuPy's flags have no writeable)
        if self.flagged and not all(map(_writeable, self.views)):
            return None
        return arrays

    def fill(self, params: list, stored: Any) -> None:
        """Copy the parameters' state in, then give them and the optimizer the views.

        Args:
            params: the parameters it was made for (their values are in :attr:`data`).
            stored: the optimizer's ``{param: state dict}``; each parameter's entry becomes
                a dict of its views (zeros where it had no state).
        """
        backend = backend_of(self.data)
        for n, buf in self.state.items():
            arrays = [_st.arrays_for(stored.get(p), p.data, (n,))[n] for p in params]
            backend.flatten_into(arrays, buf)
        for p, v, sv in zip(params, self.views, self.state_views):
            p.data = v
            if sv:  # a dict of its own: what else writes into it is seen by ``holds``
                stored[p] = dict(sv)
        self.stored = stored

    def gather_grads(self, params: list, arrays: list | None = None) -> None:
        """Copy the gradients of ``params`` (those it packs) into :attr:`grad` (one call).

        Nothing is copied when the parameters still hold the views :meth:`lend_grads`
        gave them (averaged in place since, by data-parallel training). ``arrays``: the
        gradients' arrays as :meth:`takes` read them this update (None: read them here).
        """
        if arrays is None:
            arrays = [p.grad.data for p in params]
        lent, self.lent = self.lent, None
        if lent is not None and all(map(_is, arrays, lent)):
            return
        del lent
        self._own_grad()
        backend_of(self.grad).flatten_into(arrays, self.grad)

    def lend_grads(self, params: list, scale: float | None = None) -> Any:
        """Gather the gradients, then give each parameter's gradient its view of them.

        What data-parallel training averages in place: the update that follows reads the
        buffer without gathering again. A buffer whose views are still held (a gradient
        kept from an earlier step) is never written again: a new one takes its place.

        Args:
            params: the parameters it packs, in order, each with a gradient.
            scale: multiply each gradient by it on the way in (one pass over the bytes,
                one call per parameter); None copies them all in one call.

        Returns:
            The flat gradient buffer.
        """
        self.lent = None
        self._own_grad()
        backend = backend_of(self.grad)
        views = _views(self.grad, params)
        if scale is None:
            backend.flatten_into([p.grad.data for p in params], self.grad)
        else:
            for p, v in zip(params, views):
                backend.compute_into("multiply", p.grad.data, scale, out=v)
        for p, v in zip(params, views):
            p.grad.data = v
        self.lent = views
        self.lent_any = True
        return self.grad

    def _own_grad(self) -> None:
        """A gradient buffer no view handed out earlier still reads (a new one if need be)."""
        if not self.lent_any:
            return
        # numpy: a view holds its base, so the buffer's references count the live views
        # (here: the attribute and getrefcount's argument); other types: always a new one
        if backend_of(self.grad).name == "numpy" and sys.getrefcount(self.grad) <= 2:
            return
        self.grad = get_array_module(self.grad).empty_like(self.grad)
        self.lent_any = False


def _views(flat: Any, params: list) -> list:
    """Views of ``flat``, one per parameter, of its shape, one after another."""
    out, at = [], 0
    for p in params:
        size = size_of(p.data)
        out.append(flat[at : at + size].reshape(p.data.shape))
        at += size
    return out


class Packer:
    """An optimizer's segments, made again whenever what they pack changed.

    Parameters whose arrays share memory (one array held by two Parameters, or overlapping
    views of one array) keep the per-parameter update, which leaves them tied; so do those
    sharing memory with a parameter of another group or without a gradient this step.
    """

    def __init__(self) -> None:
        self.segments: dict[tuple, Segment] = {}
        #: False: parameters over the backend's :data:`PACK_LIMITS` are left out. True once
        #: the gradients are lent (data-parallel training): the averaging makes a pass over
        #: every gradient anyway, which is the gather, so packing them all costs nothing more
        self.every_size = False
        #: what :meth:`steady` checks against, made from :attr:`segments` when first asked
        #: (None: not made since they last changed); see :meth:`_lay_out`
        self.layout: list | None = None

    def clear(self) -> None:
        """Forget every segment (the parameters keep their views)."""
        self.segments = {}
        self.layout = None

    def split(
        self, params: list, stored: Any, cohort: Callable[[Any], int] | None = None
    ) -> tuple[dict[tuple, list], list]:
        """The parameters that can be packed, by (array type, dtype, cohort), and the others.

        A parameter whose gradient or state has another array type or dtype takes the
        per-parameter update, which casts its results once (and stores state that fits);
        so does a float16 one, whose step that update computes in float32.

        Args:
            params: parameters with a gradient, all checked by ``Optimizer._validate``.
            stored: the optimizer's ``{param: state dict}``.
            cohort: ``cohort(param)``, an int: parameters whose steps differ by more than
                their arrays (Adam's step counts) are packed apart; None: all in cohort 0.

        Returns:
            ``({(array type, dtype, cohort): [param, ...]}, [param, ...])``.
        """
        packed: dict[tuple, list] = {}
        rest = []
        for p in params:
            data, grad = p.data, p.grad.data
            kind = type(data)
            if type(grad) is not kind or grad.dtype != data.dtype or sum_dtype_of(data) is not None:
                rest.append(p)  # float16 too: its step is computed in float32, rounded once
                continue
            backend = backend_of(data)
            name = backend.name
            if (
                name not in PACKED_BACKENDS
                or (not self.every_size and data.size > PACK_LIMITS.get(name, data.size))
                or not backend.writable(data)
            ):
                rest.append(p)
                continue
            st = stored.get(p)
            if st and any(type(a) is not kind or a.dtype != data.dtype for a in st.values()):
                rest.append(p)
                continue
            c = 0 if cohort is None else cohort(p)
            packed.setdefault((kind, data.dtype, c), []).append(p)
        return packed, rest

    def plan(
        self,
        key: tuple,
        params: list,
        names: tuple[str, ...],
        stored: Any,
        n_scratch: int,
        tied: Container[int] = frozenset(),
    ) -> tuple[Segment | None, bool, list]:
        """The segment for ``params`` under ``key``: the one kept, or a new one (allocated).

        A new segment leaves out the parameters in ``tied`` (arrays sharing memory with
        another parameter's, see :func:`tied_ids`): packing them would untie them (the
        other would keep the old array). A kept segment needs no such check: its views are
        its own buffer's, and a parameter given one of them later stays tied through it.

        Args:
            key: (group index, array type, dtype, cohort).
            params: the parameters, in order.
            names: the rule's state names.
            stored: the optimizer's ``{param: state dict}``.
            n_scratch: how many scratch buffers the rule uses.
            tied: :func:`tied_ids` of all of the optimizer's parameters (every group,
                with a gradient or not): found once for all segments of an update, as
                checking each segment against every parameter took segments x parameters.

        Returns:
            ``(segment or None, new, left out)``; a new segment must be
            :meth:`Segment.fill`-ed before use.
        """
        seg = self.segments.get(key)
        if seg is not None and seg.holds(params, names, stored, n_scratch):
            return seg, False, []
        left = [p for p in params if id(p) in tied] if tied else []
        if left:
            params = [p for p in params if id(p) not in tied]
        if not params:
            return None, False, left
        return Segment(params, names, backend_of(params[0].data), n_scratch), True, left

    def steady(self, grouped: list, stored: Any) -> list | None:
        """The last update's segments, by group, when the next may reuse them as they are.

        Each group's parameters with a gradient must be exactly those its segments pack,
        each in one segment (:meth:`Segment.takes`): a group may hold several (parameters
        of other step counts, array types or dtypes); then the update needs none of its
        per-parameter checks. A group with a parameter no segment packs (too large, tied,
        a gradient of another dtype) takes the checked update.

        Args:
            grouped: the optimizer's ``[(group, params)]``.
            stored: the optimizer's ``{param: state dict}``.

        Returns:
            ``[[(key, segment, its params, their gradients' arrays), ...] per group]`` in
            group order, or None.
        """
        layout = self.layout
        if layout is None or len(layout) != len(grouped):
            layout = self.layout = self._lay_out(grouped)
            if layout is None:
                return None
        out = []
        for (count, parts), (_, ps) in zip(layout, grouped):
            grads = list(map(_grad, ps))
            if all(map(_is_not, grads, repeat(None))):
                members = ps
            else:
                members = [p for p, g in zip(ps, grads) if g is not None]
                grads = [g for g in grads if g is not None]
            if len(members) != count:  # a parameter without a gradient, or one more
                return None
            if len(parts) == 1:  # one segment packs the whole group, in its order
                key, seg, _ = parts[0]
                arrays = seg.takes(members, grads, stored)
                if arrays is None:
                    return None
                out.append([(key, seg, members, arrays)])
                continue
            got = []
            for key, seg, at in parts:
                mine = list(map(members.__getitem__, at))
                arrays = seg.takes(mine, list(map(grads.__getitem__, at)), stored)
                if arrays is None:
                    # the group's order may have changed under segments that still hold:
                    # the next step lays them out again
                    self.layout = None
                    return None
                got.append((key, seg, mine, arrays))
            out.append(got)
        return out

    def _lay_out(self, grouped: list) -> list | None:
        """Where each segment's parameters stand among its group's parameters with a gradient.

        Returns:
            ``[(parameters with a gradient the segments pack, [(key, segment, positions)])
            per group]`` (positions None for a group one segment packs whole, in order), or
            None when a segment packs a parameter without a gradient or one that is gone, or
            a group of several segments has a parameter with a gradient that none packs.
        """
        parts: list[list] = [[] for _ in grouped]
        for key, seg in self.segments.items():
            if key[0] >= len(grouped):
                return None
            parts[key[0]].append((key, seg))
        out = []
        for mine, (_, ps) in zip(parts, grouped):
            if len(mine) == 1:
                out.append((len(mine[0][1].refs), [(*mine[0], None)]))
                continue
            at = {id(p): j for j, p in enumerate([p for p in ps if p.grad is not None])}
            laid, taken = [], set()
            for key, seg in mine:
                where = [at.get(id(q())) for q in seg.refs]
                if None in where:
                    return None
                laid.append((key, seg, where))
                taken.update(where)
            count = sum(len(w) for _, _, w in laid)
            if len(taken) != count:  # one parameter in two segments: each must have its own
                return None
            if count != len(at):
                # a parameter with a gradient that no segment packs: the places count it,
                # so they hold only for this very set of gradients, which takes the checked
                # update; kept, they would be read for a smaller set (past its end)
                return None
            out.append((count, laid))
        return out

    def retain(self, keys: list) -> None:
        """Forget the segments not used by the last update (their buffers go with them)."""
        if len(keys) != len(self.segments):
            self.segments = {k: self.segments[k] for k in keys if k in self.segments}
            self.layout = None

    def forget(self) -> None:
        """Drop every segment: the optimizer wrote a parameter's state dict itself.

        The next update packs the parameters again from their current values and state.
        """
        self.segments = {}
        self.layout = None

    def keep(self, key: tuple, seg: Segment) -> None:
        """Remember ``seg`` (filled) as the segment of ``key``."""
        self.segments[key] = seg
        self.layout = None


def tied_ids(params: Iterable[Any]) -> set[int]:
    """The ids of the Parameters whose arrays share memory with another one's of ``params``.

    One array held by two Parameters, or overlapping views of one array (tied weights):
    :meth:`Packer.plan` leaves them out of its segments. Parameters without data are
    skipped.
    """
    held = [p for p in params if p.data is not None]
    return {id(held[i]) for i in _tied([p.data for p in held])}


def _tied(arrays: list) -> set[int]:
    """Indices of the arrays that share memory with another one of them.

    Arrays are grouped by the array owning their memory (``base``); within a group,
    contiguous arrays whose byte ranges do not meet are apart, anything else is tied.
    """
    groups: dict[int, list[int]] = {}
    for i, a in enumerate(arrays):
        base = getattr(a, "base", None)
        groups.setdefault(id(a if base is None else base), []).append(i)
    tied: set[int] = set()
    for idx in groups.values():
        if len(idx) < 2:
            continue
        spans = [_span(arrays[i]) for i in idx]
        if any(s is None for s in spans):
            tied.update(idx)
            continue
        # by start: one overlaps an earlier one if it starts before the furthest end so
        # far (not only its neighbour's: a long view may cover several), a later one if
        # the next starts before its end
        order = sorted(range(len(idx)), key=lambda k: spans[k])
        reach = None
        for j, k in enumerate(order):
            start, end = spans[k]
            after = j + 1 < len(order) and spans[order[j + 1]][0] < end
            if after or (reach is not None and start < reach):
                tied.add(idx[k])
            reach = end if reach is None else max(reach, end)
    return tied


def _span(a: Any) -> tuple[int, int] | None:
    """The byte range ``[start, end)`` of a C-contiguous array; None when unknown."""
    flags = getattr(a, "flags", None)
    if flags is None or not flags.c_contiguous:
        return None
    face = getattr(a, "__array_interface__", None) or getattr(a, "__cuda_array_interface__", None)
    if face is None:
        return None
    start = face["data"][0]
    return start, start + a.nbytes
