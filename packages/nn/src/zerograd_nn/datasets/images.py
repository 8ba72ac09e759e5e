"""Image datasets read from their standard files: MNIST, Fashion-MNIST and CIFAR-10/100.

MNIST and Fashion-MNIST come as gzip'd IDX files, CIFAR-10/100 in the *binary* version
(plain bytes, no pickle).
"""

from __future__ import annotations

import gzip
import random
import tarfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zerograd.backends import as_numpy, get_backend
from zerograd.checks import flag

from ..transforms import Compose, Flatten, Normalize, ToFloat
from .base import (
    Dataset,
    as_root,
    fetch,
    host_numpy,
    in_the_way,
    unreadable,
    verify_checksum,
)

__all__ = ["CIFAR10", "CIFAR100", "FashionMNIST", "MNIST", "read_idx"]

_MNIST_TRANSFORM = Compose([Flatten(), ToFloat(), Normalize(0.0, 255.0)])  # pixels to [0, 1]
_CIFAR_TRANSFORM = Compose([ToFloat(), Normalize(0.5 * 255, 0.5 * 255)])  # pixels to [-1, 1]
_IDX_TYPES = {0x08: "u1", 0x09: "i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | Path, owner: str = "read_idx") -> Any:
    """Read an IDX file (``.gz`` or raw), the format of MNIST, into an array.

    Args:
        path: the file; a ``.gz`` suffix means gzip-compressed.
        owner: the data set reading it, named when the file cannot be opened.

    Returns:
        A writable array of the default backend in native byte order, of the shape and
            dtype the header gives.

    Raises:
        ValueError: the file is not IDX, is truncated, or its compressed data is damaged.
        OSError: the file cannot be opened or read (no permission: ``PermissionError``);
            the message says what to do.
    """
    np = host_numpy()
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            buf = f.read()
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:  # zlib's: a damaged stream
        raise ValueError(f"{path}: cannot be read as an IDX file ({exc}); replace it.") from None
    except OSError as exc:
        raise unreadable(owner, path, exc) from None
    if not buf:
        raise ValueError(f"{path}: the file is empty; replace it with a good copy.")
    if len(buf) < 4 or buf[0] != 0 or buf[1] != 0 or buf[2] not in _IDX_TYPES:
        raise ValueError(f"{path}: not an IDX file (bad magic number {buf[:4].hex()})")
    ndim = buf[3]
    header = 4 + 4 * ndim
    dims = tuple(int.from_bytes(buf[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    dtype = np.dtype(_IDX_TYPES[buf[2]])
    count = 1
    for d in dims:
        count *= d
    if len(buf) != header + count * dtype.itemsize:
        raise ValueError(
            f"{path}: IDX header says shape {dims} ({header + count * dtype.itemsize} bytes) "
            f"but the file holds {len(buf)} bytes; it is truncated or corrupt."
        )
    a = np.frombuffer(buf, dtype=dtype, offset=header).reshape(dims)
    # parsed on the host; native byte order, a writable copy
    return get_backend().from_numpy(a.astype(dtype.newbyteorder("=")))


def _show_grid(data: Any, row: int, col: int) -> None:
    """Show ``row * col`` random images of ``data`` (N, C, H, W) in one matplotlib figure."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("show() needs matplotlib: pip install matplotlib") from None

    images = as_numpy(data)
    n, c, h, w = images.shape
    pick = [random.randrange(n) for _ in range(row * col)]
    grid = images[pick].reshape(row, col, c, h, w).transpose(0, 3, 1, 4, 2)
    grid = grid.reshape(row * h, col * w, c)
    plt.imshow(grid[:, :, 0] if c == 1 else grid, cmap="gray" if c == 1 else None)
    plt.axis("off")
    plt.show()


class _ImageFiles(Dataset):
    """An image data set read from files under ``root``: class names, ``labels()``, ``show()``."""

    folder = ""
    class_names: tuple[str, ...] = ()

    def _locate(self, root: str | Path | None, download: bool) -> None:
        flag(type(self).__name__, "download", download)
        self.root = as_root(type(self).__name__, root, self.folder)
        self.download = download

    @classmethod
    def labels(cls) -> dict[int, str]:
        """Return the class names.

        Returns:
            ``class id -> class name``.
        """
        return dict(enumerate(cls.class_names))

    def show(self, row: int = 10, col: int = 10) -> None:
        """Show a grid of random images with matplotlib's pyplot.

        Args:
            row: images per column of the grid.
            col: images per row of the grid.

        Raises:
            ImportError: matplotlib is not installed.
        """
        _show_grid(self.data, row, col)


def first_out_of_range(labels: Any, classes: int) -> int | None:
    """The index of the first label (host numpy, unsigned) of ``classes`` or more, or None."""
    bad = host_numpy().nonzero(labels >= classes)[0]
    return int(bad[0]) if bad.size else None


class MNIST(_ImageFiles):
    """MNIST digits: ``data`` (N, 1, 28, 28) uint8, ``label`` (N,) int64.

    Reads the four standard files (``train-images-idx3-ubyte.gz``, ...) from ``root``
    (default ``<data_home>/mnist``), each gzip'd or unpacked (``train-images-idx3-ubyte``;
    only a gzip'd file's MD5 sum is known, so only it is checked). The default transform
    flattens and scales to [0, 1] as DeZero's does.

    Args:
        train: the 60,000 training images (True) or the 10,000 test images.
        transform: applied to each image (default: flatten, float32, scale to [0, 1]).
        target_transform: applied to each label.
        root: the directory holding the files.
        download: fetch missing files (checked against their MD5 sums).

    Attributes:
        name: the name used in messages.
        folder: the default sub-directory of ``data_home()``.
        url: where the files are downloaded from.
        md5: each file's MD5 sum.
        class_names: the class names, by class id.
        root: the directory the files are read from.

    Raises:
        TypeError: ``train`` or ``download`` is not True or False.
        FileNotFoundError: files are missing and not downloaded (the message lists them
            and where to put them).
        ValueError: a file is corrupt, truncated or fails its checksum, or holds another
            data set's images or labels (not uint8, a label outside the classes).
    """

    name = "MNIST"
    folder = "mnist"
    url = "https://ossci-datasets.s3.amazonaws.com/mnist/"
    md5 = {
        "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
        "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
        "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
    }
    class_names = tuple(str(i) for i in range(10))

    def __init__(
        self,
        train: bool = True,
        transform: Callable[[Any], Any] | None = _MNIST_TRANSFORM,
        target_transform: Callable[[Any], Any] | None = None,
        root: str | Path | None = None,
        download: bool = False,
    ) -> None:
        self._locate(root, download)
        super().__init__(train, transform, target_transform)

    def prepare(self) -> None:
        """Read the images and labels of the split from ``root``.

        Raises:
            FileNotFoundError: files are missing and not downloaded.
            ValueError: a file is corrupt, or the images and labels do not match.
        """
        prefix = "train" if self.train else "t10k"
        names, files = [], {}
        for gz in (f"{prefix}-images-idx3-ubyte.gz", f"{prefix}-labels-idx1-ubyte.gz"):
            raw = gz[: -len(".gz")]
            if not (self.root / gz).is_file() and (self.root / raw).is_file():
                names.append(raw)  # unpacked by the user: the MD5 sum is the .gz file's
                files[raw] = (None, None)
            else:
                names.append(gz)
                files[gz] = (self.url + gz, self.md5[gz] and f"md5:{self.md5[gz]}")
        paths = fetch(self.name, self.root, files, self.download)
        images, labels = (read_idx(paths[n], self.name) for n in names)
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise ValueError(
                f"{self.name}: images {images.shape} and labels {labels.shape} in {self.root} "
                f"do not match (expected (N, H, W) and (N,))."
            )
        self._check_files(as_numpy(images), as_numpy(labels))
        backend = get_backend()
        self.data = backend.xp.reshape(images, (len(images), 1) + images.shape[1:])
        self.label = backend.astype(labels, backend.xp.int64)

    def _check_files(self, images: Any, labels: Any) -> None:
        """Refuse files of another data set: pixels not uint8, labels outside the classes."""
        np = host_numpy()
        classes = len(self.class_names)
        for what, a in (("images", images), ("labels", labels)):
            if a.dtype != np.uint8:
                raise ValueError(
                    f"{self.name}: the {what} file in {self.root} holds {what} of type {a.dtype}, "
                    f"not uint8; it belongs to another data set: place {self.name}'s own files "
                    f"there."
                )
        i = first_out_of_range(labels, classes)
        if i is not None:
            raise ValueError(
                f"{self.name}: the labels file in {self.root} holds label {int(labels[i])} at "
                f"record {i}, but the labels are 0..{classes - 1}; it is corrupt or belongs to "
                f"another data set (EMNIST's letters are 1..26): place {self.name}'s own files "
                f"there."
            )


class FashionMNIST(MNIST):
    """Fashion-MNIST (Zalando): same files, shapes and arguments as ``MNIST``; ten clothing classes.

    The default root is ``<data_home>/fashion-mnist``.
    """

    name = "FashionMNIST"
    folder = "fashion-mnist"
    url = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
    md5 = {
        "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
        "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
        "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
        "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
    }
    class_names = (
        "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
        "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
    )  # fmt: skip


class CIFAR10(_ImageFiles):
    """CIFAR-10: ``data`` (N, 3, 32, 32) uint8, ``label`` (N,) int64.

    Reads the binary version: the ``.bin`` files in ``root`` or ``root/cifar-10-batches-bin``,
    or straight from the archive ``cifar-10-binary.tar.gz`` placed in ``root`` (default
    ``<data_home>/cifar-10``). The default transform scales to [-1, 1]; DeZero's,
    ``Normalize(0.5, 0.5)`` of pixels 0 to 255, gave -1 to 509.

    Args:
        train: the 50,000 training images (True) or the 10,000 test images.
        transform: applied to each image (default: float32, scale to [-1, 1]).
        target_transform: applied to each label.
        root: the directory holding the files or the archive.
        download: fetch the archive when neither it nor the files are there.

    Attributes:
        name: the name used in messages.
        folder: the default sub-directory of ``data_home()``.
        archive: the archive's file name.
        archive_md5: the archive's MD5 sum.
        inner: the folder the archive extracts to.
        url: where the archive is downloaded from.
        label_bytes: label bytes per record (1 for CIFAR-10, 2 for CIFAR-100).
        class_names: the class names, by class id.
        root: the directory the files are read from.

    Raises:
        TypeError: ``train`` or ``download`` is not True or False.
        FileNotFoundError: neither the files nor the archive are there, and not downloaded.
        ValueError: a file or the archive is corrupt, truncated or fails its checksum.
    """

    name = "CIFAR10"
    folder = "cifar-10"
    archive = "cifar-10-binary.tar.gz"
    archive_md5 = "c32a1d4ab5d03f1284b67883e8d87530"
    inner = "cifar-10-batches-bin"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
    label_bytes = 1
    records = {"test_batch.bin": 10000, **{f"data_batch_{i}.bin": 10000 for i in range(1, 6)}}
    """Records in each standard file (fewer means a truncated file; None skips the check)."""
    class_names = (
        "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
    )  # fmt: skip

    def __init__(
        self,
        train: bool = True,
        transform: Callable[[Any], Any] | None = _CIFAR_TRANSFORM,
        target_transform: Callable[[Any], Any] | None = None,
        root: str | Path | None = None,
        download: bool = False,
    ) -> None:
        self._locate(root, download)
        super().__init__(train, transform, target_transform)

    def _files(self) -> list[str]:
        return [f"data_batch_{i}.bin" for i in range(1, 6)] if self.train else ["test_batch.bin"]

    def _read_bytes(self) -> list[tuple[str, bytes]]:
        """``(where, contents)`` of each file: its path, or ``archive:member``."""
        names = self._files()
        for folder in (self.root, self.root / self.inner):
            if all((folder / n).is_file() for n in names):
                return [(str(folder / n), self._read_file(folder / n)) for n in names]
        archive = self.root / self.archive
        if not archive.is_file():
            try:
                fetch(self.name, self.root, {self.archive: (self.url, None)}, self.download)
            except FileNotFoundError:
                if self.download:
                    raise
                taken = [
                    f" {p} is {what}, not the file; remove it."
                    for folder in (self.root, self.root / self.inner)
                    for p in [folder / n for n in names] + [folder / self.archive]
                    if (what := in_the_way(p))
                ]
                raise FileNotFoundError(
                    f"{self.name}: missing data in {self.root}: place either {self.archive} (from "
                    f"{self.url}) or its extracted files {', '.join(names)} there (or in "
                    f"{self.root / self.inner}); pass download=True to fetch the archive, or "
                    f"root=<dir>." + "".join(taken)
                ) from None
        verify_checksum(archive, f"md5:{self.archive_md5}", self.name)
        try:
            with tarfile.open(archive, "r:gz") as tar:
                members = {Path(m.name).name: m for m in tar.getmembers() if m.isfile()}
                missing = [n for n in names if n not in members]
                if missing:
                    raise ValueError(f"{archive}: does not contain {', '.join(missing)}")
                return [(f"{archive}:{n}", tar.extractfile(members[n]).read()) for n in names]
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise ValueError(
                f"{self.name}: {archive} cannot be read as a .tar.gz archive ({exc}); it is "
                f"truncated or corrupt: delete it and place a good copy there."
            ) from None

    def _read_file(self, path: Path) -> bytes:
        try:
            return path.read_bytes()
        except OSError as exc:
            raise unreadable(self.name, path, exc) from None

    def _records(self, where: str, buf: bytes, name: str) -> Any:
        """The file's records as a (N, record) uint8 array, checked."""
        np = host_numpy()
        record = self.label_bytes + 3 * 32 * 32
        expected = (self.records or {}).get(name)
        if not buf or len(buf) % record or (expected and len(buf) < expected * record):
            whole = "" if len(buf) % record else f" ({len(buf) // record} records)"
            want = f"{expected} records of {record} bytes" if expected else f"{record}-byte records"
            raise ValueError(
                f"{self.name}: {where} holds {len(buf)} bytes{whole}, not {want}; it is empty, "
                f"truncated or not the binary version: delete it and place a good copy there."
            )
        return np.frombuffer(buf, dtype=np.uint8).reshape(-1, record)  # parsed on the host

    def _check_labels(self, where: str, labels: Any, classes: int) -> None:
        i = first_out_of_range(labels, classes)
        if i is not None:
            raise ValueError(
                f"{self.name}: {where} holds label {int(labels[i])} at record {i}, but the "
                f"labels are 0..{classes - 1}; the file is corrupt or belongs to another data "
                f"set (CIFAR-100's files have 2 label bytes, CIFAR-10's 1)."
            )

    def prepare(self) -> None:
        """Read the images and labels of the split from the files or the archive.

        Raises:
            FileNotFoundError: neither the files nor the archive are there.
            ValueError: a file or the archive is corrupt, or a label is out of range.
        """
        np = host_numpy()
        coarse = self.label_bytes == 2 and not self._fine
        classes = len(self.coarse_names if coarse else self.class_names)
        data, labels = [], []
        for n, (where, buf) in zip(self._files(), self._read_bytes()):
            a = self._records(where, buf, n)
            label = a[:, self.label_bytes - 1 if self._fine else 0]
            self._check_labels(where, label, classes)
            labels.append(label)
            data.append(a[:, self.label_bytes :].reshape(-1, 3, 32, 32))
        backend = get_backend()
        self.data = backend.from_numpy(np.concatenate(data))  # a writable copy
        self.label = backend.from_numpy(np.concatenate(labels).astype(np.int64))

    _fine = False


class CIFAR100(CIFAR10):
    """CIFAR-100 (binary version): ``label_type`` ``'fine'`` (100 classes) or ``'coarse'`` (20).

    Reads ``train.bin``/``test.bin`` from ``root`` or ``root/cifar-100-binary``, or the archive
    ``cifar-100-binary.tar.gz`` (default root ``<data_home>/cifar-100``).

    Args:
        train: the training images (True) or the test images.
        transform: applied to each image (default: float32, scale to [-1, 1]).
        target_transform: applied to each label.
        label_type: ``'fine'`` (100 classes) or ``'coarse'`` (20 superclasses).
        root: the directory holding the files or the archive.
        download: fetch the archive when neither it nor the files are there.

    Attributes:
        coarse_names: the 20 superclass names, by coarse class id.
        label_type: the label type chosen.

    Raises:
        TypeError: ``train`` or ``download`` is not True or False.
        ValueError: another ``label_type``, or a corrupt, truncated or mismatched file.
        FileNotFoundError: neither the files nor the archive are there, and not downloaded.
    """

    name = "CIFAR100"
    folder = "cifar-100"
    archive = "cifar-100-binary.tar.gz"
    archive_md5 = "03b5dce01913d631647c71ecec9e9cb8"
    inner = "cifar-100-binary"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz"
    label_bytes = 2
    records = {"train.bin": 50000, "test.bin": 10000}
    class_names = tuple(
        """
apple aquarium_fish baby bear beaver bed bee beetle bicycle bottle bowl boy bridge bus
butterfly camel can castle caterpillar cattle chair chimpanzee clock cloud cockroach couch crab
crocodile cup dinosaur dolphin elephant flatfish forest fox girl hamster house kangaroo keyboard
lamp lawn_mower leopard lion lizard lobster man maple_tree motorcycle mountain mouse mushroom
oak_tree orange orchid otter palm_tree pear pickup_truck pine_tree plain plate poppy porcupine
possum rabbit raccoon ray road rocket rose sea seal shark shrew skunk skyscraper snail snake
spider squirrel streetcar sunflower sweet_pepper table tank telephone television tiger tractor
train trout tulip turtle wardrobe whale willow_tree wolf woman worm
    """.split()
    )
    coarse_names = tuple(
        """
aquatic_mammals fish flowers food_containers fruit_and_vegetables
household_electrical_devices household_furniture insects large_carnivores
large_man-made_outdoor_things large_natural_outdoor_scenes large_omnivores_and_herbivores
medium_mammals non-insect_invertebrates people reptiles small_mammals trees vehicles_1 vehicles_2
    """.split()
    )

    def __init__(
        self,
        train: bool = True,
        transform: Callable[[Any], Any] | None = _CIFAR_TRANSFORM,
        target_transform: Callable[[Any], Any] | None = None,
        label_type: str = "fine",
        root: str | Path | None = None,
        download: bool = False,
    ) -> None:
        if label_type not in ("fine", "coarse"):
            raise ValueError(f"CIFAR100: label_type must be 'fine' or 'coarse', got {label_type!r}")
        self.label_type = label_type
        self._fine = label_type == "fine"
        super().__init__(train, transform, target_transform, root, download)

    def _files(self) -> list[str]:
        return ["train.bin" if self.train else "test.bin"]

    @classmethod
    def labels(cls, label_type: str = "fine") -> dict[int, str]:
        """Return the class names of one label type.

        Args:
            label_type: ``'fine'`` (100 classes) or ``'coarse'`` (20).

        Returns:
            ``class id -> class name``.

        Raises:
            ValueError: another ``label_type``.
        """
        if label_type not in ("fine", "coarse"):
            raise ValueError(f"CIFAR100: label_type must be 'fine' or 'coarse', got {label_type!r}")
        return dict(enumerate(cls.class_names if label_type == "fine" else cls.coarse_names))
