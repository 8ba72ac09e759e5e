"""The two array namespaces an update rule is written against, and the in-place path's checks.

Each optimizer writes its update once (``Optimizer._rule``) as calls such as
``u.multiply(a, b, out=s)`` on a namespace ``u`` of the five standard functions of
:data:`~zerograd.backends.contract.IN_PLACE_OPS`, and uses what each call returns:

- :class:`IntoArrays` writes each result into ``out`` as ``Backend.compute_into`` does and
  returns ``out``: the update is then written into the parameter, its state and a few
  scratch buffers shared by all parameters (allocated before anything is written, reused
  on every later step). :meth:`Optimizer.update` takes this path for arrays their backend
  can write in place (``Backend.writable``: numpy, CuPy, PyTorch) once everything that can
  fail has been checked: numpy's and CuPy's ``compute_into`` are ufuncs with ``out=``,
  which, on operands of one shape and dtype that are writable, can fail only for lack of
  memory, which they do not allocate.
- :data:`NEW_ARRAYS` ignores ``out`` and returns a new array (the operator, ``xp.sqrt``):
  for arrays that cannot change in place (JAX) and for mixed dtypes (a float64 gradient
  of a float32 parameter), whose results are cast to the parameter's dtype at the end,
  and for float16 parameters, whose step is computed in float32 and rounded once.

Both apply the same operations in the same order, so they give the same bits.
"""

from __future__ import annotations

from typing import Any

from zerograd.backends import BackendPluginError, backend_of, device_of, get_array_module
from zerograd.backends.names import BY_HAND, origin
from zerograd.backends.registry import registry
from zerograd.utils import size_of


class IntoArrays:
    """Each operation written into ``out`` (an array of the result's shape and dtype).

    ``u.add(x1, x2, out=o)`` (``subtract``, ``multiply``, ``divide``; ``u.sqrt(x, out=o)``)
    writes the result into ``o`` as the backend's ``compute_into`` does and returns ``o``.
    One instance per backend: :meth:`of`.

    Args:
        backend: the arrays' backend (its ``into_function`` of each op).
    """

    _made: dict[int, tuple[Any, IntoArrays]] = {}  # id(backend) -> (backend, namespace)

    def __init__(self, backend: Any, like: Any = None) -> None:
        # plain functions in the instance's dict: a call costs no bound-method object
        self.add = backend.into_function("add")
        self.subtract = backend.into_function("subtract")
        self.multiply = backend.into_function("multiply")
        self.divide = backend.into_function("divide")
        self.sqrt = backend.into_function("sqrt")
        self._check(backend, like)

    def _check(self, backend: Any, like: Any) -> None:
        """Write each op once into a small array and read it back.

        A plugin whose ``compute_into`` returned its result instead of writing it would
        otherwise leave every parameter as it was, silently.
        """
        xp = backend.xp
        device = device_of(like) if like is not None else None

        def arr(values: list) -> Any:
            return xp.asarray(values, dtype=xp.float32, device=device)

        x1, x2 = arr([1.5, 4.0]), arr([0.5, 2.0])
        cases = [
            ("add", "x1, x2", lambda out: self.add(x1, x2, out=out), [2.0, 6.0]),
            ("subtract", "x1, x2", lambda out: self.subtract(x1, x2, out=out), [1.0, 2.0]),
            ("multiply", "x1, 2.0", lambda out: self.multiply(x1, 2.0, out=out), [3.0, 8.0]),
            ("divide", "x1, x2", lambda out: self.divide(x1, x2, out=out), [3.0, 2.0]),
            ("sqrt", "x", lambda out: self.sqrt(arr([4.0, 0.25]), out=out), [2.0, 0.5]),
            ("add", "out, x2", lambda out: self.add(out, x2, out=out), [1.5, 4.0]),
        ]
        for op, args, write, expected in cases:
            out = arr([1.0, 2.0]) if args.startswith("out") else arr([0.0, 0.0])
            try:
                returned = write(out)
                got = [float(v) for v in backend.to_numpy(out).tolist()]
            except Exception as exc:  # noqa: BLE001 - reported with the plugin's name
                problem = f"raised {type(exc).__name__}: {exc}"
            else:
                if got == expected and returned is out:
                    continue
                problem = (
                    f"left out as {got} where {expected} belongs: it must write the result into out"
                    if got != expected
                    else "wrote out but into_function's function did not return out"
                )
            plugin, dist = registry.sources.get(backend.name, (backend.name, BY_HAND))
            raise BackendPluginError(
                f"zerograd-nn: backend {backend.name!r} (plugin {plugin!r}, {origin(dist)}): "
                f"compute_into({op!r}, {args}, out=out) {problem}. Nothing was updated. Fix the "
                f"plugin (zerograd.testing.conformance checks it), or have writable() answer "
                f"False, so that the optimizers make new arrays."
            )

    @classmethod
    def of(cls, backend: Any, like: Any = None) -> IntoArrays:
        """The namespace writing into arrays of ``backend`` (made once per backend).

        Made, it has checked once that the backend's ``into_function`` functions write
        into ``out`` and return it.

        Args:
            backend: a zerograd backend.
            like: an array of ``backend`` whose device the check's arrays are made on.

        Returns:
            Its namespace.

        Raises:
            BackendPluginError: the backend does not write its results into ``out``.
        """
        made = cls._made.get(id(backend))
        if made is None or made[0] is not backend:
            made = cls._made[id(backend)] = (backend, cls(backend, like))
        return made[1]


