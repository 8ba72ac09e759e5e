"""How the standard layers set themselves up.

Checked sizes and settings, weights drawn on the input's backend, a lazy first call undone
if it fails, inputs checked by layout.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from zerograd import Parameter, Variable
from zerograd.backends import Backend, backend_of, get_backend
from zerograd.checks import flag, positive_int
from zerograd.utils import data_of

from .. import initializers as _init
from ..functional.arrays import array_arg
from .argument_order import check_nobias_is_no_width
from .base import Layer


class InputSize:
    """A layer's input size (``in_size``, ``in_channels``), read from its ``W`` once it exists.

    Until ``W`` has data it is the value set (the constructor's argument, or None until a
    lazy first call sets it); after, it is ``W.shape[axis]``, however ``W`` got its data:
    sized by a call, loaded from a weight file or a state dict, or assigned by the user.

    Args:
        axis: the axis of ``W`` that counts the inputs.
    """

    def __init__(self, axis: int) -> None:
        self.axis = axis

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.key = name, f"_{name}"

    def __get__(self, layer: Any, owner: type | None = None) -> Any:
        if layer is None:
            return self
        d = layer.__dict__
        w = d.get("W")
        data = None if w is None else w.data
        if data is not None and data.ndim > self.axis:
            return data.shape[self.axis]
        return d.get(self.key, d.get(self.name))  # (a layer pickled before: its own attribute)

    def __set__(self, layer: Any, value: Any) -> None:
        layer.__dict__[self.key] = value


def backend_like(like: Any) -> Backend:
    """The backend of ``like`` (a Variable or an array), the default one for ``None``."""
    if like is None:
        return get_backend()
    return backend_of(data_of(like))


def randn(backend: Backend, shape: tuple, dtype: Any, scale: float) -> Any:
    """Standard-normal weights of ``dtype`` scaled by ``scale`` (kept in ``dtype``)."""
    w = backend.randn(*shape)
    return backend.astype(w, dtype) * scale


def bias_param(layer: Layer, value: Any, size: int, dtype: Any) -> Parameter:
    """The bias Parameter: zeros (DeZero's) or from ``initial_bias``."""
    if value is None:
        return Parameter(get_backend().xp.zeros(size, dtype=dtype), "b")
    name = type(layer).__name__
    return Parameter(_init.generate(value, (size,), dtype, None, name, "initial_bias"), "b")


sizing = threading.RLock()
"""Held by a layer's first call while it sizes its parameters and runs: threads calling an
unsized layer at once size it once, as calls one after the other do (each would draw a
weight of its own, and compute with one the layer no longer keeps). A first call checks
again, holding it, whether the layer is still unsized."""


@contextmanager
def undone_on_error(
    layer: Layer, names: tuple[str, ...], params: tuple[Any, ...]
) -> Iterator[None]:
    """Restore ``layer``'s attributes ``names`` and the data of ``params`` if the block raises.

    Wraps a lazy first call (sizing, then the forward pass): a call that fails leaves the
    layer unsized, so a later call with a correct input sizes it afresh.
    """
    attrs = {n: getattr(layer, n) for n in names}
    saved = [(p, p.data) for p in params if p is not None]
    try:
        yield
    except BaseException:
        for n, v in attrs.items():
            setattr(layer, n, v)
        for p, data in saved:
            p.data = data
        raise


def sized_call(
    layer: Layer,
    x: Any,
    size: str,
    axis: int,
    where: str,
    init: Callable[[Any], None],
    apply: Callable[[Any], Variable],
) -> Variable:
    """``apply(x)``, first sizing ``layer`` from ``x`` if its ``W`` has no data yet.

    Sizing sets the attribute ``size`` to ``x.shape[axis]`` (``where`` names that axis in
    errors), draws ``W`` with ``init(x)`` (on ``x``'s backend) and moves ``b`` there, then
    both to the backend ``layer.to()`` named, if any (:func:`place`); a first call that
    fails, in sizing or in ``apply``, is undone (:func:`undone_on_error`). A first call
    holds :data:`sizing`.
    """
    if layer.W.data is not None:
        return apply(x)
    with sizing:
        if layer.W.data is not None:  # sized meanwhile, by another thread's first call
            return apply(x)
        with undone_on_error(layer, (size,), (layer.W, layer.b)):
            setattr(layer, size, size_arg(layer, f"{size} ({where})", x.shape[axis]))
            init(x)
            follow(layer.b, layer.W.data)
            place(layer, (layer.W, layer.b))
            return apply(x)


def size_arg(layer: Layer, name: str, v: Any, optional: bool = False) -> int | None:
    """Constructor argument ``name`` checked as a positive int (None allowed if ``optional``)."""
    if v is None and optional:
        return None
    return positive_int(type(layer).__name__, name, v)


def check_settings(layer: Layer, nobias: Any, dtype: Any, sizes: tuple) -> None:
    """Check a weighted layer's ``nobias`` (a bool) and ``dtype`` (a floating-point dtype).

    ``sizes`` are the positional values before ``nobias``, for the message that an int
    ``nobias`` gets (see :func:`~.argument_order.check_nobias_is_no_width`).
    """
    check_nobias_is_no_width(layer, nobias, sizes)
    name = type(layer).__name__
    flag(name, "nobias", nobias)
    backend = get_backend()
    try:
        kind = backend.dtype_kind(backend.xp.zeros(0, dtype=dtype).dtype)
    except (TypeError, ValueError):
        kind = None
    if kind != "f":
        raise TypeError(
            f"{name}: dtype must be a floating-point dtype such as 'float32' (weights are "
            f"drawn from a normal distribution), got {dtype!r}"
        )


def layer_input(layer: Layer, x: Any, ndim: int, layout: str) -> Any:
    """The layer's input ``x`` (lists converted to arrays), checked for ``ndim`` dimensions.

    ``ndim`` is the fewest its forward can read sizes from; a clear error naming the layer
    otherwise (the functions it calls check the exact layout).
    """
    if not isinstance(x, Variable):
        x = array_arg(type(layer).__name__, "x", x)
    elif x.data is None:
        raise TypeError(f"{type(layer).__name__}: x is a Variable whose data is None")
    if x.ndim < ndim:
        raise ValueError(f"{type(layer).__name__}: x must be {layout}, got shape {tuple(x.shape)}.")
    return x


def place(layer: Layer, params: tuple[Any, ...]) -> None:
    """Move ``params``, just made by sizing ``layer``, to the backend its ``to()`` named.

    Without a ``to()`` they stay on the input's backend.
    """
    name = layer.target_backend
    if name is None:
        return
    for param in params:
        if param is not None and param.data is not None:
            param.to(name)


def follow(param: Any, like: Any) -> None:
    """Move ``param`` to the backend of array ``like`` (lazy init on a GPU input)."""
    if param is not None and param.data is not None:
        target = backend_of(like)
        if backend_of(param.data) is not target:
            param.to(target)
