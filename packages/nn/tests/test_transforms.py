"""Transforms: array transforms against numpy, image transforms through Pillow."""

import builtins

import numpy as np
import pytest

from zerograd_nn import transforms as T


def test_compose_applies_in_order():
    f = T.Compose([lambda x: x + 1, lambda x: x * 10])
    assert f(1) == 20
    assert T.Compose()(5) == 5


def test_normalize_scalar_keeps_float32():
    x = np.array([0.0, 127.5, 255.0], dtype=np.float32)
    y = T.Normalize(127.5, 127.5)(x)
    np.testing.assert_allclose(y, [-1.0, 0.0, 1.0])
    assert y.dtype == np.float32


def test_normalize_per_channel():
    x = np.ones((3, 2, 2), dtype=np.float32) * np.array([1, 2, 3], np.float32)[:, None, None]
    y = T.Normalize(mean=[1, 2, 3], std=[1, 2, 4])(x)
    np.testing.assert_allclose(y, 0.0)
    assert y.dtype == np.float32
    with pytest.raises(ValueError, match=r"Normalize: 2 per-channel values .* shape \(3, 2, 2\)"):
        T.Normalize(mean=[1, 2])(x)


def test_flatten_astype_toint():
    x = np.arange(6, dtype=np.uint8).reshape(1, 2, 3)
    assert T.Flatten()(x).shape == (6,)
    assert T.ToFloat()(x).dtype == np.float32
    assert T.AsType(np.float64)(x).dtype == np.float64
    assert T.ToInt()(np.array([1.7])).tolist() == [1]
    assert T.ToInt()(np.array([1.7])).dtype == np.int64


def test_pair():
    assert T.pair(3) == (3, 3) and T.pair((2, 5)) == (2, 5)
    with pytest.raises(ValueError, match="pair of ints"):
        T.pair((1, 2, 3))


def test_random_horizontal_flip_array(monkeypatch):
    x = np.arange(6).reshape(1, 2, 3)
    monkeypatch.setattr(T.random, "random", lambda: 0.1)
    np.testing.assert_array_equal(T.RandomHorizontalFlip(0.5)(x), x[:, :, ::-1])
    monkeypatch.setattr(T.random, "random", lambda: 0.9)
    assert T.RandomHorizontalFlip(0.5)(x) is x
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\]"):
        T.RandomHorizontalFlip(2)


def test_to_array_passes_arrays_and_rejects_others():
    x = np.zeros((1, 2, 2))
    assert T.ToArray()(x) is x
    with pytest.raises(TypeError, match="ToArray: expected a PIL image or an array, got list"):
        T.ToArray()([1, 2])


def test_missing_pillow_names_the_install_command(monkeypatch):
    real_import = builtins.__import__

    def no_pil(name, *args, **kwargs):
        if name == "PIL" or name.startswith("PIL."):
            raise ImportError("No module named 'PIL'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pil)
    with pytest.raises(ImportError, match=r"pip install pillow.*zerograd-nn\[images\]"):
        T.Resize(4)(object())


@pytest.fixture
def Image():
    try:
        from PIL import Image
    except ImportError:
        pytest.skip("Pillow is not installed (pip install pillow): image transforms untested")
    return Image


def test_image_pipeline(Image):
    a = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)  # H=4, W=6, RGB
    img = T.ToPIL()(a.transpose(2, 0, 1))
    assert img.size == (6, 4)
    np.testing.assert_array_equal(np.asarray(img), a)
    crop = T.CenterCrop((2, 2))(img)
    np.testing.assert_array_equal(np.asarray(crop), a[1:3, 2:4])
    back = T.ToArray()(crop)
    assert back.shape == (3, 2, 2) and back.dtype == np.float32
    np.testing.assert_array_equal(back, a[1:3, 2:4].transpose(2, 0, 1))
    assert T.Resize(3)(img).size == (3, 3)
    assert T.Resize((8, 2))(img).size == (8, 2)
    with pytest.raises(ValueError, match="larger than the image"):
        T.CenterCrop(10)(img)


def test_image_flip_and_convert(Image, monkeypatch):
    a = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    img = Image.fromarray(a)
    monkeypatch.setattr(T.random, "random", lambda: 0.0)
    np.testing.assert_array_equal(np.asarray(T.RandomHorizontalFlip()(img)), a[:, ::-1])
    np.testing.assert_array_equal(np.asarray(T.Convert("BGR")(img)), a[:, :, ::-1])
    gray = T.Convert("L")(img)
    assert gray.mode == "L"
    assert T.ToArray()(gray).shape == (1, 2, 3)
    assert T.ToPIL()(np.zeros((1, 2, 3), np.uint8)).mode == "L"


# -- wrong types, values and shapes: one clear error ---------------------------------------


