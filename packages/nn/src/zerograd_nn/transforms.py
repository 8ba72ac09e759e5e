"""Transforms for dataset items (DeZero's ``dezero.transforms``).

Array transforms work on arrays of any backend through its array module. Image
transforms (``Resize``, ``CenterCrop``, ``ToPIL``, ``ToArray`` from an image, ``Convert``)
need Pillow, imported only when used: ``pip install pillow`` or
``pip install 'zerograd-nn[images]'``.

Examples:
    >>> import numpy as np
    >>> f = Compose([Flatten(), ToFloat(), Normalize(0.0, 255.0)])
    >>> f(np.full((1, 2, 2), 255, dtype=np.uint8))
    array([1., 1., 1., 1.], dtype=float32)
"""

from __future__ import annotations

import numbers
import random
from collections.abc import Callable, Sequence
from typing import Any

from zerograd.backends import as_numpy, backend_of, device_of, get_array_module, get_backend
from zerograd.checks import pair, real_number

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
    "is_pil_image",
    "pair",
    "refuse_transform_class",
]


def _size(owner: str, size: Any) -> tuple[int, int]:
    w, h = pair(size, what=f"{owner}: size")
    if w < 1 or h < 1:
        raise ValueError(f"{owner}: size must be positive, got {size!r}")
    return (w, h)


def _numeric(owner: str, x: Any) -> Any:
    """``x`` as an array: arrays pass, lists and numbers are converted, else a TypeError.

    Numbers include numpy's scalars: indexing a 1-d array (labels, character ids) gives
    them, so every item of such a dataset is one.
    """
    if isinstance(x, (list, tuple, numbers.Number)):
        x = get_backend().xp.asarray(x)
    try:
        kind = backend_of(x).dtype_kind(x.dtype)
    except TypeError:
        kind = None
    if kind is None or kind not in "biufc":
        got = type(x).__name__ if kind is None else f"an array of dtype {x.dtype}"
        raise TypeError(f"{owner}: expected a numeric array (or a list), got {got}")
    return x


# the dtype names of the array API standard: every backend takes them, so a transform made
# at import time (the data sets' defaults) needs no backend yet
_STANDARD_DTYPES = frozenset(
    ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
    + ("float32", "float64", "complex64", "complex128")
)


def _check_dtype(owner: str, dtype: Any) -> Any:
    """Refuse what the default backend does not take as a dtype, when the transform is made."""
    if isinstance(dtype, str) and dtype in _STANDARD_DTYPES:
        return dtype
    try:
        get_backend().xp.zeros(0, dtype=dtype)
    except TypeError:
        raise TypeError(f"{owner}: {dtype!r} is not a dtype (e.g. 'float32' or 'int64')") from None
    return dtype


def _image(owner: str, img: Any) -> Any:
    """The PIL module, once ``img`` is known to be a PIL image (Pillow's absence first)."""
    Image = _pil()
    if not is_pil_image(img):
        raise TypeError(
            f"{owner}: expected a PIL image, got {type(img).__name__}; convert an array "
            f"(C, H, W) with ToPIL() first."
        )
    return Image


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(
            "zerograd_nn.transforms: this transform works on images and needs Pillow. "
            "Install it: pip install pillow   (or pip install 'zerograd-nn[images]')."
        ) from None
    return Image


def is_pil_image(x: Any) -> bool:
    """Whether ``x`` is a PIL image, told without importing Pillow.

    Args:
        x: anything.

    Returns:
        True for an image of Pillow's (``PIL.Image.Image`` or a subclass of Pillow's).
    """
    mod = type(x).__module__
    return mod.startswith("PIL.") and hasattr(x, "convert") and hasattr(x, "size")


def refuse_transform_class(owner: str, name: str, t: Any) -> None:
    """Refuse one of this module's transform classes where a transform is wanted.

    A class is callable, so ``Compose([Normalize])`` or ``transform=Flatten`` passes a
    check for a callable; calling it then makes a transform out of each item instead of
    transforming it. Other classes pass (``numpy.float32`` converts what it is called on).

    Args:
        owner: who checks, as the message names it (``"Compose"``).
        name: the argument (``"transforms[1]"``).
        t: the value given.

    Raises:
        TypeError: ``t`` is a class of ``zerograd_nn.transforms`` (the message says to
            give an instance).
    """
    if isinstance(t, type) and t.__module__ == __name__:
        raise TypeError(
            f"{owner}: {name} is the class {t.__name__}, not a transform; give an instance: "
            f"{t.__name__}()."
        )


