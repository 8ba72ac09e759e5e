"""The claims of docs/datasets.md and docs/reproducibility.md that no other test pins."""

import urllib.request
from pathlib import Path

import numpy as np
import pytest

from zerograd_nn import datasets as D


def test_sincurve_draws_its_noise_from_the_global_state_as_dezeros_does():
    """reproducibility.md: SinCurve's training noise comes from numpy's global state, as in
    DeZero (the same points after the same seed), and creating one, test data included,
    takes 1,000 draws from the sequence; Spiral takes none (test_datasets pins that)."""
    grid = np.linspace(0, 2 * np.pi, 1000)
    for train in (True, False):
        np.random.seed(3)
        noise = np.random.uniform(-0.05, 0.05, size=1000)  # DeZero's SinCurve.prepare
        after = np.random.rand()
        np.random.seed(3)
        curve = D.SinCurve(train=train)
        assert np.random.rand() == after
        want = np.sin(grid) + noise if train else np.cos(grid)
        np.testing.assert_array_equal(curve.data[:, 0], want[:-1])
        np.testing.assert_array_equal(curve.label[:, 0], want[1:])


def test_the_cache_is_zerograd_data_else_a_folder_in_the_home(monkeypatch, tmp_path):
    """datasets.md: ``$ZEROGRAD_DATA`` when set, else ``~/.zerograd/datasets``."""
    monkeypatch.delenv("ZEROGRAD_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert D.data_home() == tmp_path / ".zerograd" / "datasets"
    assert D.data_home("mnist") == tmp_path / ".zerograd" / "datasets" / "mnist"
    monkeypatch.setenv("ZEROGRAD_DATA", str(tmp_path / "cache"))
    assert D.data_home() == tmp_path / "cache"


def test_get_file_keeps_its_files_in_the_downloads_folder_of_the_cache(monkeypatch, tmp_path):
    """datasets.md: ``get_file`` downloads into ``~/.zerograd/datasets/downloads`` (or
    ``$ZEROGRAD_DATA/downloads``), then finds the file there."""
    monkeypatch.delenv("ZEROGRAD_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    src = tmp_path / "zebra.jpg"
    src.write_bytes(b"a zebra")
    path = D.get_file(src.as_uri())
    assert path == str(tmp_path / ".zerograd" / "datasets" / "downloads" / "zebra.jpg")
    src.unlink()
    assert D.get_file(src.as_uri()) == path  # found: nothing fetched
    assert open(path, "rb").read() == b"a zebra"


@pytest.mark.parametrize(
    "cls, folder",
    [
        (D.MNIST, "mnist"),
        (D.FashionMNIST, "fashion-mnist"),
        (D.CIFAR10, "cifar-10"),
        (D.CIFAR100, "cifar-100"),
        (D.Shakespear, "shakespear"),
    ],
)
def test_each_data_set_reads_its_folder_of_the_cache_and_fetches_nothing(
    monkeypatch, tmp_path, cls, folder
):
    """datasets.md's table of folders, and "nothing is downloaded unless you pass
    download=True" (reproducibility.md too): a missing file is an error naming the data
    set's folder of the cache, with nothing fetched and nothing written."""

    def no_download(url, *args, **kwargs):
        raise AssertionError(f"fetched {url}")

    monkeypatch.setattr(urllib.request, "urlopen", no_download)
    monkeypatch.setenv("ZEROGRAD_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError) as info:
        cls()
    assert str(info.value).startswith(f"{cls.__name__}: missing data")
    assert str(tmp_path / folder) in str(info.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("inside", ["", "cifar-100-binary"])
def test_cifar100_reads_its_extracted_files_here_or_in_their_folder(monkeypatch, tmp_path, inside):
    """datasets.md: CIFAR100 takes the archive, or its extracted train.bin and test.bin,
    in its folder or in cifar-100-binary/ (the archive's own folder)."""
    monkeypatch.setattr(D.CIFAR100, "records", None)  # files of a few records
    rng = np.random.default_rng(0)
    where = Path(tmp_path, inside)
    where.mkdir(exist_ok=True)
    written = {}
    for name in ("train.bin", "test.bin"):
        labels = rng.integers(0, 100, size=(3, 2), dtype=np.uint8)  # coarse, fine
        pixels = rng.integers(0, 256, size=(3, 3072), dtype=np.uint8)
        (where / name).write_bytes(np.concatenate([labels, pixels], axis=1).tobytes())
        written[name] = labels, pixels
    for train, name in ((True, "train.bin"), (False, "test.bin")):
        ds = D.CIFAR100(train=train, root=tmp_path, transform=None)
        labels, pixels = written[name]
        np.testing.assert_array_equal(ds.label, labels[:, 1])
        np.testing.assert_array_equal(ds.data.reshape(3, -1), pixels)
