"""Weight initializers, Chainer's names: pass one as a layer's ``initialW`` or ``initial_bias``.

An initializer is a callable ``init(shape, dtype='float32', backend=None)`` that returns a
new array of that shape and dtype on ``backend`` (a name or ``zerograd.backends.Backend``;
None means the default backend). Random initializers draw from the backend's global random
state, which ``zerograd.seed`` and ``numpy.random.seed`` seed, exactly as the layers'
default weights do.

The scaled initializers size their spread from the fans of the weight (see
``get_fans``). zerograd's ``Linear.W`` is ``(in_size, out_size)`` (``y = x @ W``, as in
DeZero), so a 2-D shape reads as ``(fan_in, fan_out)``; a convolution kernel
``(out_channels, in_channels, kh, kw)`` has ``fan_in = in_channels * kh * kw``. A layer whose
layout differs (``Deconv2d``) passes its fans explicitly.

Examples:
    >>> import numpy as np
    >>> from zerograd_nn import initializers as I
    >>> w = I.HeNormal()((256, 128))
    >>> w.shape, w.dtype
    ((256, 128), dtype('float32'))
    >>> I.Constant(0.5)((2,), "float64")
    array([0.5, 0.5])
"""

from __future__ import annotations

import math
from typing import Any

from zerograd.backends import Backend, as_array_of, backend_of, device_of, get_backend


def get_fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """Return ``(fan_in, fan_out)`` of a weight of ``shape`` in zerograd's layouts.

    Args:
        shape: ``(n,)`` for a bias, ``(in_size, out_size)`` for ``Linear``/``EmbedID``, or
            ``(out_channels, in_channels, *kernel)`` for a convolution kernel.

    Returns:
        The number of inputs and of outputs each weight connects.

    Raises:
        ValueError: for a 0-d shape, which has no fans.

    Examples:
        >>> get_fans((16, 3, 3, 3))
        (27, 144)
    """
    shape = tuple(int(n) for n in shape)
    if len(shape) == 0:
        raise ValueError("zerograd_nn.initializers.get_fans: a 0-d shape () has no fan-in")
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    field = math.prod(shape[2:])
    return shape[1] * field, shape[0] * field


