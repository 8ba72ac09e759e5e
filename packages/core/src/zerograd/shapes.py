"""Shape arithmetic on plain ints and shapes: no array library, no Variable.

A leaf module: the backends (the plugin surface) import it, so it imports nothing of
zerograd.

Examples:
    >>> import numpy as np
    >>> conv_outsize(28, 3, 1, 1), size_of(np.zeros((2, 3)))
    (28, 6)
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["basic_index", "conv_outsize", "conv_outsize_2d", "size_of", "summed_axes"]


def size_of(x: Any) -> int:
    """Return the number of elements of the backend array ``x``: the product of its shape.

    Use it, never ``x.size``, on raw arrays: ``torch.Tensor.size`` is a method, and the array
    API standard lets ``size`` be None where a dimension depends on the data. On a Variable,
    ``x.size`` is fine (it is zerograd's property, computed this way).

    Args:
        x: An array of any backend (anything with a ``shape`` of ints).

    Returns:
        The element count, 1 for a 0-d array.

    Examples:
        >>> import numpy as np
        >>> size_of(np.zeros((2, 0))), size_of(np.float64(3.0))
        (0, 1)
    """
    return math.prod(x.shape)


def conv_outsize(size: int, k: int, s: int, p: int) -> int:
    """Output length of a convolution along one axis: ``(size + 2*p - k) // s + 1``.

    Args:
        size: The input's length.
        k: The kernel size on that axis.
        s: The stride.
        p: The padding on each side.

    Returns:
        The output length.

    Examples:
        >>> conv_outsize(5, 3, 1, 1)
        5
    """
    return (size + 2 * p - k) // s + 1


def conv_outsize_2d(op: str, h: int, w: int, k: tuple, s: tuple, p: tuple) -> tuple[int, int]:
    """The output height and width of a convolution over an ``h`` by ``w`` image.

    The one place zerograd-nn's convolutions and poolings and zerograd-cupy's kernels get
    their output size from, and refuse a kernel that does not fit.

    Args:
        op: The calling function's name, for the error message.
        h: The input's height.
        w: The input's width.
        k: The kernel size, an ``(h, w)`` pair of ints (checked: ``zerograd.checks.conv_args``).
        s: The stride, a pair.
        p: The padding, a pair.

    Returns:
        ``(oh, ow)``, each :func:`conv_outsize` of its axis.

    Raises:
        ValueError: The kernel does not fit the padded image (an output size below 1).

    Examples:
        >>> conv_outsize_2d("conv2d", 28, 28, (3, 3), (1, 1), (1, 1))
        (28, 28)
    """
    oh, ow = conv_outsize(h, k[0], s[0], p[0]), conv_outsize(w, k[1], s[1], p[1])
    if oh < 1 or ow < 1:
        raise ValueError(
            f"{op}: a kernel of {tuple(k)} with stride {tuple(s)} and pad {tuple(p)} does not "
            f"fit an input of height/width {(h, w)}; use a smaller kernel or more padding."
        )
    return oh, ow


def summed_axes(x_shape: tuple, shape: tuple) -> tuple[int, ...]:
    """The axes of ``x_shape`` that summing down to ``shape`` adds up (broadcasting's adjoint).

    The leading axes ``shape`` lacks, and those where ``shape`` has 1 and ``x_shape`` more.
    Summing over them without keeping them leaves ``shape`` with its inner 1s dropped.

    Args:
        x_shape: The shape of the array summed.
        shape: A shape that broadcasts to ``x_shape``.

    Returns:
        The axes, ascending.

    Examples:
        >>> summed_axes((4, 2, 3), (2, 1)), summed_axes((4, 3), (3,))
        ((0, 2), (0,))
    """
    lead = len(x_shape) - len(shape)
    inner = (i + lead for i, n in enumerate(shape) if n == 1 and x_shape[i + lead] != 1)
    return (*range(lead), *inner)


def basic_index(index: Any) -> bool:
    """Whether ``index`` holds only ints, slices, None and Ellipsis (numpy's basic indexing).

    Such an index selects each element at most once, so adding into ``a[index]`` needs no
    care for repeats: a backend's ``scatter_add`` may write ``a[index] += values``.

    Args:
        index: An index, as ``a[index]`` takes it.

    Returns:
        True for a basic index; False when it holds an array or a list.

    Examples:
        >>> basic_index((slice(1, 3), 0)), basic_index([0, 0])
        (True, False)
    """
    items = index if isinstance(index, tuple) else (index,)
    return all(isinstance(i, (int, slice, type(None), type(Ellipsis))) for i in items)