def test_compose_checks_its_transforms():
    with pytest.raises(
        TypeError, match=r"^Compose: transforms must be a list of callables, got int"
    ):
        T.Compose(5)
    with pytest.raises(TypeError, match=r"^Compose: transforms\[1\] is 'a', not a callable"):
        T.Compose([T.Flatten(), "a"])


def test_normalize_of_uint8_pixels_does_not_wrap_around():
    x = np.array([[[0, 10]], [[200, 255]]], dtype=np.uint8)  # (C=2, H=1, W=2)
    y = T.Normalize([5, 100], 2)(x)
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, [[[-2.5, 2.5]], [[50.0, 77.5]]])  # not (0 - 5) % 256 / 2
    np.testing.assert_allclose(T.Normalize(20, 10)(x[0]), [[-2.0, -1.0]])


def test_normalize_checks_its_statistics():
    with pytest.raises(ValueError, match=r"^Normalize: std must not be zero, got 0"):
        T.Normalize(0, 0)
    with pytest.raises(ValueError, match=r"^Normalize: std must not be zero, got \[1, 0\]"):
        T.Normalize([0, 0], [1, 0])
    with pytest.raises(TypeError, match=r"^Normalize: mean must be a real number, got 'a'"):
        T.Normalize("a")
    with pytest.raises(ValueError, match=r"^Normalize: 2 per-channel values for an array of shape"):
        T.Normalize([1, 2])(np.zeros((3, 2, 2)))
    with pytest.raises(ValueError, match=r"per-channel values for an array of shape \(\)"):
        T.Normalize([1, 2])(np.array(1.0))
    np.testing.assert_allclose(T.Normalize(1, 2)([3.0, 5.0]), [1.0, 2.0])  # a list
    y = T.Normalize(np.float32(1), np.float64(2))(np.ones(2, np.float32))
    assert y.dtype == np.float32


@pytest.mark.parametrize("f", [T.Flatten(), T.AsType(), T.ToInt(), T.Normalize()])
def test_array_transforms_refuse_non_arrays(f):
    name = type(f).__name__
    with pytest.raises(TypeError, match=rf"^{name}: expected a numeric array \(or a list\), got"):
        f(None)
    with pytest.raises(TypeError, match=rf"^{name}: .* got an array of dtype <U1"):
        f(np.array(["a"]))


def test_dtypes_are_checked_when_the_transform_is_made():
    for cls in (T.AsType, T.ToInt, T.ToArray):
        with pytest.raises(TypeError, match=rf"^{cls.__name__}: 'foo' is not a dtype"):
            cls("foo")
    assert T.AsType("float32")([1, 2]).dtype == np.float32  # lists are converted


def test_random_horizontal_flip_checks():
    with pytest.raises(TypeError, match=r"^RandomHorizontalFlip: p must be a real number"):
        T.RandomHorizontalFlip("a")
    with pytest.raises(ValueError, match=r"^RandomHorizontalFlip: a 0-d array has no axis"):
        T.RandomHorizontalFlip(1.0)(np.array(1.0))


@pytest.mark.parametrize("cls", [T.Resize, T.CenterCrop])
def test_image_sizes_are_checked(cls):
    name = cls.__name__
    with pytest.raises(ValueError, match=rf"^{name}: size must be positive, got 0"):
        cls(0)
    with pytest.raises(ValueError, match=rf"^{name}: size must be positive, got \(2, -1\)"):
        cls((2, -1))
    with pytest.raises(TypeError, match=rf"^{name}: size: expected an int or a pair of ints"):
        cls(2.5)
    assert cls(np.int64(3)).size == (3, 3)


@pytest.mark.parametrize("f", [T.Resize(2), T.CenterCrop(1), T.Convert("L")])
def test_image_transforms_refuse_arrays(Image, f):
    with pytest.raises(TypeError, match=rf"^{type(f).__name__}: expected a PIL image, got ndarray"):
        f(np.zeros((3, 4, 4), np.uint8))


def test_to_pil_checks_shape_and_dtype(Image):
    with pytest.raises(ValueError, match=r"^ToPIL: expected an array of shape \(C, H, W\) with 1"):
        T.ToPIL()(np.zeros((2, 2), np.uint8))
    with pytest.raises(ValueError, match=r"with 1, 3 or 4 channels, got \(2, 3, 3\)"):
        T.ToPIL()(np.zeros((2, 3, 3), np.uint8))
    with pytest.raises(
        TypeError, match=r"^ToPIL: expected uint8 pixels \(0..255\), got dtype float"
    ):
        T.ToPIL()(np.zeros((3, 2, 2)))
    assert T.ToPIL()(np.zeros((4, 2, 3), np.uint8)).mode == "RGBA"


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (np.array(1.0), ValueError, r"^RandomHorizontalFlip: a 0-d array has no axis to flip"),
        (None, TypeError, r"^RandomHorizontalFlip: expected a numeric array .* got NoneType"),
        ("abc", TypeError, r"^RandomHorizontalFlip: expected a numeric array .* got str"),
    ],
)
@pytest.mark.parametrize("p", [0.0, 0.5, 1.0])
def test_random_horizontal_flip_refuses_bad_input_whatever_the_draw(bad, error, message, p):
    # a wrong input fails on every call, not only on those that draw a flip, and draws nothing
    import random

    flip = T.RandomHorizontalFlip(p)
    random.seed(3)
    state = random.getstate()
    for _ in range(8):
        with pytest.raises(error, match=message):
            flip(bad)
        assert random.getstate() == state


