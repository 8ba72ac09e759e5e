"""The two namespaces a :meth:`Function.vjp` runs on: one derivative, two executors.

A built-in function writes its derivative once, as ``vjp(xp, xs, y, gy)``, calling only
names of the namespace ``xp`` (and operators). The backward engine picks ``xp``:

- **first order** (``create_graph=False``, every ordinary ``backward()``): an
  :class:`ArrayOps` of the gradient's backend. ``xs``, ``y`` and ``gy`` are backend
  arrays and every name is the backend's own array API function: no graph, no Variable.
- **higher order** (``create_graph=True``, or a direct call of ``Function.backward``):
  :class:`VariableOps` (shared: :data:`VARIABLE_OPS`). ``xs``, ``y`` and ``gy`` are
  Variables and every name is the differentiable zerograd function of the same meaning,
  so the gradient has a graph.

:data:`NAMES` is that shared vocabulary, written down once; a test checks that both
namespaces answer every name and agree on the values.

The namespace is also the backward walk's *carrier*: it says how the walk holds gradients
(backend arrays, or Variables) through five operations, :data:`CARRIER`, so the walk picks
its mode once, by picking the namespace, and no helper of it asks which mode it is in.
"""

from __future__ import annotations

from typing import Any

from . import functions as F
from .backends import backend_of
from .backends.registry import registry
from .function import Function
from .functions.ops import OPS
from .variable import Variable, as_array

_by_type = registry.by_type
_new = object.__new__
_widening: dict = {}  # (backend, dtype) -> whether 0-d work with a Python float widens it


def _widens_with_numbers(backend: Any, dtype: Any) -> bool:
    """Whether ``backend`` computes a 0-d array of ``dtype`` times ``1.0`` in a wider dtype.

    Value-based casting (numpy 1.x) does; NEP 50 (numpy 2) and the array API do not.
    Asked of the library itself, once per dtype.
    """
    key = (backend, dtype)
    widens = _widening.get(key)
    if widens is None:
        one = backend.asarray(1, dtype=dtype)
        widens = _widening[key] = backend.asarray(one * 1.0).dtype != dtype
    return widens


_OTHERS = {
    "matrix_transpose": "swap the last two axes",
    "permute_dims": "permute_dims(x, axes): reorder the axes",
    "apply": "apply(fn, *xs): run the Function instance fn (its forward on arrays, or fn(*xs))",
}
# the ops a vjp may call (each op's definition says so: ``in_vjp``), then the others
NAMES: dict[str, str] = {
    **{name: spec.summary for name, spec in OPS.items() if spec.in_vjp},
    **_OTHERS,
}
"""Every name a ``vjp`` may call on its namespace, with what it computes."""

CARRIER: dict[str, str] = {
    "unwrap": "unwrap(v): the gradient Variable v as the walk carries it",
    "wrap": "wrap(g): a carried gradient as the Variable a .grad holds",
    "carry": "carry(g, like): what a derivative returned (array, Variable, scalar) as carried",
    "copy": "copy(g): a carried gradient with an object and memory of its own",
    "held": "held(x): the gradient x holds from before the walk, as carried",
}
"""The operations the backward walk asks of its carrier (not for use in a ``vjp``)."""

# the names both namespaces take as they are, from the array module / zerograd.functions
# (ArrayOps takes broadcast_to and sum_to from the Backend, whose versions check shapes,
# and sum, which adds float16 in float32)
_FROM_BACKEND = ("broadcast_to", "sum_to", "sum")
_SAME_NAME = tuple(n for n in NAMES if n not in _OTHERS and n not in _FROM_BACKEND)


def _missing(kind: str, name: str) -> AttributeError:
    return AttributeError(
        f"{kind} has no {name!r}: a vjp may call only the names of zerograd.namespaces.NAMES "
        f"({', '.join(NAMES)}) and operators; for anything else, write a Function and call "
        f"xp.apply(YourFunction(), ...)."
    )


class _Carrier:
    """What both namespaces share: reading a held gradient, names made of other names."""

    permute_dims: Any  # each namespace's own

    def _take(self, same: Any, permute_dims: Any, shapes: Any) -> None:
        """Bind :data:`NAMES`: same-named ones from ``same``; sum and the rest from ``shapes``."""
        for name in _SAME_NAME:
            setattr(self, name, getattr(same, name))
        self.permute_dims = permute_dims
        self.broadcast_to = shapes.broadcast_to
        self.sum_to = shapes.sum_to
        self.sum = shapes.sum

    def matrix_transpose(self, x: Any) -> Any:
        """Swap the last two axes of ``x`` (an array or a Variable with at least two).

        Args:
            x: An array (first order) or a Variable (higher order).

        Returns:
            The same kind of value (a view where the backend makes one).
        """
        n = x.ndim
        return self.permute_dims(x, (*range(n - 2), n - 1, n - 2))

    def unwrap(self, v: Variable) -> Any:
        """Return the gradient Variable ``v`` as this carrier carries gradients."""
        raise NotImplementedError

    def held(self, x: Variable) -> Any:
        """Return the gradient ``x`` holds from before the walk, as this carrier carries it.

        Raises:
            TypeError: ``x.grad`` is not a Variable (assigned by hand).
            ValueError: ``x.grad`` has another shape than ``x`` (adding the new gradient
                onto it would broadcast, silently, to a gradient of the wrong shape).
        """
        g = x.grad
        if not isinstance(g, Variable):
            raise TypeError(
                f"backward: a variable of shape {getattr(x.data, 'shape', None)} holds a grad "
                f"of type {type(g).__module__}.{type(g).__qualname__}, not a Variable; a "
                f"gradient must be a Variable or None (assign Variable(array), or cleargrad())."
            )
        want = getattr(x.data, "shape", None)
        have = getattr(g.data, "shape", None)
        if want is not None and have is not None and tuple(have) != tuple(want):
            who = f"the variable {x.name!r}" if x.name else "a variable"
            raise ValueError(
                f"backward: {who} of shape {tuple(want)} holds a grad of shape {tuple(have)}; "
                f"the new gradient is added onto the one held, so it must have the variable's "
                f"shape. Assign one of shape {tuple(want)}, or call cleargrad() first."
            )
        return self.unwrap(g)