class Compose:
    """Apply ``transforms`` one after another.

    Args:
        transforms: a list or tuple of callables, each taking the previous one's output.

    Raises:
        TypeError: ``transforms`` is not a list or tuple, or holds something not callable
            or a class of this module (``Flatten`` for ``Flatten()``).
    """

    def __init__(self, transforms: Sequence[Callable[[Any], Any]] = ()) -> None:
        if not isinstance(transforms, (list, tuple)):
            raise TypeError(
                f"Compose: transforms must be a list of callables, got {type(transforms).__name__}"
            )
        for i, t in enumerate(transforms):
            if not callable(t):
                raise TypeError(f"Compose: transforms[{i}] is {t!r}, not a callable")
            refuse_transform_class("Compose", f"transforms[{i}]", t)
        self.transforms = list(transforms)

    def __call__(self, img: Any) -> Any:
        """Apply every transform in order.

        Args:
            img: the item (an image or an array).

        Returns:
            The last transform's output (``img`` itself when there are none).
        """
        for t in self.transforms:
            img = t(img)
        return img


# -- images (Pillow) ----------------------------------------------------------------------


class _ImageToImage:
    """A transform of one PIL image into another.

    A subclass defines ``_apply(Image, img)``, called with the PIL module once ``img`` is
    known to be a PIL image.
    """

    def __call__(self, img: Any) -> Any:
        """Transform ``img``.

        Args:
            img: a PIL image.

        Returns:
            The new PIL image.

        Raises:
            ImportError: Pillow is not installed.
            TypeError: ``img`` is not a PIL image.
        """
        return self._apply(_image(type(self).__name__, img), img)  # type: ignore[attr-defined]


class Convert(_ImageToImage):
    """Convert a PIL image to another mode.

    Args:
        mode: a PIL mode (``'RGB'``, ``'L'``, ...) or ``'BGR'`` (RGB with the red and blue
            bands swapped).

    Raises:
        TypeError: ``mode`` is not a string.
        ValueError: (when called) Pillow cannot convert the image to ``mode``.
    """

    def __init__(self, mode: str = "RGB") -> None:
        if not isinstance(mode, str):
            raise TypeError(
                f"Convert: mode must be a PIL mode's name such as 'RGB' or 'L' (or 'BGR'), got "
                f"{mode!r}"
            )
        self.mode = mode

    def _apply(self, Image: Any, img: Any) -> Any:
        try:
            if self.mode == "BGR":
                r, g, b = img.convert("RGB").split()
                return Image.merge("RGB", (b, g, r))
            return img.convert(self.mode)
        except ValueError as exc:  # Pillow's own words name neither transform nor modes
            raise ValueError(
                f"Convert: cannot convert a mode {img.mode!r} image to mode {self.mode!r} "
                f"(Pillow: {exc}); give a mode Pillow converts to, such as 'RGB' or 'L'."
            ) from None


class Resize(_ImageToImage):
    """Resize a PIL image.

    Args:
        size: ``(width, height)``, or one int for a square.
        mode: a PIL resampling filter (default: bilinear).

    Raises:
        ValueError: ``size`` is not a positive int or pair of them.
    """

    def __init__(self, size: int | Sequence[int], mode: Any = None) -> None:
        self.size = _size("Resize", size)
        self.mode = mode

    def _apply(self, Image: Any, img: Any) -> Any:
        mode = Image.BILINEAR if self.mode is None else self.mode
        return img.resize(self.size, mode)


class CenterCrop:
    """Crop the centre out of a PIL image.

    Args:
        size: the crop's ``(width, height)``, or one int for a square.

    Raises:
        ValueError: ``size`` is not a positive int or pair of them.
    """

    def __init__(self, size: int | Sequence[int]) -> None:
        self.size = _size("CenterCrop", size)

    def __call__(self, img: Any) -> Any:
        """Crop ``img``.

        Args:
            img: a PIL image at least ``size`` large.

        Returns:
            The cropped PIL image.

        Raises:
            ImportError: Pillow is not installed.
            TypeError: ``img`` is not a PIL image.
            ValueError: the image is smaller than ``size``.
        """
        _image("CenterCrop", img)
        W, H = img.size
        OW, OH = self.size
        if OW > W or OH > H:
            raise ValueError(f"CenterCrop: crop size {self.size} is larger than the image {W}x{H}")
        left, up = (W - OW) // 2, (H - OH) // 2
        return img.crop((left, up, left + OW, up + OH))