class Initializer:
    """Base class: subclasses implement ``generate``; calling returns the cast array."""

    def __call__(
        self,
        shape: tuple[int, ...],
        dtype: Any = "float32",
        backend: str | Backend | None = None,
        *,
        fan_in: int | None = None,
        fan_out: int | None = None,
    ) -> Any:
        """Make a new array of ``shape`` and ``dtype`` on ``backend``, filled by this initializer.

        Args:
            shape: shape of the array (an int for a vector).
            dtype: its dtype (floating point).
            backend: a backend name or Backend; None means the default backend.
            fan_in: overrides the fan-in read from ``shape`` (see ``get_fans``).
            fan_out: overrides the fan-out read from ``shape``.

        Returns:
            An array of ``backend``.

        Raises:
            ValueError: a scaled initializer got a 0-d shape or a zero fan, or
                ``Orthogonal`` got fewer than two dimensions.
        """
        b = get_backend(backend) if isinstance(backend, str) else backend or get_backend()
        shape = (int(shape),) if isinstance(shape, int) else tuple(int(n) for n in shape)
        if fan_in is None or fan_out is None:
            fans = get_fans(shape) if self._needs_fans else (0, 0)
            fan_in = fans[0] if fan_in is None else fan_in
            fan_out = fans[1] if fan_out is None else fan_out
        return self.generate(b, shape, dtype, fan_in, fan_out)

    _needs_fans = False

    def generate(
        self, backend: Backend, shape: tuple, dtype: Any, fan_in: int, fan_out: int
    ) -> Any:
        """Return the filled array; subclasses implement this.

        Args:
            backend: the backend the array is made on.
            shape: the array's shape (a tuple of ints).
            dtype: its dtype.
            fan_in: the weight's fan-in (0 for initializers that do not use fans).
            fan_out: the weight's fan-out (0 for initializers that do not use fans).

        Returns:
            A new array of ``backend``.

        Raises:
            NotImplementedError: a subclass did not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__}.generate is not implemented")

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


def _normal(backend: Backend, shape: tuple, dtype: Any, std: float) -> Any:
    # Cast, then scale: the same arithmetic as the layers' default ``randn * sqrt(1/in)``.
    w = backend.randn(*shape)
    return backend.astype(w, dtype) * std


def _uniform(backend: Backend, shape: tuple, dtype: Any, bound: float) -> Any:
    w = backend.rand(*shape) * (2 * bound) - bound  # numpy's uniform(-bound, bound)
    return backend.astype(w, dtype)


class Constant(Initializer):
    """Every element equal to ``fill_value``.

    Args:
        fill_value: the value (a Python number).
    """

    def __init__(self, fill_value: float) -> None:
        self.fill_value = fill_value

    def generate(
        self, backend: Backend, shape: tuple, dtype: Any, fan_in: int, fan_out: int
    ) -> Any:
        """Return an array with ``fill_value`` everywhere (see ``Initializer.generate``)."""
        device = device_of(backend.asarray(0.0))  # the backend's own device
        return backend.xp.full(
            shape, self.fill_value, dtype=backend.resolve_dtype(dtype), device=device
        )


class Zero(Constant):
    """All zeros (Chainer's ``Zero``)."""

    def __init__(self) -> None:
        super().__init__(0.0)


class One(Constant):
    """All ones (Chainer's ``One``)."""

    def __init__(self) -> None:
        super().__init__(1.0)


class _Random(Initializer):
    """Normal draws of std ``_spread`` or, with ``_uniform_draws``, uniform ones on ``±_spread``."""

    _uniform_draws = False

    def __init__(self, scale: float = 0.05) -> None:
        self.scale = scale

    def _spread(self, shape: tuple, fan_in: int, fan_out: int) -> float:
        return self.scale

    def generate(
        self, backend: Backend, shape: tuple, dtype: Any, fan_in: int, fan_out: int
    ) -> Any:
        """Return random draws of this initializer's spread (see ``Initializer.generate``)."""
        spread = self._spread(shape, fan_in, fan_out)
        if self._uniform_draws:
            return _uniform(backend, shape, dtype, spread)
        return _normal(backend, shape, dtype, spread)


class Normal(_Random):
    """Normal draws with mean 0 and standard deviation ``scale``.

    Args:
        scale: the standard deviation (Chainer's default, 0.05).
    """


class Uniform(_Random):
    """Uniform draws on ``[-scale, scale)``.

    Args:
        scale: the bound (Chainer's default, 0.05).
    """

    _uniform_draws = True


class _Scaled(_Random):
    """Draws whose variance is ``scale**2 * gain / fan`` (the LeCun/Glorot/He family).

    Raises:
        ValueError: when called for a weight whose fan is not positive.
    """

    _gain = 1.0  # variance numerator: 1 for LeCun and Glorot, 2 for He
    _needs_fans = True

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale

    def _fan(self, fan_in: int, fan_out: int) -> float:
        return fan_in

    def _spread(self, shape: tuple, fan_in: int, fan_out: int) -> float:
        fan = self._fan(fan_in, fan_out)
        if fan <= 0:
            raise ValueError(
                f"zerograd_nn.initializers.{type(self).__name__}: the weight of shape {shape} "
                f"has fan {fan}; every dimension must be at least 1"
            )
        std = self.scale * math.sqrt(self._gain / fan)
        return std * math.sqrt(3.0) if self._uniform_draws else std  # uniform std: bound/sqrt(3)


class LeCunNormal(_Scaled):
    """Normal with std ``scale * sqrt(1 / fan_in)``; with scale 1 it is the layers' default.

    Args:
        scale: multiplies the standard deviation.
    """


class LeCunUniform(_Scaled):
    """Uniform on ``±scale * sqrt(3 / fan_in)`` (variance ``scale**2 / fan_in``).

    Args:
        scale: multiplies the bound.
    """

    _uniform_draws = True


class GlorotNormal(_Scaled):
    """Normal with std ``scale * sqrt(2 / (fan_in + fan_out))`` (Xavier Glorot, 2010).

    Args:
        scale: multiplies the standard deviation (PyTorch's ``gain``).
    """

    def _fan(self, fan_in: int, fan_out: int) -> float:
        return (fan_in + fan_out) / 2


class GlorotUniform(GlorotNormal):
    """Uniform on ``±scale * sqrt(6 / (fan_in + fan_out))``.

    Args:
        scale: multiplies the bound (PyTorch's ``gain``).
    """

    _uniform_draws = True


class HeNormal(_Scaled):
    """Normal with std ``scale * sqrt(2 / fan)`` (Kaiming He, 2015), for ReLU networks.

    Args:
        scale: multiplies the standard deviation.
        fan_option: ``'fan_in'`` (keeps forward variances) or ``'fan_out'`` (backward ones).

    Raises:
        ValueError: for another ``fan_option``.
    """

    _gain = 2.0

    def __init__(self, scale: float = 1.0, fan_option: str = "fan_in") -> None:
        if fan_option not in ("fan_in", "fan_out"):
            raise ValueError(
                f"zerograd_nn.initializers.{type(self).__name__}: fan_option must be 'fan_in' "
                f"or 'fan_out', got {fan_option!r}"
            )
        super().__init__(scale)
        self.fan_option = fan_option

    def _fan(self, fan_in: int, fan_out: int) -> float:
        return fan_in if self.fan_option == "fan_in" else fan_out


class HeUniform(HeNormal):
    """Uniform on ``±scale * sqrt(6 / fan)`` (the uniform form of ``HeNormal``).

    Args:
        scale: multiplies the bound.
        fan_option: ``'fan_in'`` or ``'fan_out'``.

    Raises:
        ValueError: for another ``fan_option``.
    """

    _uniform_draws = True


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times ``scale`` (Saxe et al., 2014).

    The shape is read as ``(shape[0], prod(shape[1:]))``: its rows are orthonormal when
    there are no more rows than columns (``W @ W.T = scale**2 * I``), its columns otherwise.
    Made from the QR decomposition of a normal draw, signs fixed so that the result is
    uniformly distributed.

    Args:
        scale: multiplies the matrix.

    Raises:
        ValueError: when called with fewer than two dimensions.
    """

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale

    def generate(
        self, backend: Backend, shape: tuple, dtype: Any, fan_in: int, fan_out: int
    ) -> Any:
        """Return a (semi-)orthogonal matrix of ``shape`` times ``scale``.

        See ``Initializer.generate``.

        Raises:
            ValueError: ``shape`` has fewer than two dimensions.
        """
        if len(shape) < 2:
            raise ValueError(
                f"zerograd_nn.initializers.Orthogonal: needs a shape of 2 or more dimensions, "
                f"got {shape}; use another initializer for biases"
            )
        xp = backend.xp
        rows, cols = shape[0], math.prod(shape[1:])
        flat = backend.randn(max(rows, cols), min(rows, cols))
        # QR in the wider of the draw's dtype and the result's: a float64 matrix made in
        # float32 (PyTorch's default float) is orthogonal only to float32 precision
        flat = xp.astype(flat, xp.result_type(flat.dtype, backend.resolve_dtype(dtype)))
        q, r = xp.linalg.qr(flat)  # the standard's optional linalg extension
        q = q * xp.sign(xp.linalg.diagonal(r))
        if rows < cols:
            q = q.T
        return backend.astype(xp.reshape(q, shape), dtype) * self.scale


XavierNormal = GlorotNormal
"""PyTorch's name of ``GlorotNormal``."""
XavierUniform = GlorotUniform
"""PyTorch's name of ``GlorotUniform``."""
KaimingNormal = HeNormal
"""PyTorch's name of ``HeNormal``."""
KaimingUniform = HeUniform
"""PyTorch's name of ``HeUniform``."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check(value: Any, owner: str, keyword: str, *, arrays: bool = True) -> Any:
    """Validate what a layer got as ``initialW``/``initial_bias``; return it normalized.

    Args:
        value: None, an ``Initializer``, a Python number or an array of any backend.
        owner: the layer's name, for the error message (``'Linear'``).
        keyword: ``'initialW'`` or ``'initial_bias'``.
        arrays: whether an array is accepted (not by a cell whose one value fills matrices
            of several shapes).

    Returns:
        None, an Initializer (numbers and 0-d arrays become ``Constant``), or the array as
            given.

    Raises:
        TypeError: for anything else, or an array where ``arrays`` is False.
    """
    if value is None or isinstance(value, Initializer):
        return value
    if _is_number(value):
        return Constant(value)
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        if tuple(value.shape) == ():
            return Constant(value.item())
        if arrays:
            return value
        raise TypeError(
            f"zerograd_nn.layers.{owner}: {keyword} fills matrices of different shapes, so it "
            f"must be an initializer or a number, got an array of shape {tuple(value.shape)}; "
            f"to set one matrix, assign its data (for example layer.x2h.W.data = ...)"
        )
    raise TypeError(
        f"zerograd_nn.layers.{owner}: {keyword} must be an initializer from "
        f"zerograd_nn.initializers, a number or an array, got {type(value).__name__} "
        f"({value!r})"
    )


def _backend_for(like: Any) -> Backend:
    if like is None:
        return get_backend()
    try:
        return backend_of(like)
    except TypeError:  # a list or scalar input: the weights go to the default backend
        return get_backend()


def generate(
    value: Any,
    shape: tuple[int, ...],
    dtype: Any,
    like: Any,
    owner: str,
    keyword: str,
    fans: tuple[int, int] | None = None,
) -> Any:
    """Make the array for a layer's parameter from a value ``check`` accepted (not None).

    Args:
        value: an Initializer or an array.
        shape: the parameter's shape.
        dtype: its dtype.
        like: an input array or Variable; the result goes to its backend (None: the
            default backend).
        owner: the layer's name, for the error message.
        keyword: the keyword the value came from, for the error message.
        fans: ``(fan_in, fan_out)`` for the initializer, when the shape's own are wrong.

    Returns:
        A new array (an array value is copied, never shared).

    Raises:
        ValueError: when an array value has another shape.
    """
    backend = _backend_for(like)
    if isinstance(value, Initializer):
        fan_in, fan_out = fans if fans is not None else (None, None)
        return value(shape, dtype, backend, fan_in=fan_in, fan_out=fan_out)
    got = tuple(value.shape)
    if got != tuple(shape):
        raise ValueError(
            f"zerograd_nn.layers.{owner}: {keyword} has shape {got} but the parameter is "
            f"{tuple(shape)}; pass an array of that shape or an initializer"
        )
    return backend.astype(as_array_of(value, backend), dtype)  # astype copies


__all__ = [
    "Constant",
    "GlorotNormal",
    "GlorotUniform",
    "HeNormal",
    "HeUniform",
    "Initializer",
    "KaimingNormal",
    "KaimingUniform",
    "LeCunNormal",
    "LeCunUniform",
    "Normal",
    "One",
    "Orthogonal",
    "Uniform",
    "XavierNormal",
    "XavierUniform",
    "Zero",
    "check",
    "generate",
    "get_fans",
]
