"""The embedding layer: a lookup table of vectors by integer id."""

from __future__ import annotations

from typing import Any

from zerograd import Parameter, Variable
from zerograd.backends import get_backend
from zerograd.typing import ArrayLike

from .. import functional as F
from .. import initializers as _init
from .base import Layer
from .pytorch_names import EMBED_KEYWORDS, refuses_pytorch_keywords
from .setup import randn, size_arg


class EmbedID(Layer):
    """Lookup table: row ``W[i]`` for each integer id ``i``; ``W`` is (in_size, out_size).

    ``W`` starts as standard-normal draws, or from ``initialW`` as in :class:`Linear`.

    The order is PyTorch's too: ``nn.Embedding(10, 3)`` is ``EmbedID(10, 3)``; PyTorch's
    keywords (``num_embeddings=``, ``embedding_dim=``) are refused, naming these.

    Args:
        in_size: the number of ids (rows of ``W``).
        out_size: the size of each embedding vector.
        initialW: how to fill ``W`` (initializer, number or array).

    Examples:
        >>> import numpy as np
        >>> EmbedID(10, 3)(np.array([1, 4])).shape
        (2, 3)
    """

    @refuses_pytorch_keywords(EMBED_KEYWORDS)
    def __init__(self, in_size: int, out_size: int, *, initialW: Any = None) -> None:
        super().__init__()
        initialW = _init.check(initialW, "EmbedID", "initialW")
        shape = (size_arg(self, "in_size", in_size), size_arg(self, "out_size", out_size))
        if initialW is None:
            self.W = Parameter(randn(get_backend(), shape, "float32", 1.0), "W")
        else:
            w = _init.generate(initialW, shape, "float32", None, "EmbedID", "initialW")
            self.W = Parameter(w, "W")

    def extra_repr(self) -> str:
        return f"in={self.W.shape[0]}, out={self.W.shape[1]}"

    def forward(self, x: ArrayLike) -> Variable:
        """Look up the rows of ``W``.

        Args:
            x: integer ids, of any shape.

        Returns:
            The embeddings, of shape ``x.shape + (out_size,)``.
        """
        return F.embed_id(x, self.W)


__all__ = ["EmbedID"]
