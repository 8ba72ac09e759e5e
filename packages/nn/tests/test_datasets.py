"""Datasets: generated data against DeZero's generation, standard files the tests write."""

import gzip
import hashlib
import http.server
import io
import os
import re
import struct
import tarfile
import threading

import numpy as np
import pytest

from zerograd_nn import datasets as D
from zerograd_nn.transforms import Compose, Flatten, Normalize, ToFloat


def dezero_spiral(train):
    """DeZero's get_spiral, point by point, as the book writes it."""
    np.random.seed(1984 if train else 2020)
    x = np.zeros((300, 2), dtype=np.float32)
    t = np.zeros(300, dtype=np.int64)
    for j in range(3):
        for i in range(100):
            rate = i / 100
            theta = j * 4.0 + 4.0 * rate + np.random.randn() * 0.2
            x[100 * j + i] = [rate * np.sin(theta), rate * np.cos(theta)]
            t[100 * j + i] = j
    idx = np.random.permutation(300)
    return x[idx], t[idx]


@pytest.mark.parametrize("train", [True, False])
def test_spiral_matches_dezero(train):
    ds = D.Spiral(train=train)
    x, t = dezero_spiral(train)
    np.testing.assert_array_equal(ds.data, x)
    np.testing.assert_array_equal(ds.label, t)
    assert ds.data.dtype == np.float32 and len(ds) == 300
    assert np.bincount(ds.label).tolist() == [100, 100, 100]


def test_spiral_leaves_global_random_state_alone():
    np.random.seed(5)
    a = np.random.rand()
    np.random.seed(5)
    D.Spiral()
    assert np.random.rand() == a


def test_dataset_transforms_and_index_check():
    ds = D.Spiral(transform=lambda x: x * 2, target_transform=lambda t: t + 10)
    x, t = ds[np.int64(4)]
    np.testing.assert_array_equal(x, ds.data[4] * 2)
    assert t == ds.label[4] + 10
    with pytest.raises(TypeError, match=r"Spiral\[index\]: index must be one integer"):
        ds[[1, 2]]


def test_unlabelled_dataset_gives_none():
    class Plain(D.Dataset):
        def prepare(self):
            self.data = np.arange(3)

    assert Plain()[1] == (1, None)


def test_sincurve():
    np.random.seed(0)
    train = D.SinCurve(train=True)
    test = D.SinCurve(train=False)
    assert len(train) == 999 and train.data.shape == (999, 1)
    grid = np.linspace(0, 2 * np.pi, 1000)
    np.testing.assert_allclose(test.data[:, 0], np.cos(grid[:-1]))
    np.testing.assert_array_equal(test.label[:-1], test.data[1:])
    assert np.abs(train.data[:, 0] - np.sin(grid[:-1])).max() <= 0.05
    np.random.seed(0)
    np.testing.assert_array_equal(D.SinCurve().data, train.data)  # seeded: repeatable


# -- MNIST / Fashion-MNIST ------------------------------------------------------------------


def write_idx(path, array, code=0x08):
    header = bytes([0, 0, code, array.ndim]) + b"".join(struct.pack(">I", d) for d in array.shape)
    body = array.astype(array.dtype.newbyteorder(">")).tobytes()
    with gzip.open(path, "wb") as f:
        f.write(header + body)


def write_mnist(root, train=True, n=5):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n, dtype=np.uint8)
    prefix = "train" if train else "t10k"
    write_idx(root / f"{prefix}-images-idx3-ubyte.gz", images)
    write_idx(root / f"{prefix}-labels-idx1-ubyte.gz", labels)
    return images, labels


@pytest.fixture
def no_checksum(monkeypatch):
    """The test files are not the real ones: drop the known checksums."""
    monkeypatch.setattr(D.MNIST, "md5", {k: None for k in D.MNIST.md5})
    monkeypatch.setattr(D.FashionMNIST, "md5", {k: None for k in D.FashionMNIST.md5})


