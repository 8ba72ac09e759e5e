"""Data sets, transforms and loaders as a DeZero or PyTorch user meets them: edge cases."""

import gzip

import numpy as np
import pytest
from unprivileged import unprivileged

from zerograd_nn import DataLoader
from zerograd_nn import datasets as D
from zerograd_nn import transforms as T


def test_transforms_take_the_scalars_a_dataset_item_is():
    # a 1-d dataset's items (labels, character ids) are numpy scalars: DeZero's AsType and
    # Normalize take them, so target_transform=ToInt() works on any dataset
    ds = D.Spiral(target_transform=T.ToInt("int32"))
    x, t = ds[0]
    assert t.dtype == np.int32 and int(t) == int(ds.label[0])
    text = D.TextCharDataset(text="hello", transform=T.ToFloat())
    assert text[1][0].dtype == np.float32 and float(text[1][0]) == 1.0
    assert float(T.Normalize(1.0, 2.0)(np.float32(3.0))) == 1.0
    assert float(T.Normalize(1.0, 2.0)(3.0)) == 1.0
    assert T.Flatten()(np.int64(7)).tolist() == [7]
    _, t = next(iter(DataLoader(ds, 4, shuffle=False)))
    assert t.dtype == np.int32 and t.tolist() == ds.label[:4].tolist()
    with pytest.raises(TypeError, match="expected a numeric array"):
        T.ToFloat()("3")


@pytest.mark.parametrize(
    ("transform", "got"),
    [(lambda v: None, "NoneType"), (lambda v: "abc", "str"), (lambda v: {"x": v}, "dict")],
)
def test_a_transform_returning_no_numbers_is_one_clear_error(transform, got):
    # a transform that forgets its return gave a batch of None (an object array) that
    # failed far away, in the model
    loader = DataLoader(D.Spiral(transform=transform), 4, shuffle=False)
    with pytest.raises(TypeError, match=rf"DataLoader: dataset\[0\] has x of type {got}, not "):
        next(iter(loader))
    assert loader.iteration == 0  # nothing served
    ok = DataLoader(D.Spiral(target_transform=lambda t: None if t < 0 else "label"), 4)
    with pytest.raises(TypeError, match=r"has t of type str, not a number or an array"):
        next(iter(ok))


def test_a_transform_returning_pil_images_is_one_clear_error():
    # np.asarray of a PIL image is its (H, W, C) pixels: the batch came out channels-last,
    # against ToArray's (C, H, W), with nothing said
    Image = pytest.importorskip("PIL.Image", reason="Pillow is not installed")

    class Pictures(D.Dataset):
        def prepare(self):
            self.data = [Image.new("RGB", (5, 4), (i, 2, 3)) for i in range(4)]
            self.label = np.arange(4)

    loader = DataLoader(Pictures(transform=T.Resize((6, 4))), 2, shuffle=False)
    with pytest.raises(
        TypeError,
        match=r"^DataLoader: dataset\[0\] has x of type Image, a PIL image; end the transform "
        r"with transforms\.ToArray\(\) to make it an array \(C, H, W\)",
    ):
        next(iter(loader))
    assert loader.iteration == 0  # nothing served
    loader = DataLoader(Pictures(transform=T.Compose([T.Resize((6, 4)), T.ToArray()])), 2)
    x, t = next(iter(loader))
    assert x.shape == (2, 3, 4, 6) and x.dtype == np.float32


def write_idx(path, array, code=0x08):
    import gzip
    import struct

    header = bytes([0, 0, code, array.ndim]) + b"".join(struct.pack(">I", d) for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(array.dtype.newbyteorder(">")).tobytes())


@pytest.mark.parametrize(
    ("labels", "code", "images_code", "message"),
    [
        (
            np.array([0, 1, 12, 3], np.uint8),
            0x08,
            0x08,
            r"label 12 at record 2, but the labels are 0\.\.9",
        ),
        (np.array([1, -1, 2, 3], np.int8), 0x09, 0x08, r"labels of type int8"),
        (np.array([1, 0, 2, 3], np.uint8), 0x08, 0x0D, r"images of type float32"),
    ],
)
def test_mnist_refuses_a_file_of_another_data_set(
    tmp_path, monkeypatch, labels, code, images_code, message
):
    # EMNIST letters (labels 1..26) or float images in MNIST's files were taken silently:
    # cross-entropy over 10 classes then read labels it has no column for
    monkeypatch.setattr(D.MNIST, "md5", {k: None for k in D.MNIST.md5})
    images = np.arange(4 * 28 * 28).reshape(4, 28, 28) % 256
    write_idx(
        tmp_path / "train-images-idx3-ubyte.gz",
        images.astype(">f4" if images_code == 0x0D else np.uint8),
        images_code,
    )
    write_idx(tmp_path / "train-labels-idx1-ubyte.gz", labels, code)
    with pytest.raises(ValueError, match=message) as info:
        D.MNIST(root=tmp_path)
    assert "another data set" in str(info.value)