class ToArray:
    """Turn a PIL image ``(H, W, C)`` into an array ``(C, H, W)``; arrays pass unchanged.

    Args:
        dtype: the array's dtype.

    Raises:
        TypeError: ``dtype`` is not a dtype.
    """

    def __init__(self, dtype: Any = "float32") -> None:
        self.dtype = _check_dtype("ToArray", dtype)

    def __call__(self, img: Any) -> Any:
        """Convert ``img``.

        Args:
            img: a PIL image (a grayscale one gives one channel) or an array.

        Returns:
            An array of the default backend of ``dtype``, or ``img`` itself when it is an
                array.

        Raises:
            TypeError: ``img`` is neither a PIL image nor an array.
        """
        if is_pil_image(img):
            import numpy as np  # PIL hands its pixels to numpy, on the host

            a = np.asarray(img)
            a = a[:, :, None] if a.ndim == 2 else a
            backend = get_backend()
            return backend.astype(backend.from_numpy(a.transpose(2, 0, 1)), self.dtype)
        if hasattr(img, "shape") and hasattr(img, "dtype"):
            return img  # already an array
        raise TypeError(f"ToArray: expected a PIL image or an array, got {type(img).__name__}")


class ToPIL:
    """Turn a uint8 array ``(C, H, W)`` into a PIL image (one channel: grayscale)."""

    def __call__(self, array: Any) -> Any:
        """Convert ``array``.

        Args:
            array: uint8 pixels of shape ``(C, H, W)`` with 1, 3 or 4 channels, of any
                backend.

        Returns:
            A PIL image.

        Raises:
            ImportError: Pillow is not installed.
            ValueError: the shape is not ``(C, H, W)`` with 1, 3 or 4 channels.
            TypeError: the array is not uint8 or not numeric.
        """
        Image = _pil()
        a = as_numpy(_numeric("ToPIL", array))
        if a.ndim != 3 or a.shape[0] not in (1, 3, 4):
            raise ValueError(
                f"ToPIL: expected an array of shape (C, H, W) with 1, 3 or 4 channels, got "
                f"{a.shape}"
            )
        if a.dtype != "uint8":
            raise TypeError(
                f"ToPIL: expected uint8 pixels (0..255), got dtype {a.dtype}; scale them and "
                f"convert with AsType('uint8') first."
            )
        a = a.transpose(1, 2, 0)
        return Image.fromarray(a[:, :, 0] if a.shape[2] == 1 else a)


class RandomHorizontalFlip:
    """Flip left-right with probability ``p`` (a PIL image, or an array on its last axis).

    Draws from Python's ``random`` module.

    Args:
        p: the probability of a flip, in ``[0, 1]``.

    Raises:
        ValueError: ``p`` is outside ``[0, 1]``.
    """

    def __init__(self, p: float = 0.5) -> None:
        p = real_number("RandomHorizontalFlip", "p", p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"RandomHorizontalFlip: p must be in [0, 1], got {p}")
        self.p = p

    def __call__(self, img: Any) -> Any:
        """Flip ``img``, or return it as it is.

        Args:
            img: a PIL image or an array (flipped on its last axis).

        Returns:
            The flipped image or array, or ``img`` itself (a list made an array, flipped or
                not).

        Raises:
            TypeError: ``img`` is neither a PIL image nor a numeric array.
            ValueError: ``img`` is a 0-d array.
        """
        # the input is checked before the draw: a wrong one fails on every call, not only
        # when a flip is drawn, and leaves ``random``'s state as it was
        if is_pil_image(img):
            if random.random() >= self.p:
                return img
            return img.transpose(_pil().Transpose.FLIP_LEFT_RIGHT)
        img = _numeric("RandomHorizontalFlip", img)
        if img.ndim == 0:
            raise ValueError("RandomHorizontalFlip: a 0-d array has no axis to flip")
        if random.random() >= self.p:
            return img
        return get_array_module(img).flip(img, axis=-1)


# -- arrays -------------------------------------------------------------------------------