def test_read_idx_other_types(tmp_path):
    a = np.arange(6, dtype=">i4").reshape(2, 3) - 3
    write_idx(tmp_path / "a.gz", a, code=0x0C)
    got = D.read_idx(tmp_path / "a.gz")
    np.testing.assert_array_equal(got, a)
    assert got.dtype == np.int32 and got.flags.writeable


def test_read_idx_rejects_bad_files(tmp_path):
    (tmp_path / "x.gz").write_bytes(gzip.compress(b"\x01\x02\x03\x04"))
    with pytest.raises(ValueError, match="not an IDX file"):
        D.read_idx(tmp_path / "x.gz")
    write_idx(tmp_path / "y", np.zeros((2, 2), np.uint8))
    raw = gzip.decompress((tmp_path / "y").read_bytes())
    (tmp_path / "y.gz").write_bytes(gzip.compress(raw[:-1]))
    with pytest.raises(ValueError, match="truncated or corrupt"):
        D.read_idx(tmp_path / "y.gz")
    (tmp_path / "z.gz").write_bytes(b"not gzip at all")
    with pytest.raises(ValueError, match="cannot be read as an IDX file"):
        D.read_idx(tmp_path / "z.gz")


@pytest.mark.parametrize("cls", [D.MNIST, D.FashionMNIST])
@pytest.mark.parametrize("train", [True, False])
def test_mnist_reads_idx_files(tmp_path, no_checksum, cls, train):
    images, labels = write_mnist(tmp_path, train)
    ds = cls(train=train, root=tmp_path, transform=None)
    assert ds.data.shape == (5, 1, 28, 28) and ds.data.dtype == np.uint8
    np.testing.assert_array_equal(ds.data[:, 0], images)
    np.testing.assert_array_equal(ds.label, labels)
    assert ds.label.dtype == np.int64


@pytest.mark.parametrize("unpacked", ["images", "labels", "both"])
def test_mnist_reads_unpacked_files_as_the_datasets_page_says(tmp_path, unpacked):
    """The page says the files may be gzip'd or not; unpacked ones were called missing."""
    images, labels = write_mnist(tmp_path, train=False)
    for kind in ("images-idx3", "labels-idx1"):
        if unpacked in (kind.split("-")[0], "both"):
            gz = tmp_path / f"t10k-{kind}-ubyte.gz"
            (tmp_path / gz.stem).write_bytes(gzip.decompress(gz.read_bytes()))
            gz.unlink()
    if unpacked == "both":  # every known MD5 sum is a .gz file's: nothing is checked
        ds = D.MNIST(train=False, root=tmp_path, transform=None)
        np.testing.assert_array_equal(ds.data[:, 0], images)
        np.testing.assert_array_equal(ds.label, labels)
    else:  # the .gz file left is still checked (these are not the real files)
        with pytest.raises(ValueError, match=r"md5 checksum .* differs from the expected"):
            D.MNIST(train=False, root=tmp_path)


def test_mnist_default_transform_flattens_and_scales(tmp_path, no_checksum):
    images, _ = write_mnist(tmp_path)
    x, t = D.MNIST(root=tmp_path)[2]
    assert x.shape == (784,) and x.dtype == np.float32
    np.testing.assert_allclose(x, images[2].reshape(-1) / 255.0, rtol=1e-6)


def test_mnist_data_home_from_env(tmp_path, monkeypatch, no_checksum):
    monkeypatch.setenv("ZEROGRAD_DATA", str(tmp_path))
    (tmp_path / "mnist").mkdir()
    write_mnist(tmp_path / "mnist", train=False)
    assert len(D.MNIST(train=False)) == 5
    assert D.data_home("mnist") == tmp_path / "mnist"


def test_missing_files_name_each_file_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        D.MNIST(root=tmp_path / "nowhere")
    msg = str(info.value)
    assert "MNIST: missing data files in" in msg and str(tmp_path / "nowhere") in msg
    assert "train-images-idx3-ubyte.gz" in msg and "train-labels-idx1-ubyte.gz" in msg
    assert "download=True" in msg and "https://" in msg


def test_checksum_mismatch_is_reported(tmp_path):
    write_mnist(tmp_path)  # not the real files: the known md5 cannot match
    with pytest.raises(ValueError, match="md5 checksum .* differs from the expected"):
        D.MNIST(root=tmp_path)


