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
