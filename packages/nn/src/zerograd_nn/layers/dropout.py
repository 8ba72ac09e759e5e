"""``Dropout`` as a layer, for a :class:`~zerograd_nn.models.Sequential` of layers."""

from __future__ import annotations

from zerograd import Variable
from zerograd.checks import real_number
from zerograd.typing import ArrayLike

from .. import functional as F
from .base import Layer
from .pytorch_names import refuses_pytorch_keywords


class Dropout(Layer):
    """:func:`~zerograd_nn.functional.dropout` with its ratio kept: ``Dropout(0.5)(x)``.

    Zeroes each element with probability ``dropout_ratio`` in train mode, scaling the rest
    by ``1 / (1 - dropout_ratio)``; passes ``x`` through in test mode (``test_mode()``, or
    ``eval()`` on this layer or a model holding it). It has no parameters. Activations stay
    functions (``Sequential(L.Linear(10), F.relu, L.Dropout(0.2), L.Linear(3))``); dropout
    is a layer because it carries a setting.

    Args:
        dropout_ratio: the probability of zeroing an element, in [0, 1) (PyTorch's ``p``).

    Raises:
        TypeError: ``dropout_ratio`` is not a real number, or PyTorch's keyword ``p=``.
        ValueError: ``dropout_ratio`` outside [0, 1).

    Examples:
        >>> import numpy as np
        >>> layer = Dropout(0.5).eval()
        >>> layer(np.ones(3)).data
        array([1., 1., 1.])
    """

    @refuses_pytorch_keywords(
        {"p": "the ratio is dropout_ratio= (or the first argument)", "inplace": "never in place"}
    )
    def __init__(self, dropout_ratio: float = 0.5) -> None:
        super().__init__()
        ratio = real_number("Dropout", "dropout_ratio", dropout_ratio)
        if not 0.0 <= ratio < 1.0:
            raise ValueError(f"Dropout: dropout_ratio must be in [0, 1), got {ratio}")
        self.dropout_ratio = ratio

    def extra_repr(self) -> str:
        return f"dropout_ratio={self.dropout_ratio}"

    def forward(self, x: ArrayLike) -> Variable:
        """Apply dropout to ``x`` (train mode) or return it (test mode).

        Args:
            x: the input (Variable, array or list).

        Returns:
            A Variable of ``x``'s shape.
        """
        return F.dropout(x, self.dropout_ratio)


__all__ = ["Dropout"]