def test_fetch_downloads_atomically_and_checks(tmp_path):
    src = tmp_path / "src.txt"
    src.write_bytes(b"hello")
    good = "sha256:" + hashlib.sha256(b"hello").hexdigest()
    dest = tmp_path / "cache"
    paths = D.fetch("T", dest, {"a.txt": (src.as_uri(), good)}, download=True)
    assert paths["a.txt"].read_bytes() == b"hello"
    with pytest.raises(ValueError, match="sha256 checksum"):
        D.fetch("T", dest, {"b.txt": (src.as_uri(), "sha256:" + "0" * 64)}, download=True)
    assert sorted(p.name for p in dest.iterdir()) == ["a.txt"]  # no partial file left
    with pytest.raises(ValueError, match="checksum must look like"):
        D.verify_checksum(src, "crc:1")


# -- CIFAR ---------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def small_cifar_files(monkeypatch):
    """The tests write files of a few records: drop the standard files' record counts."""
    monkeypatch.setattr(D.CIFAR10, "records", None)
    monkeypatch.setattr(D.CIFAR100, "records", None)


def cifar_bytes(n, label_bytes, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10 if label_bytes == 1 else 20, size=(n, label_bytes), dtype=np.uint8)
    if label_bytes == 2:
        labels[:, 1] += rng.integers(0, 5, size=n, dtype=np.uint8) * 20  # fine ids up to 99
    pixels = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
    return np.concatenate([labels, pixels], axis=1).tobytes(), labels, pixels


def test_cifar10_reads_binary_batches(tmp_path):
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    buf, labels, pixels = cifar_bytes(4, 1, 0)
    (folder / "test_batch.bin").write_bytes(buf)
    ds = D.CIFAR10(train=False, root=tmp_path, transform=None)
    assert ds.data.shape == (4, 3, 32, 32) and ds.data.dtype == np.uint8
    np.testing.assert_array_equal(ds.data.reshape(4, -1), pixels)
    np.testing.assert_array_equal(ds.label, labels[:, 0])
    # channel layout: the first 1024 bytes are the red plane
    np.testing.assert_array_equal(ds.data[1, 0].reshape(-1), pixels[1, :1024])
    x, _ = D.CIFAR10(train=False, root=tmp_path)[0]
    assert x.dtype == np.float32 and -1.0 <= x.min() and x.max() <= 1.0


def test_cifar10_train_concatenates_five_batches(tmp_path):
    expected = []
    for i in range(1, 6):
        buf, labels, _ = cifar_bytes(2, 1, i)
        (tmp_path / f"data_batch_{i}.bin").write_bytes(buf)
        expected.append(labels[:, 0])
    ds = D.CIFAR10(root=tmp_path)
    np.testing.assert_array_equal(ds.label, np.concatenate(expected))


def test_cifar100_from_archive_fine_and_coarse(tmp_path, monkeypatch):
    buf, labels, pixels = cifar_bytes(3, 2, 7)
    archive = tmp_path / "cifar-100-binary.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("cifar-100-binary/train.bin")
        info.size = len(buf)
        tar.addfile(info, io.BytesIO(buf))
    monkeypatch.setattr(D.CIFAR100, "archive_md5", hashlib.md5(archive.read_bytes()).hexdigest())
    fine = D.CIFAR100(root=tmp_path, transform=None)
    coarse = D.CIFAR100(root=tmp_path, label_type="coarse")
    np.testing.assert_array_equal(fine.label, labels[:, 1])
    np.testing.assert_array_equal(coarse.label, labels[:, 0])
    np.testing.assert_array_equal(fine.data.reshape(3, -1), pixels)
    with pytest.raises(ValueError, match="label_type must be 'fine' or 'coarse'"):
        D.CIFAR100(root=tmp_path, label_type="medium")