def test_random_horizontal_flip_of_a_list_gives_an_array_either_way(monkeypatch):
    monkeypatch.setattr(T.random, "random", lambda: 0.9)  # no flip
    kept = T.RandomHorizontalFlip(0.5)([[1, 2, 3]])
    monkeypatch.setattr(T.random, "random", lambda: 0.1)  # a flip
    flipped = T.RandomHorizontalFlip(0.5)([[1, 2, 3]])
    assert isinstance(kept, np.ndarray) and isinstance(flipped, np.ndarray)
    np.testing.assert_array_equal(kept, [[1, 2, 3]])
    np.testing.assert_array_equal(flipped, [[3, 2, 1]])


@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (1, 2, 3)])
def test_normalize_with_one_per_channel_value_keeps_the_shape(shape):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    y = T.Normalize([1.0], [2.0])(x)
    assert y.shape == shape and y.dtype == np.float32
    np.testing.assert_allclose(y, (x - 1.0) / 2.0)
    np.testing.assert_array_equal(y, T.Normalize(1.0, 2.0)(x))  # as the scalars give


def test_normalize_refuses_mean_and_std_of_different_lengths_when_made():
    # the mistake showed only at the first item, as a count that named neither
    with pytest.raises(
        ValueError,
        match=r"^Normalize: mean has 3 per-channel values but std has 2; give one per channel "
        r"for both \(or one number\)",
    ):
        T.Normalize([0.5, 0.5, 0.5], [0.2, 0.2])
    x = np.full((3, 1, 1), 2.0, np.float32)
    np.testing.assert_allclose(T.Normalize([1, 1, 1], [2])(x), 0.5)  # one value: every channel
    np.testing.assert_allclose(T.Normalize(1, [2, 2, 2])(x), 0.5)


@pytest.mark.parametrize("shape", [(2, 3), (4,), ()])
def test_flatten_gives_a_new_array_as_dezero_does(shape):
    # DeZero's Flatten is ndarray.flatten(), a copy: a later transform working in place
    # must not write into the data set's own array
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    before = data.copy()

    def halve(x):
        x /= 2
        return x

    y = T.Compose([T.Flatten(), halve])(data)
    np.testing.assert_array_equal(data, before)
    np.testing.assert_array_equal(y, before.reshape(-1) / 2)
    assert not np.shares_memory(T.Flatten()(data), data)


@pytest.mark.parametrize("cls", [T.Flatten, T.ToFloat, T.Normalize, T.ToArray])
def test_a_transform_class_given_for_a_transform_is_refused(cls):
    # Compose([Normalize]) made a Normalize of each item (its mean) and passed that on;
    # the others failed in their constructor, naming the item as a dtype or a p
    from zerograd_nn.datasets import Spiral

    name = cls.__name__
    with pytest.raises(
        TypeError,
        match=rf"^Compose: transforms\[1\] is the class {name}, not a transform; give an "
        rf"instance: {name}\(\)",
    ):
        T.Compose([T.Flatten(), cls])
    with pytest.raises(
        TypeError, match=rf"^Spiral: transform is the class {name}, not a transform; give an "
    ):
        Spiral(transform=cls)
    ds = Spiral()
    with pytest.raises(TypeError, match=rf"^Spiral: target_transform is the class {name}"):
        ds.target_transform = cls
    assert ds.target_transform(3) == 3  # unchanged: still the identity
    assert T.Compose([np.float32])(np.ones(2)).dtype == np.float32  # other classes may serve


def test_convert_checks_its_mode(Image):
    with pytest.raises(TypeError, match=r"^Convert: mode must be a PIL mode's name .* got 3"):
        T.Convert(3)
    img = Image.new("L", (2, 2), 7)
    with pytest.raises(
        ValueError, match=r"^Convert: cannot convert a mode 'L' image to mode 'XYZ' \(Pillow: "
    ):
        T.Convert("XYZ")(img)
    assert img.mode == "L" and img.getpixel((0, 0)) == 7  # the image as it was
