"""The fast commit of an update: in-place arithmetic into arrays checked beforehand.

:meth:`Optimizer.update` first checks everything that can fail, then writes. For arrays
their backend can write in place (``Backend.writable``: numpy, CuPy, PyTorch) the write is
the optimizer's arithmetic itself, done with ``Backend.compute_into`` into the parameter,
its state and a few scratch buffers shared by all parameters (allocated before anything is
written, reused on every later step). numpy's and CuPy's ``compute_into`` are ufuncs with
``out=``: once the operands are known to have the same shape and dtype and to be
writable, such a ufunc can fail only for lack of memory, which it does not allocate.
Arrays that cannot change in place (JAX) take the other path: new arrays, assigned at the
end.
"""

from __future__ import annotations

from typing import Any

from zerograd.backends import backend_of, get_array_module
from zerograd.utils import size_of


def fits(data: Any, grad: Any, state: dict[str, Any]) -> bool:
    """Whether the in-place path may update ``data`` from ``grad`` and ``state``.

    Everything must be of one array type and dtype (mixed dtypes take the general path,
    whose results are cast once), and the parameter and its state writable in place.

    Args:
        data: the parameter's array.
        grad: its gradient's array.
        state: its state arrays by name.

    Returns:
        True when the in-place path applies.
    """
    if type(grad) is not type(data) or grad.dtype != data.dtype:
        return False
    writable = backend_of(data).writable
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