def test_cifar_missing_and_truncated(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"place either cifar-10-binary\.tar\.gz"):
        D.CIFAR10(root=tmp_path)
    path = tmp_path / "test_batch.bin"
    path.write_bytes(b"\x00" * 100)
    with pytest.raises(
        ValueError,
        match=rf"^CIFAR10: {re.escape(str(path))} holds 100 bytes, not 3073-byte records; it is "
        r"empty, truncated or not the binary version",
    ):
        D.CIFAR10(train=False, root=tmp_path)


@pytest.mark.parametrize("cls, name", [(D.CIFAR10, "test_batch.bin"), (D.CIFAR100, "test.bin")])
def test_cifar_refuses_an_empty_file_naming_it(tmp_path, cls, name):
    (tmp_path / name).write_bytes(b"")
    with pytest.raises(ValueError, match=rf"{re.escape(str(tmp_path / name))} holds 0 bytes"):
        cls(train=False, root=tmp_path)


def test_cifar_refuses_a_file_cut_at_a_record_boundary(tmp_path, monkeypatch):
    monkeypatch.setattr(D.CIFAR10, "records", {"test_batch.bin": 4})  # as for the real files
    buf, _, _ = cifar_bytes(4, 1, 0)
    path = tmp_path / "test_batch.bin"
    path.write_bytes(buf[: 3073 * 2])
    with pytest.raises(
        ValueError,
        match=rf"{re.escape(str(path))} holds 6146 bytes \(2 records\), not 4 records of 3073 "
        r"bytes; it is empty, truncated",
    ):
        D.CIFAR10(train=False, root=tmp_path)
    path.write_bytes(buf)
    assert len(D.CIFAR10(train=False, root=tmp_path)) == 4


@pytest.mark.parametrize(
    "cls, label_bytes, column, kwargs, limit",
    [
        (D.CIFAR10, 1, 0, {}, 9),
        (D.CIFAR100, 2, 1, {}, 99),
        (D.CIFAR100, 2, 0, {"label_type": "coarse"}, 19),
    ],
)
def test_cifar_refuses_labels_out_of_range(tmp_path, cls, label_bytes, column, kwargs, limit):
    buf, _, _ = cifar_bytes(3, label_bytes, 0)
    a = np.frombuffer(buf, np.uint8).reshape(3, -1).copy()
    a[2, column] = 200
    name = "test_batch.bin" if cls is D.CIFAR10 else "test.bin"
    (tmp_path / name).write_bytes(a.tobytes())
    with pytest.raises(
        ValueError,
        match=rf"^{cls.__name__}: {re.escape(str(tmp_path / name))} holds label 200 at record 2, "
        rf"but the labels are 0\.\.{limit}; the file is corrupt",
    ):
        cls(train=False, root=tmp_path, **kwargs)


def test_cifar_corrupt_archive_is_named(tmp_path, monkeypatch):
    archive = tmp_path / "cifar-10-binary.tar.gz"
    archive.write_bytes(gzip.compress(b"not a tar file at all" * 10)[:40])
    monkeypatch.setattr(D.CIFAR10, "archive_md5", hashlib.md5(archive.read_bytes()).hexdigest())
    with pytest.raises(
        ValueError, match=rf"^CIFAR10: {re.escape(str(archive))} cannot be read as a \.tar\.gz"
    ):
        D.CIFAR10(train=False, root=tmp_path)


def test_download_offline_is_one_clear_error(tmp_path, monkeypatch):
    import urllib.error
    import urllib.request

    def offline(url, *args, **kwargs):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(FileNotFoundError) as info:
        D.MNIST(root=tmp_path, download=True)
    msg = str(info.value)
    assert msg.startswith("MNIST: could not download train-images-idx3-ubyte.gz from https://")
    assert "(Temporary failure in name resolution" in msg or "name resolution" in msg
    assert f"place them in {tmp_path}:" in msg
    assert "train-images-idx3-ubyte.gz" in msg and "train-labels-idx1-ubyte.gz" in msg
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert list(tmp_path.iterdir()) == []  # no partial file left
    with pytest.raises(FileNotFoundError, match=r"^CIFAR10: could not download cifar-10-binary"):
        D.CIFAR10(root=tmp_path, download=True)


# -- text ----------------------------------------------------------------------------------