def test_an_empty_idx_file_says_it_is_empty(tmp_path):
    # it said "not an IDX file (bad magic number )"
    (tmp_path / "train-images-idx3-ubyte").write_bytes(b"")
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte: the file is empty; replace it"):
        D.read_idx(tmp_path / "train-images-idx3-ubyte")


def test_seq_loader_reads_as_its_docstring_says_when_the_batch_size_does_not_divide():
    """DeZero's batches (the book's numbers): with 11 items and batch_size 4, items 2, 4 and
    6 twice and 9 and 10 never; with a divisor, every item once."""
    import numpy as np

    from zerograd_nn import SeqDataLoader
    from zerograd_nn.datasets import TensorDataset

    def items(n, batch_size):
        ds = TensorDataset(np.arange(n, dtype=np.float32), np.arange(n))
        return sorted(int(v) for x, _ in SeqDataLoader(ds, batch_size=batch_size) for v in x)

    assert items(11, 4) == [0, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7, 8]
    assert items(12, 4) == list(range(12))


def test_text_dataset_names_a_path_it_cannot_read(tmp_path):
    # a bare "[Errno 2] No such file or directory", IsADirectoryError and LookupError
    # named neither the data set nor what to do
    missing = tmp_path / "nope.txt"
    with pytest.raises(FileNotFoundError) as info:
        D.TextCharDataset(path=missing)
    assert str(info.value).startswith(f"TextCharDataset: no file {str(missing)!r}")
    assert "text=" in str(info.value)
    with pytest.raises(IsADirectoryError) as info:
        D.TextCharDataset(path=tmp_path)
    assert str(info.value).startswith(f"TextCharDataset: {str(tmp_path)!r} is a directory")
    (tmp_path / "t.txt").write_text("hello", encoding="utf-8")
    with pytest.raises(LookupError, match=r"^TextCharDataset: unknown encoding 'utf-9'.*'latin-1'"):
        D.TextCharDataset(path=tmp_path / "t.txt", encoding="utf-9")
    with pytest.raises(TypeError, match=r"^TextCharDataset: encoding must be a str"):
        D.TextCharDataset(path=tmp_path / "t.txt", encoding=8)
    assert D.TextCharDataset(path=tmp_path / "t.txt", encoding="latin-1").text == "hello"


@pytest.mark.parametrize("attr", ["transform", "target_transform"])
def test_a_transform_set_to_none_later_means_none_as_in_the_constructor(attr):
    # ds.transform = None gave "'NoneType' object is not callable" at the first item
    ds = D.Spiral(**{attr: lambda v: v * 0})
    setattr(ds, attr, None)
    x, t = ds[3]
    np.testing.assert_array_equal(x, ds.data[3])
    assert t == ds.label[3]
    assert ds.as_stored()  # no transform: a loader may take whole batches again
    setattr(ds, attr, T.ToFloat())
    assert isinstance(getattr(ds, attr), T.ToFloat)
    with pytest.raises(TypeError, match=rf"Spiral: {attr} must be callable or None"):
        setattr(ds, attr, "float")
    assert isinstance(getattr(ds, attr), T.ToFloat)  # a refused value changes nothing


