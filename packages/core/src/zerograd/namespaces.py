"""The two namespaces a :meth:`Function.vjp` runs on: one derivative, two executors.

A built-in function writes its derivative once, as ``vjp(xp, xs, y, gy)``, calling only
names of the namespace ``xp`` (and operators). The backward engine picks ``xp``:

- **first order** (``create_graph=False``, every ordinary ``backward()``): an
  :class:`ArrayOps` of the gradient's backend. ``xs``, ``y`` and ``gy`` are backend
  arrays and every name is the backend's own array API function: no graph, no Variable.
- **higher order** (``create_graph=True``, or a direct call of ``Function.backward``):
  :class:`VariableOps` (shared, from :func:`variable_ops`). ``xs``, ``y`` and ``gy`` are
  Variables and every name is the differentiable zerograd function of the same meaning,
  so the gradient has a graph.

:data:`NAMES` is that shared vocabulary, written down once; a test checks that both
namespaces answer every name and agree on the values.
"""

from __future__ import annotations

from typing import Any

from .backends.registry import registry

NAMES: dict[str, str] = {
    # array API standard names: the backend's function / zerograd's differentiable one
    "exp": "e to the power of x, elementwise",
    "log": "natural logarithm, elementwise",
    "sin": "sine, elementwise",
    "cos": "cosine, elementwise",
    "tanh": "hyperbolic tangent, elementwise",
    "sqrt": "square root, elementwise",
    "matmul": "matrix product with numpy's batching rules",
    "matrix_transpose": "swap the last two axes",
    "permute_dims": "permute_dims(x, axes): reorder the axes",
    "reshape": "reshape(x, shape)",
    "sum": "sum(x, axis=None, keepdims=False)",
    "broadcast_to": "broadcast_to(x, shape)",
    # not in the standard: Backend methods / zerograd functions
    "sum_to": "sum_to(x, shape): sum x down to shape, undoing broadcasting",
    "apply": "apply(fn, *xs): run the Function instance fn (its forward on arrays, or fn(*xs))",
}
"""Every name a ``vjp`` may call on its namespace, with what it computes."""

# the names both namespaces take as they are, from the array module / zerograd.functions
_SAME_NAME = ("exp", "log", "sin", "cos", "tanh", "sqrt", "matmul", "reshape", "sum")


def _missing(kind: str, name: str) -> AttributeError:
    return AttributeError(
        f"{kind} has no {name!r}: a vjp may call only the names of zerograd.namespaces.NAMES "
        f"({', '.join(NAMES)}) and operators; for anything else, write a Function and call "
        f"xp.apply(YourFunction(), ...)."
    )


class ArrayOps:
    """First-order namespace: backend arrays in, backend arrays out, nothing recorded.

    Args:
        backend: The :class:`~zerograd.backends.Backend` whose arrays it computes on.

    Attributes:
        graph: False: results are plain arrays.
        backend: The backend.
    """

    graph = False

    def __init__(self, backend: Any) -> None:
        xp = backend.xp
        self.backend = backend
        for name in _SAME_NAME:
            setattr(self, name, getattr(xp, name))
        self.permute_dims = xp.permute_dims
        self.broadcast_to = backend.broadcast_to
        self.sum_to = backend.sum_to

    def matrix_transpose(self, x: Any) -> Any:
        """Swap the last two axes of ``x``.

        Args:
            x: An array with at least two axes.

        Returns:
            An array (a view where the backend makes one).
        """
        n = x.ndim
        return self.permute_dims(x, (*range(n - 2), n - 1, n - 2))

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

    def __getattr__(self, name: str) -> Any:
        raise _missing(f"ArrayOps ({self.backend.name})", name)

    def __repr__(self) -> str:
        return f"<ArrayOps {self.backend.name}>"


class VariableOps:
    """Higher-order namespace: Variables in, Variables out, every step recorded.

    Attributes:
        graph: True: results are Variables with a creator.
    """

    graph = True

    def __init__(self) -> None:
        from . import functions as F

        for name in _SAME_NAME:
            setattr(self, name, getattr(F, name))
        self.permute_dims = F.transpose
        self.broadcast_to = F.broadcast_to
        self.sum_to = F.sum_to

    @staticmethod
    def matrix_transpose(x: Any) -> Any:
        """Swap the last two axes of ``x``.

        Args:
            x: A Variable with at least two axes.

        Returns:
            A Variable.
        """
        from .functions import transpose

        n = x.ndim
        return transpose(x, (*range(n - 2), n - 1, n - 2))

    @staticmethod
    def apply(fn: Any, *xs: Any) -> Any:
        """Return ``fn(*xs)``: the Function applied and recorded.

        Args:
            fn: A Function instance.
            *xs: Its inputs (Variables).

        Returns:
            Its output Variable(s).
        """
        return fn(*xs)

    def __getattr__(self, name: str) -> Any:
        raise _missing("VariableOps", name)

    def __repr__(self) -> str:
        return "<VariableOps>"


class _OpsByType(dict):
    """Array type -> its backend's ArrayOps, made on first use (a hit is a plain dict get)."""

    def __missing__(self, array_type: type) -> ArrayOps:
        ops = self[array_type] = ArrayOps(registry.resolve_type(array_type))
        return ops


array_ops_by_type: dict[type, ArrayOps] = _OpsByType()
"""Array type -> :class:`ArrayOps` of its backend (the engine's hot-path lookup); emptied
with the registry's own per-type caches when backends change."""
registry.type_caches.append(array_ops_by_type)
_variable_ops: list[VariableOps] = []


def array_ops(array_type: type) -> ArrayOps:
    """Return the (cached) :class:`ArrayOps` for arrays of ``array_type``.

    Args:
        array_type: The type of a backend array.

    Returns:
        Its backend's namespace.
    """
    return array_ops_by_type[array_type]


def variable_ops() -> VariableOps:
    """Return the shared :class:`VariableOps`.

    Returns:
        The higher-order namespace.
    """
    if not _variable_ops:
        _variable_ops.append(VariableOps())
    return _variable_ops[0]