def test_text_char_dataset():
    ds = D.TextCharDataset(text="abracadabra")
    assert ds.vocab == ["a", "b", "r", "c", "d"] and ds.vocab_size == 5
    assert ds.decode(ds.data) == "abracadabr" and ds.decode(ds.label) == "bracadabra"
    x, t = ds[0]
    assert (int(x), int(t)) == (0, 1)
    np.testing.assert_array_equal(ds.encode("cab"), [3, 0, 1])
    with pytest.raises(KeyError, match="not in the vocabulary"):
        ds.encode("z")
    with pytest.raises(ValueError, match="exactly one of"):
        D.TextCharDataset()


def test_shakespear_reads_local_file(tmp_path):
    (tmp_path / "shakespear.txt").write_text("To be, or not to be", encoding="utf-8")
    ds = D.Shakespear(root=tmp_path)
    assert ds.decode(ds.data) + "e" == "To be, or not to be"
    assert ds.char_to_id["T"] == 0
    with pytest.raises(FileNotFoundError, match="shakespear.txt"):
        D.Shakespear(root=tmp_path / "empty")


def test_transform_defaults_are_dezero_like():
    assert isinstance(D.MNIST.__init__.__defaults__[1], Compose)
    t = D.MNIST.__init__.__defaults__[1].transforms
    assert [type(f) for f in t] == [Flatten, ToFloat, Normalize]


def test_label_names():
    assert D.MNIST.labels()[3] == "3"
    assert D.FashionMNIST.labels()[9] == "Ankle boot"
    assert D.CIFAR10.labels()[0] == "airplane" and len(D.CIFAR10.labels()) == 10
    fine, coarse = D.CIFAR100.labels(), D.CIFAR100.labels("coarse")
    assert len(set(fine.values())) == 100 and fine[0] == "apple" and fine[99] == "worm"
    assert len(set(coarse.values())) == 20 and coarse[19] == "vehicles_2"


def test_show_draws_a_grid(tmp_path, no_checksum, monkeypatch):
    plt = pytest.importorskip("matplotlib.pyplot", reason="matplotlib not installed: show untested")
    images, _ = write_mnist(tmp_path, n=3)
    shown = []
    monkeypatch.setattr(plt, "show", lambda: shown.append(plt.gca().images[-1].get_array()))
    D.MNIST(root=tmp_path).show(row=2, col=3)
    assert shown[0].shape == (56, 84)
    tiles = {shown[0][r * 28 : (r + 1) * 28, c * 28 : (c + 1) * 28].tobytes()
             for r in range(2) for c in range(3)}  # fmt: skip
    assert tiles <= {im.tobytes() for im in images}
    plt.close("all")


# -- constructors and items: wrong types are one clear error -------------------------------


def test_transforms_must_be_callable():
    with pytest.raises(
        TypeError,
        match=r"^Spiral: transform must be callable or None \(a transforms.Compose\), got int 5\.$",
    ):
        D.Spiral(transform=5)
    with pytest.raises(TypeError, match=r"^Spiral: target_transform must be callable or None"):
        D.Spiral(target_transform="x")


@pytest.mark.parametrize("cls", [D.MNIST, D.CIFAR10, D.Shakespear])
def test_root_must_be_a_path(cls):
    with pytest.raises(TypeError, match=rf"^{cls.__name__}: root must be a directory path or None"):
        cls(root=5)


@pytest.mark.parametrize(
    ("cls", "name", "value", "others"),
    [
        (D.MNIST, "download", 1, {}),
        (D.MNIST, "train", "test", {}),
        (D.FashionMNIST, "download", "yes", {}),
        (D.CIFAR10, "download", 1, {}),
        (D.CIFAR100, "train", 0, {}),
        (D.Shakespear, "download", 1, {}),
        (D.Shakespear, "train", None, {"download": True}),  # refused before fetching
        (D.Spiral, "train", 0, {}),
        (D.SinCurve, "train", "no", {}),
        (D.TextCharDataset, "train", 1, {"text": "abc"}),
    ],
)
def test_dataset_flags_must_be_true_or_false_and_nothing_is_fetched(
    tmp_path, monkeypatch, cls, name, value, others
):
    import urllib.request

    def no_download(url, *args, **kwargs):
        raise AssertionError(f"fetched {url}")

    monkeypatch.setattr(urllib.request, "urlopen", no_download)
    if cls not in (D.Spiral, D.SinCurve, D.TextCharDataset):
        others = {"root": tmp_path, **others}
    want = rf"^{cls.__name__}: {name} must be True or False, got {re.escape(repr(value))}$"
    with pytest.raises(TypeError, match=want):  # MNIST(download=1) went on as download=True
        cls(**others, **{name: value})
    assert list(tmp_path.iterdir()) == []