class ArrayOps(_Carrier):
    """First-order namespace: backend arrays in, backend arrays out, nothing recorded.

    Args:
        backend: The :class:`~zerograd.backends.Backend` whose arrays it computes on.

    Attributes:
        graph: False: results are plain arrays.
        backend: The backend.
    """

    graph = False

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self._take(backend.xp, backend.xp.permute_dims, backend)

    @staticmethod
    def apply(fn: Any, *xs: Any) -> Any:
        """Return ``fn.forward(*xs)``: the Function's computation on plain arrays.

        Args:
            fn: A Function instance.
            *xs: Its inputs' arrays.

        Returns:
            Its forward's result.
        """
        return fn.forward(*xs)

    # -- the carrier: gradients travel as backend arrays --------------------------------
    @staticmethod
    def unwrap(v: Variable) -> Any:
        """Return the array of the gradient Variable ``v``."""
        return v.data

    @staticmethod
    def wrap(g: Any) -> Variable:
        """Return a Variable around the array ``g``, made with no graph (as a no-grad result)."""
        v = _new(Variable)
        v.data = g
        v.name = v.grad = v.creator = None
        v.generation = -1
        return v

    @staticmethod
    def carry(g: Any, like: Any) -> Any:
        """Return a derivative's result ``g`` as a backend array.

        A Variable gives its array. A library scalar (what numpy returns for 0-d results)
        becomes a 0-d array of ``like``'s backend, of the scalar's own dtype, as the
        Variable engine computes it; except where the library widens 0-d floats computed
        with Python numbers (numpy 1.x: float32 with ``2.0`` gives float64), which the
        Variable engine (whose constants follow the data's dtype) does not: such a scalar
        is brought back to ``like``'s float precision.
        """
        if type(g) in _by_type:
            return g
        if isinstance(g, Variable):
            return g.data
        backend = _by_type.get(type(like))
        if backend is None:  # like is a library scalar itself (the book's Newton loop)
            return as_array(g)
        g = backend.asarray(g)
        kind = backend.dtype_kind
        if (
            g.dtype != like.dtype
            and kind(g.dtype) == kind(like.dtype) == "f"
            and _widens_with_numbers(backend, like.dtype)
        ):
            g = backend.astype(g, like.dtype)
        return g

    @staticmethod
    def copy(g: Any) -> Any:
        """Return a copy of the array ``g``: a new array, with memory of its own."""
        return backend_of(g).astype(g, g.dtype)  # astype copies

    def __getattr__(self, name: str) -> Any:
        raise _missing(f"ArrayOps ({self.backend.name})", name)

    def __repr__(self) -> str:
        return f"<ArrayOps {self.backend.name}>"


class VariableOps(_Carrier):
    """Higher-order namespace: Variables in, Variables out, every step recorded.

    Attributes:
        graph: True: results are Variables with a creator.
    """

    graph = True

    def __init__(self) -> None:
        self._take(F, F.transpose, F)

    @staticmethod
    def apply(fn: Any, *xs: Any) -> Any:
        """Return ``fn(*xs)``: the Function applied to Variables, and recorded."""
        return fn(*xs)

    # -- the carrier: gradients travel as Variables, so they can be differentiated -------
    @staticmethod
    def unwrap(v: Variable) -> Variable:
        """Return the gradient Variable ``v`` itself."""
        return v

    @staticmethod
    def wrap(g: Variable) -> Variable:
        """Return the gradient Variable ``g`` itself."""
        return g

    @staticmethod
    def carry(g: Any, like: Any) -> Variable:
        """Return a derivative's result ``g`` as a Variable.

        An array or a scalar is wrapped, on ``like``'s backend and float dtype.
        """
        if isinstance(g, Variable):
            return g
        return Variable(as_array(g, like=like))

    @staticmethod
    def copy(g: Variable) -> Variable:
        """Return ``g`` copied by a recorded identity: its own object and memory, same graph."""
        return _Copy()(g)

    def __getattr__(self, name: str) -> Any:
        raise _missing("VariableOps", name)

    def __repr__(self) -> str:
        return "<VariableOps>"


class _Copy(Function):
    """The identity into a new array: gives a gradient its own object and its own memory."""

    vjp_reads_inputs = False
    vjp_reads_outputs = False

    def forward(self, x: Any) -> Any:
        return ArrayOps.copy(x)

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        return gy


class _OpsByType(dict):
    """Array type -> its backend's ArrayOps, made on first use (a hit is a plain dict get)."""

    def __missing__(self, array_type: type) -> ArrayOps:
        ops = self[array_type] = ArrayOps(registry.resolve_type(array_type))
        return ops


array_ops_by_type: dict[type, ArrayOps] = _OpsByType()
"""Array type -> :class:`ArrayOps` of its backend (the engine's hot-path lookup); emptied
with the registry's own per-type caches when backends change."""
registry.type_caches.append(array_ops_by_type)
VARIABLE_OPS = VariableOps()
"""The shared :class:`VariableOps` (it holds no state): the higher-order namespace."""
