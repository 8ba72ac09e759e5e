"""Transforms for dataset items (DeZero's ``dezero.transforms``).

Array transforms work on arrays of any backend through its array module. Image
transforms (``Resize``, ``CenterCrop``, ``ToPIL``, ``ToArray`` from an image, ``Convert``)
need Pillow, imported only when used: ``pip install pillow`` or
``pip install 'zerograd-nn[images]'``.

>>> import numpy as np
>>> f = Compose([Flatten(), ToFloat(), Normalize(0.0, 255.0)])
>>> f(np.full((1, 2, 2), 255, dtype=np.uint8))
array([1., 1., 1., 1.], dtype=float32)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from zerograd.backends import backend_of, device_of, get_array_module, get_backend

__all__ = [
    "AsType",
    "CenterCrop",
    "Compose",
    "Convert",
    "Flatten",
    "Normalize",
    "RandomHorizontalFlip",
    "Resize",
    "ToArray",
    "ToFloat",
    "ToInt",
    "ToPIL",
    "pair",
]


def pair(x: int | Sequence[int]) -> tuple[int, int]:
    """``3 -> (3, 3)``; a pair stays a pair."""
    if isinstance(x, int):
        return (x, x)
    if isinstance(x, (tuple, list)) and len(x) == 2:
        return (int(x[0]), int(x[1]))
    raise ValueError(f"expected an int or a pair of ints, got {x!r}")


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(
            "zerograd_nn.transforms: this transform works on images and needs Pillow. "
            "Install it: pip install pillow   (or pip install 'zerograd-nn[images]')."
        ) from None
    return Image


def _is_pil(x: Any) -> bool:
    mod = type(x).__module__
    return mod.startswith("PIL.") and hasattr(x, "convert") and hasattr(x, "size")


class Compose:
    """Apply ``transforms`` one after another."""

    def __init__(self, transforms: Sequence[Callable[[Any], Any]] = ()) -> None:
        self.transforms = list(transforms)

    def __call__(self, img: Any) -> Any:
        for t in self.transforms:
            img = t(img)
        return img


# -- images (Pillow) ----------------------------------------------------------------------


class Convert:
    """Convert a PIL image to ``mode`` (``'RGB'``, ``'L'``, ..., or ``'BGR'``)."""

    def __init__(self, mode: str = "RGB") -> None:
        self.mode = mode

    def __call__(self, img: Any) -> Any:
        Image = _pil()
        if self.mode == "BGR":
            r, g, b = img.convert("RGB").split()
            return Image.merge("RGB", (b, g, r))
        return img.convert(self.mode)


class Resize:
    """Resize a PIL image to ``size`` (``(width, height)`` or one int for a square)."""

    def __init__(self, size: int | Sequence[int], mode: Any = None) -> None:
        self.size = pair(size)
        self.mode = mode

    def __call__(self, img: Any) -> Any:
        Image = _pil()
        mode = Image.BILINEAR if self.mode is None else self.mode
        return img.resize(self.size, mode)


class CenterCrop:
    """Crop the centre ``size`` (``(width, height)`` or one int) out of a PIL image."""

    def __init__(self, size: int | Sequence[int]) -> None:
        self.size = pair(size)

    def __call__(self, img: Any) -> Any:
        _pil()
        W, H = img.size
        OW, OH = self.size
        if OW > W or OH > H:
            raise ValueError(f"CenterCrop: crop size {self.size} is larger than the image {W}x{H}")
        left, up = (W - OW) // 2, (H - OH) // 2
        return img.crop((left, up, left + OW, up + OH))


class ToArray:
    """PIL image (H, W, C) -> array (C, H, W) of ``dtype``; arrays pass through unchanged."""

    def __init__(self, dtype: Any = "float32") -> None:
        self.dtype = dtype

    def __call__(self, img: Any) -> Any:
        if _is_pil(img):
            import numpy as np  # PIL hands its pixels to numpy, on the host

            a = np.asarray(img)
            a = a[:, :, None] if a.ndim == 2 else a
            backend = get_backend()
            return backend.astype(backend.from_numpy(a.transpose(2, 0, 1)), self.dtype)
        if hasattr(img, "shape") and hasattr(img, "dtype"):
            return img  # already an array
        raise TypeError(f"ToArray: expected a PIL image or an array, got {type(img).__name__}")


class ToPIL:
    """Array (C, H, W) -> PIL image (a single channel gives a grayscale image)."""

    def __call__(self, array: Any) -> Any:
        Image = _pil()
        from zerograd.backends import as_numpy

        a = as_numpy(array)
        if a.ndim != 3:
            raise ValueError(f"ToPIL: expected an array of shape (C, H, W), got {a.shape}")
        a = a.transpose(1, 2, 0)
        return Image.fromarray(a[:, :, 0] if a.shape[2] == 1 else a)


class RandomHorizontalFlip:
    """Flip left-right with probability ``p`` (a PIL image, or an array on its last axis)."""

    def __init__(self, p: float = 0.5) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"RandomHorizontalFlip: p must be in [0, 1], got {p}")
        self.p = p

    def __call__(self, img: Any) -> Any:
        if random.random() >= self.p:
            return img
        if _is_pil(img):
            Image = _pil()
            return img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        return get_array_module(img).flip(img, axis=-1)


# -- arrays -------------------------------------------------------------------------------


class Normalize:
    """``(x - mean) / std``; a sequence ``mean``/``std`` applies per channel (axis 0)."""

    def __init__(self, mean: float | Sequence[float] = 0, std: float | Sequence[float] = 1) -> None:
        self.mean = mean
        self.std = std

    def _stat(self, value: Any, array: Any) -> Any:
        if isinstance(value, (int, float)):
            return value
        xp = get_array_module(array)
        v = xp.asarray(value, dtype=array.dtype, device=device_of(array))
        if v.ndim == 0:
            return v
        n = v.shape[0]
        if n != 1 and n != array.shape[0]:
            raise ValueError(
                f"Normalize: {n} per-channel values for an array of shape {array.shape} "
                f"(axis 0 has {array.shape[0]} channels)"
            )
        return xp.reshape(v, (n,) + (1,) * (array.ndim - 1))

    def __call__(self, array: Any) -> Any:
        return (array - self._stat(self.mean, array)) / self._stat(self.std, array)


class Flatten:
    """Reshape to one dimension."""

    def __call__(self, array: Any) -> Any:
        return get_array_module(array).reshape(array, (-1,))


class AsType:
    """Convert to ``dtype`` (a dtype or its name, e.g. ``'float32'``)."""

    def __init__(self, dtype: Any = "float32") -> None:
        self.dtype = dtype

    def __call__(self, array: Any) -> Any:
        return backend_of(array).astype(array, self.dtype)


ToFloat = AsType


class ToInt(AsType):
    """Convert to an integer dtype (``int64`` by default)."""

    def __init__(self, dtype: Any = "int64") -> None:
        super().__init__(dtype)