def test_get_spiral_train_must_be_true_or_false_numpys_included():
    with pytest.raises(TypeError, match=r"^get_spiral: train must be True or False, got 'test'"):
        D.get_spiral("test")  # it gave the training data
    for flag in (False, True):
        x, t = D.get_spiral(np.bool_(flag))
        np.testing.assert_array_equal(x, D.get_spiral(flag)[0])
        np.testing.assert_array_equal(D.Spiral(train=np.bool_(flag)).data, x)


def test_text_dataset_type_and_decode_checks():
    with pytest.raises(TypeError, match=r"^TextCharDataset: text must be a str, got int"):
        D.TextCharDataset(text=5)
    ds = D.TextCharDataset(text="abca")
    with pytest.raises(KeyError, match=r"id 99 is not in the vocabulary \(ids 0..2\)"):
        ds.decode([0, 99])
    assert ds.decode(np.array([2, 0])) == "ca"


def test_text_dataset_of_a_binary_file_names_the_file_and_the_encoding(tmp_path):
    path = tmp_path / "weights.npz"
    data = b"PK\x03\x04\x14\x00\x00\x00\x08\x00\xa1\xff"
    path.write_bytes(data)
    with pytest.raises(
        ValueError,
        match=r"^TextCharDataset: cannot read '.*weights\.npz' as utf-8 text: the byte 0xa1 at "
        r"offset 10 is not valid utf-8 \(invalid start byte\)\. Is it a text file\? If so, give "
        r"its encoding \(encoding='latin-1', 'cp1252', \.\.\.\)\.$",
    ):
        D.TextCharDataset(path=path)
    assert path.read_bytes() == data
    with pytest.raises(ValueError, match=r"cannot read '.*weights\.npz' as ascii text"):
        D.TextCharDataset(path=str(path), encoding="ascii")
    ds = D.TextCharDataset(path=path, encoding="latin-1")  # every byte is a latin-1 character
    assert ds.text == data.decode("latin-1") and len(ds) == len(data) - 1


def test_as_stored_tells_a_loader_when_it_may_index_the_arrays_at_once():
    from zerograd_nn import DataLoader
    from zerograd_nn.datasets import Dataset

    class Arrays(Dataset):
        def prepare(self):
            self.data, self.label = np.arange(6.0).reshape(3, 2), np.arange(3)

    class Shifted(Arrays):
        def __getitem__(self, i):
            x, t = super().__getitem__(i)
            return x + 1, t

    assert Arrays().as_stored()
    assert not Arrays(transform=lambda x: x * 2).as_stored()
    assert not Arrays(target_transform=lambda t: t).as_stored()
    assert not Shifted().as_stored()
    loader = DataLoader(Shifted(), batch_size=3, shuffle=False)
    x, _ = next(iter(loader))
    np.testing.assert_array_equal(x, np.arange(6.0).reshape(3, 2) + 1)  # through __getitem__


# -- get_file and downloads, from a local HTTP server ---------------------------------------


class FileServer:
    """A local HTTP server in a thread: ``files[path] = bytes`` serves them whole,
    ``short[path] = (bytes, length)`` announces ``length`` and closes after ``bytes``,
    ``chunked_cut[path] = bytes`` sends one chunk and closes before the last one."""

    def __init__(self):
        self.files, self.short, self.chunked_cut, self.requests = {}, {}, {}, []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                path = self.path.partition("?")[0]
                server.requests.append(path)
                self.close_connection = True
                if path in server.files:
                    body = server.files[path]
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                elif path in server.short:
                    body, length = server.short[path]
                    self.send_response(200)
                    self.send_header("Content-Length", str(length))
                    self.end_headers()
                    self.wfile.write(body)
                elif path in server.chunked_cut:
                    body = server.chunked_cut[path]
                    self.send_response(200)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(body), body))
                else:
                    self.send_error(404)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def server():
    s = FileServer()
    yield s
    s.close()