def test_normalize_takes_numpy_arrays_as_torchvision_does():
    # Normalize(np.array(mean), np.array(std)) raised "mean must be a real number"
    x = np.arange(12.0).reshape(3, 2, 2)
    mean, std = np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 4.0], np.float32)
    want = (x - np.array([1.0, 2.0, 3.0])[:, None, None]) / np.array([1.0, 2.0, 4.0])[:, None, None]
    np.testing.assert_allclose(T.Normalize(mean, std)(x), want)
    np.testing.assert_allclose(T.Normalize(mean.tolist(), range(1, 4))(x)[1], (x[1] - 2.0) / 2.0)
    np.testing.assert_allclose(T.Normalize(np.array([2.0]), np.array(4.0))(x), (x - 2.0) / 4.0)
    with pytest.raises(ValueError, match=r"^Normalize: std must not be zero, got array"):
        T.Normalize(mean, np.array([1.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match=r"^Normalize: std must be a number, not nan"):
        T.Normalize(mean, np.array([1.0, np.nan, 1.0]))
    with pytest.raises(TypeError, match=r"^Normalize: mean must be a number or a 1-d sequence"):
        T.Normalize(np.ones((3, 1)), 1.0)
    with pytest.raises(ValueError, match=r"^Normalize: std is an empty sequence"):
        T.Normalize(0.0, np.array([]))
    n = T.Normalize(0.0, 1.0)
    with pytest.raises(ValueError, match=r"^Normalize: std must not be zero"):
        n.std = np.zeros(3)  # assigned later: checked the same way, nothing changed
    assert n.std == 1.0
    n.mean = mean
    np.testing.assert_allclose(n(x), x - np.array([1.0, 2.0, 3.0])[:, None, None])


@pytest.mark.parametrize(
    "tail",
    [b"\xff" * 20, b"\x01\x05\x00\x00\x00" + b"\x00" * 15],
    ids=["invalid block type", "bad stored block length"],
)
def test_a_gzip_file_with_a_damaged_stream_is_one_clear_error(tmp_path, tail):
    # zlib's own error ("Error -3 while decompressing data: invalid block type") came out
    # of gzip's reader, naming neither the file nor what to do
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(b"\x00\x00\x08\x01\x00\x00\x00\x02ab", mtime=0)[:10] + tail)
    with pytest.raises(ValueError) as info:
        D.read_idx(path)
    msg = str(info.value)
    assert str(path) in msg and "cannot be read as an IDX file" in msg and "replace it" in msg
    assert info.value.__cause__ is None and info.value.__suppress_context__


UNREADABLE_DATA = """
import sys
from zerograd_nn import datasets as D

root = sys.argv[1]
for name, make in [
    ("mnist gz", lambda: D.MNIST(train=False, root=root + "/mnist-gz")),
    ("mnist raw", lambda: D.MNIST(train=False, root=root + "/mnist-raw")),
    ("cifar bin", lambda: D.CIFAR10(train=False, root=root + "/cifar-bin")),
    ("cifar tar", lambda: D.CIFAR10(train=False, root=root + "/cifar-tar")),
]:
    try:
        make()
    except Exception as exc:
        print(name, "|", type(exc).__name__, "|", exc, "|", exc.__suppress_context__)
"""


def test_a_data_file_that_cannot_be_read_is_one_clear_error(tmp_path):
    # a file without read permission: the checksum's open and CIFAR's read let a bare
    # "[Errno 13] Permission denied: '<path>'" out, and read_idx said "replace it"
    import os
    import subprocess
    import sys

    files = {
        "mnist-gz/t10k-images-idx3-ubyte.gz": b"x",
        "mnist-gz/t10k-labels-idx1-ubyte.gz": b"x",
        "mnist-raw/t10k-images-idx3-ubyte": b"x",
        "mnist-raw/t10k-labels-idx1-ubyte": b"x",
        "cifar-bin/test_batch.bin": b"x",
        "cifar-tar/cifar-10-binary.tar.gz": b"x",
    }
    locked = []
    for name, data in files.items():
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        if "images" in name or "labels" not in name:
            os.chmod(path, 0o000)
            locked.append(path)
    script = tmp_path / "read.py"
    script.write_text(UNREADABLE_DATA)
    cmd = unprivileged([sys.executable, str(script), str(tmp_path)])
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        for path in locked:
            os.chmod(path, 0o644)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    expected = [
        ("mnist gz", "MNIST", "mnist-gz/t10k-images-idx3-ubyte.gz"),
        ("mnist raw", "MNIST", "mnist-raw/t10k-images-idx3-ubyte"),
        ("cifar bin", "CIFAR10", "cifar-bin/test_batch.bin"),
        ("cifar tar", "CIFAR10", "cifar-tar/cifar-10-binary.tar.gz"),
    ]
    assert len(lines) == len(expected), done.stdout
    for line, (case, owner, name) in zip(lines, expected):
        assert line == (
            f"{case} | PermissionError | [Errno 13] {owner}: cannot read {tmp_path / name} "
            f"(Permission denied); make it readable (chmod u+r) or place a readable copy "
            f"there. | True"
        )


def _put_in_the_way(path, kind):
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "a folder":
        path.mkdir()
    elif kind == "a symbolic link that leads nowhere":
        path.symlink_to(path.parent / "gone")
    else:  # a loop of links
        path.symlink_to(path)


IN_THE_WAY = ["a folder", "a symbolic link that leads nowhere", "a symbolic link in a loop"]


@pytest.mark.parametrize("kind", IN_THE_WAY)
def test_a_data_file_name_taken_by_something_else_says_what_is_there(tmp_path, kind):
    # a folder or a broken link of a data file's name was reported as the file "missing",
    # asking to place a file where the user sees one already
    _put_in_the_way(tmp_path / "t10k-images-idx3-ubyte.gz", kind)
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x00")
    with pytest.raises(FileNotFoundError) as info:
        D.MNIST(train=False, root=tmp_path)
    msg = str(info.value)
    assert "  t10k-images-idx3-ubyte.gz   (from https://" in msg
    assert f"{tmp_path / 't10k-images-idx3-ubyte.gz'} is {kind}, not the file; remove it" in msg
    assert "t10k-labels" not in msg  # the unpacked labels file is there
    _put_in_the_way(tmp_path / "cifar" / "test_batch.bin", kind)
    with pytest.raises(FileNotFoundError) as info:
        D.CIFAR10(train=False, root=tmp_path / "cifar")
    msg = str(info.value)
    assert msg.startswith("CIFAR10: missing data in ")
    assert f"{tmp_path / 'cifar' / 'test_batch.bin'} is {kind}, not the file; remove it" in msg