class Normalize:
    """``(x - mean) / std``; a sequence ``mean``/``std`` applies per channel (axis 0).

    Integer data (uint8 pixels) is computed in float64, never in its own dtype (where
    subtracting the mean would wrap around).

    Args:
        mean: a number, or one per channel (a list, a tuple or a 1-d array, as torchvision
            takes).
        std: a number, or one per channel (no zeros).

    Attributes:
        mean: as given; assigning it later is checked as the constructor checks it (its
            length against ``std``'s at the next call, so that both can be changed).
        std: as given, assigned likewise.

    Raises:
        TypeError: ``mean`` or ``std`` is not a number or a 1-d sequence of numbers.
        ValueError: ``mean`` or ``std`` is empty or holds nan, ``std`` holds a zero, or they
            give different numbers of per-channel values (one value serves every channel).
    """

    def __init__(self, mean: float | Sequence[float] = 0, std: float | Sequence[float] = 1) -> None:
        self.mean = mean
        self.std = std
        m, s = self._mean_values, self._std_values
        if (
            isinstance(m, tuple)
            and isinstance(s, tuple)
            and len(m) != len(s)
            and 1 not in (len(m), len(s))
        ):
            raise ValueError(
                f"Normalize: mean has {len(m)} per-channel values but std has {len(s)}; give "
                f"one per channel for both (or one number)."
            )

    @staticmethod
    def _values(name: str, v: Any) -> float | tuple[float, ...]:
        """``v`` checked, as a float or a tuple of floats (one per channel)."""
        ndim = getattr(v, "ndim", 0)
        if ndim:  # an array of any backend
            if ndim != 1:
                raise TypeError(
                    f"Normalize: {name} must be a number or a 1-d sequence of numbers, got an "
                    f"array of shape {tuple(v.shape)}"
                )
            values = as_numpy(v).tolist()
        elif isinstance(v, Sequence) and not isinstance(v, (str, bytes)):
            values = list(v)
        else:
            return real_number("Normalize", name, v)
        if not values:
            raise ValueError(f"Normalize: {name} is an empty sequence")
        return tuple(real_number("Normalize", name, e) for e in values)

    @property
    def mean(self) -> Any:
        """The mean, as given."""
        return self._mean

    @mean.setter
    def mean(self, value: Any) -> None:
        self._mean_values = self._values("mean", value)
        self._mean = value

    @property
    def std(self) -> Any:
        """The standard deviation, as given."""
        return self._std

    @std.setter
    def std(self, value: Any) -> None:
        values = self._values("std", value)
        if 0.0 in (values if isinstance(values, tuple) else (values,)):
            raise ValueError(f"Normalize: std must not be zero, got {value!r}")
        self._std_values = values
        self._std = value

    def _stat(self, value: float | tuple[float, ...], array: Any) -> Any:
        if not isinstance(value, tuple):
            return value
        xp = get_array_module(array)
        v = xp.asarray(value, dtype=array.dtype, device=device_of(array))
        n = v.shape[0]
        if n == 1:  # one value for every channel: shaped to broadcast without adding an axis
            return xp.reshape(v, (1,) * array.ndim)
        if array.ndim == 0 or n != array.shape[0]:
            raise ValueError(
                f"Normalize: {n} per-channel values for an array of shape {array.shape} "
                f"(expected {n} channels on axis 0)"
            )
        return xp.reshape(v, (n,) + (1,) * (array.ndim - 1))

    def __call__(self, array: Any) -> Any:
        """Normalize ``array``.

        Args:
            array: a numeric array (or list); per-channel values apply along axis 0.

        Returns:
            ``(array - mean) / std``, floating point.

        Raises:
            TypeError: ``array`` is not numeric.
            ValueError: the number of per-channel values does not match axis 0.
        """
        array = _numeric("Normalize", array)
        backend = backend_of(array)
        if backend.dtype_kind(array.dtype) not in "fc":
            array = backend.astype(array, backend.xp.float64)
        mean, std = self._stat(self._mean_values, array), self._stat(self._std_values, array)
        return (array - mean) / std


class Flatten:
    """Reshape to one dimension, into a new array (DeZero's ``ndarray.flatten()``)."""

    def __call__(self, array: Any) -> Any:
        """Flatten ``array``.

        Args:
            array: a numeric array (or list).

        Returns:
            A new 1-d array of the same backend, never a view of ``array``: a transform
                after it may work in place without writing into the data set.

        Raises:
            TypeError: ``array`` is not numeric.
        """
        array = _numeric("Flatten", array)
        xp = get_array_module(array)
        return xp.asarray(xp.reshape(array, (-1,)), copy=True)


class AsType:
    """Convert arrays to ``dtype``.

    Args:
        dtype: a dtype or its name, e.g. ``'float32'``.

    Raises:
        TypeError: ``dtype`` is not a dtype.
    """

    def __init__(self, dtype: Any = "float32") -> None:
        self.dtype = _check_dtype(type(self).__name__, dtype)

    def __call__(self, array: Any) -> Any:
        """Convert ``array``.

        Args:
            array: a numeric array (or list).

        Returns:
            A new array of ``dtype`` on the same backend.

        Raises:
            TypeError: ``array`` is not numeric.
        """
        array = _numeric(type(self).__name__, array)
        return backend_of(array).astype(array, self.dtype)


ToFloat = AsType
"""DeZero's name for ``AsType`` (``float32`` by default)."""


class ToInt(AsType):
    """Convert arrays to an integer dtype.

    Args:
        dtype: the integer dtype or its name.

    Raises:
        TypeError: ``dtype`` is not a dtype.
    """

    def __init__(self, dtype: Any = "int64") -> None:
        super().__init__(dtype)