@pytest.fixture
def data_env(tmp_path, monkeypatch):
    """An empty ``$ZEROGRAD_DATA``: get_file's folder is ``<it>/downloads``."""
    monkeypatch.setenv("ZEROGRAD_DATA", str(tmp_path / "data"))
    return tmp_path / "data"


def test_get_file_downloads_once_into_the_data_folder(server, data_env):
    server.files["/images/zebra.jpg"] = b"\xff\xd8 a zebra"
    path = D.get_file(server.url("/images/zebra.jpg"))
    assert isinstance(path, str)
    assert path == str(data_env / "downloads" / "zebra.jpg")
    assert D.data_home(D.DOWNLOADS) == data_env / "downloads"
    assert open(path, "rb").read() == b"\xff\xd8 a zebra"
    assert D.get_file(server.url("/images/zebra.jpg")) == path  # in the cache: no download
    assert server.requests == ["/images/zebra.jpg"]
    assert sorted(os.listdir(data_env / "downloads")) == ["zebra.jpg"]


def test_get_file_names_the_file_as_dezero_or_as_asked(server, data_env, tmp_path):
    server.files["/raw/input.txt"] = b"To be"
    server.files["/dir/a%20b.txt"] = b"spaced"
    path = D.get_file(server.url("/raw/input.txt"), "shakespear.txt")  # DeZero's Shakespear
    assert os.path.basename(path) == "shakespear.txt" and open(path).read() == "To be"
    assert os.path.basename(D.get_file(server.url("/dir/a%20b.txt?raw=true"))) == "a b.txt"
    mine = D.get_file(server.url("/raw/input.txt"), root=tmp_path / "mine")
    assert mine == str(tmp_path / "mine" / "input.txt")


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        ((b"https://x/a",), {}, TypeError, "get_file: url must be a string, got b'https://x/a'"),
        (("zebra.jpg",), {}, ValueError, "'zebra.jpg' is not a URL (no scheme such as https://)"),
        (("https://host/dir/",), {}, ValueError, "ends without a file name; pass one"),
        (("https://host/a",), {"file_name": 3}, TypeError, "file_name must be a string or None"),
        (("https://host/a",), {"file_name": "sub/a"}, ValueError, "a plain file name, without"),
        (("https://host/a",), {"file_name": ".."}, ValueError, "a plain file name, without"),
        (("https://host/a",), {"root": 3}, TypeError, "get_file: root must be a directory path"),
    ],
)
def test_get_file_refuses_bad_arguments_and_touches_nothing(data_env, args, kwargs, error, message):
    with pytest.raises(error) as info:
        D.get_file(*args, **kwargs)
    assert message in str(info.value)
    assert not data_env.exists()


def test_get_file_failure_is_one_clear_error_and_leaves_nothing(server, data_env):
    """The message gives the HTTP status with its reason (urllib's ``reason`` alone was a
    bare "(Not Found)"); the folders the call created (``$ZEROGRAD_DATA`` and its
    ``downloads``) are removed again: they were left behind, empty."""
    url = server.url("/missing.npz")
    with pytest.raises(FileNotFoundError) as info:
        D.get_file(url)
    folder = data_env / "downloads"
    assert str(info.value) == (
        f"get_file: could not download missing.npz from {url} (HTTP Error 404: Not Found). "
        f"Download these files elsewhere and place them in {folder}:\n"
        f"  missing.npz   (from {url})\n"
        f"(or pass root=<dir>, or set ZEROGRAD_DATA to the parent directory)."
    )
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert not data_env.exists()
    assert os.listdir(data_env.parent) == []


