"""Recurrent cells: ``RNN`` (Elman) and ``LSTM``; their state persists across calls."""

from __future__ import annotations

from typing import Any

from zerograd import Variable
from zerograd.backends import BackendMismatchError, backend_of
from zerograd.typing import ArrayLike

from .. import functional as F
from .. import initializers as _init
from .argument_order import check_step_features
from .base import Layer
from .linear import Linear
from .pytorch_names import RECURRENT_KEYWORDS, refuses_pytorch_keywords
from .setup import layer_input, size_arg


def _step_input(layer: Layer, x: Any, h: Variable | None, x2h: Linear) -> Any:
    """A cell's input ``x`` (N, in_size), checked against ``x2h`` and the kept state ``h``.

    Raises:
        ValueError: ``x`` is not 2-D (a whole sequence, PyTorch's layout, included), its
            feature size is not the cell's (PyTorch's argument order: named), or its batch
            size is not the kept state's (call ``reset_state``).
    """
    x = layer_input(layer, x, 2, "(N, in_size)")
    if x.ndim > 2:
        raise ValueError(
            f"{type(layer).__name__}: x must be one time step, (N, in_size), got shape "
            f"{tuple(x.shape)}. A cell advances one step per call (PyTorch's nn.RNN and "
            f"nn.LSTM take a whole sequence): call it on each step, x[t] for t in range(T)."
        )
    check_step_features(layer, x.shape[1], x2h.in_size, x2h.out_size)
    _check_state_batch(layer, x, h)
    return x


def _check_state_batch(layer: Layer, x: Any, h: Variable | None) -> None:
    """Refuse a batch whose size or backend differs from the kept state's.

    Raises:
        BackendMismatchError: the state was computed before the cell's ``to()`` moved it.
        ValueError: the batch size is not the state's.
    """
    if h is None:
        return
    data = x.data if isinstance(x, Variable) else x
    if type(data) is not type(h.data):
        _check_state_backend(layer, data, h)
    shape = getattr(x, "shape", None)
    if shape and h.ndim and shape[0] != h.shape[0]:
        name = type(layer).__name__
        raise ValueError(
            f"{name}: got a batch of {shape[0]} (x of shape {tuple(shape)}) but the hidden state "
            f"holds a batch of {h.shape[0]} from the previous call; call reset_state() before "
            f"feeding a sequence with another batch size."
        )


def _check_state_backend(layer: Layer, data: Any, h: Variable) -> None:
    """Refuse a step whose input lives on another backend than the kept state.

    ``to()`` moves parameters, not the state of a sequence under way, so the step would fail
    inside a Linear, which advises moving the input, not the state.
    """
    have, got = backend_of(h.data), backend_of(data)
    if have is not got:
        raise BackendMismatchError(
            f"{type(layer).__name__}: the hidden state is on {have.name} but x is on {got.name} "
            f"(the state was kept from a call before model.to() moved the parameters); "
            f"call reset_state() after to() to start the next sequence on {got.name}."
        )


