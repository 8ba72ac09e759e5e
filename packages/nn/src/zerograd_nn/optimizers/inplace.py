"""The fast commit of an update: in-place arithmetic into arrays checked beforehand.

:meth:`Optimizer.update` first checks everything that can fail, then writes. For array
types that change in place (numpy, cupy) the write is the optimizer's arithmetic itself,
done with the array module's ufuncs and ``out=`` into the parameter, its state and a few
scratch buffers shared by all parameters (allocated before anything is written, reused on
every later step). Once the operands are known to have the same shape and dtype and to be
writable, such a ufunc can fail only for lack of memory, which it does not allocate.
Array types that cannot change in place (JAX) take the other path: new arrays, assigned
at the end.
"""

from __future__ import annotations

from typing import Any

from zerograd.backends import get_array_module

_IN_PLACE: dict[type, bool] = {}  # array type -> whether `+=` and ufunc `out=` write into it


def writes_in_place(a: Any) -> bool:
    """Whether ``a``'s type changes in place under ``+=`` and ufuncs with ``out=``.

    Probed once per type on an empty view of ``a`` (nothing is written).

    Args:
        a: an array.

    Returns:
        True for types such as numpy and cupy arrays.
    """
    t = type(a)
    known = _IN_PLACE.get(t)
    if known is not None:
        return known
    try:
        empty = a.reshape(-1)[:0]
        same = empty
        same += empty
        out = get_array_module(a).multiply(empty, empty, out=empty)
        known = same is empty and out is empty
    except Exception:  # noqa: BLE001 - any failure of the probe means "not in place"
        known = False
    _IN_PLACE[t] = known
    return known


def _writable(a: Any) -> bool:
    flags = getattr(a, "flags", None)
    return flags is None or getattr(flags, "writeable", True) is not False


def fits(data: Any, grad: Any, state: dict[str, Any]) -> bool:
    """Whether the in-place path may update ``data`` from ``grad`` and ``state``.

    Everything must be of one array type and dtype (mixed dtypes take the general path,
    whose results are cast once), and the parameter and its state writable.

    Args:
        data: the parameter's array.
        grad: its gradient's array.
        state: its state arrays by name.

    Returns:
        True when the in-place path applies.
    """
    if not writes_in_place(data) or type(grad) is not type(data) or grad.dtype != data.dtype:
        return False
    if not _writable(data):
        return False
    for a in state.values():
        if type(a) is not type(data) or a.dtype != data.dtype or not _writable(a):
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
        size = data.size
        bufs = self._flat.get(key)
        if bufs is None or len(bufs) < n or bufs[0].size < size:
            like = bufs[0] if bufs and bufs[0].size >= size else data.reshape(-1)
            count = max(n, len(bufs or ()))
            xp = get_array_module(data)
            bufs = self._flat[key] = [xp.empty_like(like) for _ in range(count)]
            self._views = {k: v for k, v in self._views.items() if k[:3] != key}
        views = self._views[(*key, data.shape, n)] = [
            b[:size].reshape(data.shape) for b in bufs[:n]
        ]
        return views
