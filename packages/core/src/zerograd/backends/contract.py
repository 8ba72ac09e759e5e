"""The backend contract as data: what zerograd and zerograd-nn use of a backend.

The conformance suite (:mod:`zerograd.testing.conformance`) checks a plugin against these
lists, and a core test checks that the sources of core and nn call nothing on ``xp``
outside :data:`XP_NAMES`, so the contract cannot grow silently.
``docs/backend-plugins.md`` shows the same lists as tables.
"""

from __future__ import annotations

XP_NAMES: tuple[str, ...] = (
    # creation
    "asarray", "zeros", "ones", "full", "arange", "zeros_like", "ones_like", "empty_like",
    # dtypes
    "astype", "isdtype", "result_type", "finfo", "iinfo", "float32", "float64", "int8", "int64",
    # elementwise
    "exp", "log", "sin", "cos", "tanh", "sqrt", "sign", "clip", "maximum", "where",
    "isfinite",
    # reductions and searching
    "sum", "mean", "max", "min", "argmax", "all", "count_nonzero",
    # manipulation and indexing
    "reshape", "permute_dims", "expand_dims", "broadcast_to", "concat", "stack", "flip", "take",
    # linear algebra
    "matmul",
)  # fmt: skip
"""Array API standard (2024.12) names core and nn call on ``xp``."""

XP_LINALG_NAMES: tuple[str, ...] = ("qr", "diagonal")
"""Names of the standard's optional ``linalg`` extension (only the Orthogonal initializer)."""

REQUIRED_METHODS: tuple[str, ...] = ("owns", "load_module", "to_numpy", "from_numpy")
"""``Backend`` methods every plugin must implement."""

NN_REQUIRED_METHODS: tuple[str, ...] = ("randn", "rand", "permutation")
"""``Backend`` methods zerograd-nn needs (random numbers: the standard has none)."""

OPTIONAL_METHODS: tuple[str, ...] = (
    "seed", "random_state", "set_random_state", "is_available", "unavailable_reason",
    "version", "asarray", "astype", "resolve_dtype", "dtype_kind", "getitem", "scatter_add",
    "broadcast_to", "sum_to", "sum", "sum_dtype", "assign", "writable", "compute_into",
    "into_function", "read_only", "flatten_into", "fuse",
)  # fmt: skip
"""``Backend`` methods with a default (written with standard calls where one can be)."""

IN_PLACE_OPS: tuple[str, ...] = ("add", "subtract", "multiply", "divide", "sqrt")
"""The standard functions ``Backend.compute_into`` writes in place (zerograd-nn's optimizers)."""