class _RecurrentCell(Layer):
    """What the cells share: DeZero's constructor (the hidden size first), checked once.

    A subclass makes its layers in ``_build(hidden_size, in_size, initialW, initial_bias)``,
    given the checked arguments.
    """

    @refuses_pytorch_keywords(RECURRENT_KEYWORDS)
    def __init__(
        self,
        hidden_size: int,
        in_size: int | None = None,
        *,
        initialW: Any = None,
        initial_bias: Any = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        h, i = size_arg(self, "hidden_size", hidden_size), size_arg(self, "in_size", in_size, True)
        w = _init.check(initialW, name, "initialW", arrays=False)
        b = _init.check(initial_bias, name, "initial_bias", arrays=False)
        self._build(h, i, w, b)  # type: ignore[attr-defined]


class RNN(_RecurrentCell):
    """Elman RNN cell ``h = tanh(x2h(x) + h2h(h))``; the state persists until ``reset_state``.

    ``initialW`` (an initializer or a number) fills both ``x2h.W`` and ``h2h.W``;
    ``initial_bias`` fills ``x2h.b``. With ``in_size`` given both weights exist from the
    start; without it ``x2h`` is sized at the first step and ``h2h`` at the second (the
    first reads no state), as in DeZero.

    The order is DeZero's, the hidden size first: PyTorch's ``nn.RNN(3, 4)`` is ``RNN(4,
    in_size=3)``. An input whose size is the hidden size where ``in_size`` is another (the
    mark of PyTorch's order) and PyTorch's keywords are refused with that spelling.

    Args:
        hidden_size: the size of the hidden state.
        in_size: the input size; None to take it from the first input.
        initialW: how to fill the weights (initializer or number).
        initial_bias: how to fill the bias (initializer or number).

    Raises:
        ValueError: a size that is not a positive int.
        TypeError: one of PyTorch's keywords.

    Examples:
        >>> import numpy as np
        >>> rnn = RNN(4)
        >>> rnn(np.ones((2, 3), dtype=np.float32)).shape
        (2, 4)
    """

    def _build(self, h: int, i: int | None, w: Any, b: Any) -> None:
        self.x2h = Linear(h, in_size=i, initialW=w, initial_bias=b)
        # As DeZero's: drawn right after x2h when in_size is given (DeZero passes in_size,
        # which fits the state only when it equals the hidden size), else lazily at the
        # second step, so that the book's models draw their weights in the book's order.
        self.h2h = Linear(h, in_size=None if i is None else h, nobias=True, initialW=w)
        self.h: Variable | None = None

    def reset_state(self) -> None:
        """Forget the hidden state (start a new sequence)."""
        self.h = None

    def extra_repr(self) -> str:
        return f"hidden={self.x2h.out_size}"

    def forward(self, x: ArrayLike) -> Variable:
        """Advance one step on ``x`` (N, in_size): the new hidden state, kept for the next.

        A batch of another size than the kept state's is a ValueError (``reset_state``).
        """
        x = _step_input(self, x, self.h, self.x2h)
        if self.h is None:
            h_new = F.tanh(self.x2h(x))
        else:
            h_new = F.tanh(self.x2h(x) + self.h2h(self.h))
        self.h = h_new
        return h_new


class LSTM(_RecurrentCell):
    """LSTM cell with forget, input and output gates; state kept until ``reset_state``.

    ``initialW`` (an initializer or a number) fills the eight weight matrices;
    ``initial_bias`` fills the four biases of the ``x2*`` layers.

    The order is DeZero's, the hidden size first: PyTorch's ``nn.LSTM(3, 4)`` is
    ``LSTM(4, in_size=3)``. The arguments and errors are :class:`RNN`'s; ``hidden_size`` is
    the size of both the hidden and the cell state.
    """

    def _build(self, h: int, i: int | None, w: Any, b: Any) -> None:
        self.x2f = Linear(h, in_size=i, initialW=w, initial_bias=b)
        self.x2i = Linear(h, in_size=i, initialW=w, initial_bias=b)
        self.x2o = Linear(h, in_size=i, initialW=w, initial_bias=b)
        self.x2u = Linear(h, in_size=i, initialW=w, initial_bias=b)
        self.h2f = Linear(h, in_size=h, nobias=True, initialW=w)
        self.h2i = Linear(h, in_size=h, nobias=True, initialW=w)
        self.h2o = Linear(h, in_size=h, nobias=True, initialW=w)
        self.h2u = Linear(h, in_size=h, nobias=True, initialW=w)
        self.reset_state()

    def reset_state(self) -> None:
        """Forget the hidden and cell states (start a new sequence)."""
        self.h: Variable | None = None
        self.c: Variable | None = None

    def extra_repr(self) -> str:
        return f"hidden={self.x2f.out_size}"

    def forward(self, x: ArrayLike) -> Variable:
        """Advance one step on ``x`` (N, in_size): the new hidden state; both states are kept."""
        x = _step_input(self, x, self.h, self.x2f)
        if self.h is None:
            f = F.sigmoid(self.x2f(x))
            i = F.sigmoid(self.x2i(x))
            o = F.sigmoid(self.x2o(x))
            u = F.tanh(self.x2u(x))
        else:
            f = F.sigmoid(self.x2f(x) + self.h2f(self.h))
            i = F.sigmoid(self.x2i(x) + self.h2i(self.h))
            o = F.sigmoid(self.x2o(x) + self.h2o(self.h))
            u = F.tanh(self.x2u(x) + self.h2u(self.h))
        c_new = i * u if self.c is None else f * self.c + i * u
        h_new = o * F.tanh(c_new)
        self.h, self.c = h_new, c_new
        return h_new


__all__ = ["LSTM", "RNN"]