def test_a_failed_download_removes_only_the_folders_it_created(server, tmp_path):
    """root=<mine>/a/b with <mine> there already: a and b go, <mine> stays; a folder the
    user had, empty or not, is never removed."""
    mine = tmp_path / "mine"
    mine.mkdir()
    url = server.url("/missing.npz")
    with pytest.raises(FileNotFoundError, match=r"\(HTTP Error 404: Not Found\)"):
        D.get_file(url, root=mine / "a" / "b")
    assert mine.is_dir() and os.listdir(mine) == []
    with pytest.raises(FileNotFoundError, match=r"place them in .*mine:"):
        D.get_file(url, root=mine)
    assert mine.is_dir() and os.listdir(mine) == []
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(FileNotFoundError):
        D.get_file(url, root=mine / "c")
    assert sorted(os.listdir(mine)) == ["notes.txt"]


def test_a_failed_download_keeps_the_files_fetched_before_it(server, tmp_path):
    """Of two files, the first came down complete and the second gives 404: the first is
    kept (with the folder that holds it) and the message lists only the one still to get."""
    server.files["/one.bin"] = b"one"
    files = {"one.bin": (server.url("/one.bin"), None), "two.bin": (server.url("/two.bin"), None)}
    root = tmp_path / "set"
    with pytest.raises(FileNotFoundError) as info:
        D.fetch("Pair", root, files, download=True)
    assert str(info.value) == (
        f"Pair: could not download two.bin from {files['two.bin'][0]} (HTTP Error 404: Not "
        f"Found). Download these files elsewhere and place them in {root}:\n"
        f"  two.bin   (from {files['two.bin'][0]})\n"
        f"(or pass root=<dir>, or set ZEROGRAD_DATA to the parent directory)."
    )
    assert os.listdir(root) == ["one.bin"] and (root / "one.bin").read_bytes() == b"one"


def test_a_download_interrupted_removes_its_folders(tmp_path, monkeypatch):
    """Ctrl-C during a download: the exception goes through unchanged, and the temporary
    file and the folders the call created are gone."""
    import urllib.request

    def interrupted(url, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(urllib.request, "urlopen", interrupted)
    with pytest.raises(KeyboardInterrupt):
        D.get_file("https://example.invalid/a.npz", root=tmp_path / "a" / "b")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("cut", ["short", "chunked_cut"])
def test_a_download_cut_short_is_an_error_and_never_kept(server, data_env, cut):
    """urllib returns what arrived when a connection closes early: a file announced as 100
    bytes came down as 10 and was kept as if complete (every later get_file returned it);
    a chunked one cut off raised http.client.IncompleteRead, a traceback from inside."""
    if cut == "short":
        server.short["/w.npz"] = (b"0123456789", 100)
    else:
        server.chunked_cut["/w.npz"] = b"0123456789"
    url = server.url("/w.npz")
    with pytest.raises(FileNotFoundError) as info:
        D.get_file(url)
    message = str(info.value)
    assert message.startswith(f"get_file: could not download w.npz from {url} (")
    if cut == "short":
        assert "(the connection closed after 10 of 100 bytes)" in message
    else:
        assert "(the connection closed after 10 bytes, before the end)" in message
    assert not data_env.exists()  # no part file, and no folder the call made
    server.files["/w.npz"] = b"complete"
    del (server.short if cut == "short" else server.chunked_cut)["/w.npz"]
    assert open(D.get_file(url), "rb").read() == b"complete"


@pytest.mark.parametrize("cut", ["short", "chunked_cut"])
def test_a_dataset_download_cut_short_is_refused(server, tmp_path, monkeypatch, cut):
    """Shakespear's file has no checksum: the 5 bytes of 1000 were its data set."""
    if cut == "short":
        server.short["/input.txt"] = (b"To be", 1000)
    else:
        server.chunked_cut["/input.txt"] = b"To be"
    monkeypatch.setattr(D.Shakespear, "url", server.url("/input.txt"))
    with pytest.raises(FileNotFoundError, match=r"^Shakespear: could not download shakespear"):
        D.Shakespear(root=tmp_path, download=True)
    assert tmp_path.is_dir() and list(tmp_path.iterdir()) == []  # the user's folder stays