class NewArrays:
    """Each operation as a new array; ``out`` is ignored (it may be None)."""

    __slots__ = ()

    def add(self, x1: Any, x2: Any, *, out: Any = None) -> Any:
        """``x1 + x2`` as a new array."""
        return x1 + x2

    def subtract(self, x1: Any, x2: Any, *, out: Any = None) -> Any:
        """``x1 - x2`` as a new array."""
        return x1 - x2

    def multiply(self, x1: Any, x2: Any, *, out: Any = None) -> Any:
        """``x1 * x2`` as a new array."""
        return x1 * x2

    def divide(self, x1: Any, x2: Any, *, out: Any = None) -> Any:
        """``x1 / x2`` as a new array."""
        return x1 / x2

    def sqrt(self, x: Any, *, out: Any = None) -> Any:
        """The square root of ``x`` as a new array."""
        return get_array_module(x).sqrt(x)


NEW_ARRAYS = NewArrays()


def fits(data: Any, grad: Any, state: dict[str, Any], backend: Any = None) -> bool:
    """Whether the in-place path may update ``data`` from ``grad`` and ``state``.

    Everything must be of one array type and dtype (mixed dtypes take the general path,
    whose results are cast once), and the parameter and its state writable in place.

    Args:
        data: the parameter's array.
        grad: its gradient's array.
        state: its state arrays by name.
        backend: ``data``'s backend (looked up when None).

    Returns:
        True when the in-place path applies.
    """
    if type(grad) is not type(data) or grad.dtype != data.dtype:
        return False
    writable = (backend or backend_of(data)).writable
    if not writable(data):
        return False
    for a in state.values():
        if type(a) is not type(data) or a.dtype != data.dtype or not writable(a):
            return False
    return True


class Scratch:
    """Scratch space for the in-place steps, shared by all parameters of an optimizer.

    Parameters are committed one after another, so a few flat buffers as large as the
    largest parameter (per array type, dtype and device) serve them all: the extra memory
    is that of the largest parameter, not of the model. Buffers are made while planning,
    before anything is written, and kept for later steps.
    """

    def __init__(self) -> None:
        self._flat: dict[tuple, list[Any]] = {}  # (type, dtype, device) -> flat buffers
        self._views: dict[tuple, list[Any]] = {}  # ... + (shape, n) -> views of them

    def get(self, data: Any, n: int) -> list[Any]:
        """``n`` arrays of ``data``'s shape, dtype and device (views of the kept buffers).

        Args:
            data: the array to match.
            n: how many arrays.

        Returns:
            ``n`` scratch arrays (their contents are undefined).
        """
        if n == 0:
            return []
        device = getattr(data, "device", None)
        if not isinstance(device, (str, type(None))):
            device = str(device)  # a device object (cupy): its name is hashable
        key = (type(data), data.dtype, device)
        views = self._views.get((*key, data.shape, n))
        if views is not None:
            return views
        size = size_of(data)
        xp = get_array_module(data)
        bufs = self._flat.get(key)  # flat: shape[0] is the size
        if bufs is None or len(bufs) < n or bufs[0].shape[0] < size:
            like = bufs[0] if bufs and bufs[0].shape[0] >= size else xp.reshape(data, (-1,))
            count = max(n, len(bufs or ()))
            bufs = self._flat[key] = [xp.empty_like(like) for _ in range(count)]
            self._views = {k: v for k, v in self._views.items() if k[:3] != key}
        views = self._views[(*key, data.shape, n)] = [
            xp.reshape(b[:size], data.shape) for b in bufs[:n]
        ]
        return views
