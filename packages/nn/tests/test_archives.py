"""Reading archives (zerograd_nn.archives): one open of one regular file, checked first.

Weight files and checkpoints are read through ``open_archive``; these tests give it paths
that are not regular files and archives whose directory lies about their sizes.
"""

import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from unprivileged import unprivileged

from zerograd_nn.archives import Archive, WeightFileError, open_archive
from zerograd_nn.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from zerograd_nn.models import MLP
from zerograd_nn.weights import read_weights


def _model():
    model = MLP((3, 2))
    model(np.ones((1, 4), np.float32))
    return model


NOT_REGULAR = r"""
import os, resource, socket, sys
resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))  # an endless read fails here
import numpy as np
from zerograd_nn.checkpoint import load_checkpoint
from zerograd_nn.models import MLP

folder = sys.argv[1]
os.mkfifo(os.path.join(folder, "fifo.npz"))
os.symlink("/dev/zero", os.path.join(folder, "zero.npz"))
sock = socket.socket(socket.AF_UNIX)
sock.bind(os.path.join(folder, "sock.npz"))
model = MLP((3, 2))
model(np.ones((1, 4), np.float32))
before = {k: v.copy() for k, v in model.state_dict().items()}
for name in ("fifo", "zero", "sock"):
    try:
        load_checkpoint(os.path.join(folder, name), model=model)
    except Exception as exc:
        print(type(exc).__name__, exc, flush=True)
    try:
        model.load_weights(os.path.join(folder, name + ".npz"))
    except Exception as exc:
        print(type(exc).__name__, exc, flush=True)
print(all(np.array_equal(v, before[k]) for k, v in model.state_dict().items()))
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and /dev/zero are POSIX")
def test_a_fifo_a_device_or_a_socket_is_refused_at_once_and_changes_nothing(tmp_path):
    """A FIFO blocked the load forever; a link to /dev/zero read until memory ran out.

    Run in a child with a time limit and a memory limit, so that a regression fails
    instead of hanging the suite."""
    folder = tmp_path / "f"
    folder.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", NOT_REGULAR, str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    fifo, zero, sock = (repr(str(folder / f"{n}.npz")) for n in ("fifo", "zero", "sock"))
    what = "not a regular file; a {0} is read only from a regular file. Give the path of the {0}"
    assert lines == [
        f"CheckpointError load_checkpoint: {fifo} is a FIFO (named pipe), "
        + what.format("checkpoint")
        + " itself.",
        f"WeightFileError load_weights: {fifo} is a FIFO (named pipe), "
        + what.format("weight file")
        + " itself.",
        f"CheckpointError load_checkpoint: {zero} (a link to '/dev/zero') is a character "
        "device, " + what.format("checkpoint") + " itself.",
        f"WeightFileError load_weights: {zero} (a link to '/dev/zero') is a character "
        "device, " + what.format("weight file") + " itself.",
        f"CheckpointError load_checkpoint: {sock} is a socket, "
        + what.format("checkpoint")
        + " itself.",
        f"WeightFileError load_weights: {sock} is a socket, "
        + what.format("weight file")
        + " itself.",
        "True",
    ]


def test_a_folder_is_refused_by_name_with_a_hint(tmp_path):
    (tmp_path / "run.npz").mkdir()
    with pytest.raises(CheckpointError, match=r"^load_checkpoint: .*run.npz' is a folder; give "):
        load_checkpoint(tmp_path / "run", model=_model())
    with pytest.raises(WeightFileError, match=r"^load_weights: .*run.npz' is a folder; give the "):
        read_weights(tmp_path / "run.npz")


def test_a_checkpoint_is_read_through_a_link(tmp_path):
    model = _model()
    save_checkpoint(tmp_path / "real.npz", model=model, epoch=3)
    (tmp_path / "link.npz").symlink_to(tmp_path / "real.npz")
    assert load_checkpoint(tmp_path / "link", model=model)["epoch"] == 3


def test_a_missing_file_is_named():
    with pytest.raises(FileNotFoundError, match=r"^load_checkpoint: no checkpoint at '/nope/c'$"):
        load_checkpoint("/nope/c", model=_model())


def _stored(path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name, a in members:
            with zf.open(name, "w") as f:
                np.lib.format.write_array(f, np.asarray(a))


def _patch_sizes(path, name, size):
    """Make the central directory say ``name`` has ``size`` bytes, stored and compressed."""
    data = bytearray(path.read_bytes())
    at = data.index(b"PK\x01\x02")
    while data[at + 46 : at + 46 + int.from_bytes(data[at + 28 : at + 30], "little")] != (
        name.encode()
    ):
        at = data.index(b"PK\x01\x02", at + 4)
    data[at + 20 : at + 24] = size.to_bytes(4, "little")  # compressed size
    data[at + 24 : at + 28] = size.to_bytes(4, "little")  # uncompressed size
    path.write_bytes(bytes(data))


def test_a_member_claiming_more_bytes_than_the_file_has_is_refused_before_reading(
    tmp_path, monkeypatch
):
    """The header and the directory agree on a large array, but the file is small: the
    read would allocate what the directory claims. It is refused from the file's size."""
    path = tmp_path / "w.npz"
    big = 2**20  # the member's header claims `big` float64 values, the directory agrees
    d = f"{{'descr': '<f8', 'fortran_order': False, 'shape': ({big},), }}"
    d += " " * (64 - (10 + len(d) + 1) % 64) + "\n"
    claim = b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d.encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("a.npy", claim + bytes(32))
    _patch_sizes(path, "a.npy", len(claim) + 8 * big)
    monkeypatch.setattr(Archive, "read", lambda *a: pytest.fail("array data was read"))
    with pytest.raises(
        WeightFileError,
        match=rf"^load_weights: .* is damaged \(member 'a.npy' claims {len(claim) + 8 * big} "
        rf"bytes, {len(claim) + 8 * big} of them in the file, at offset 0 of a file of "
        rf"{path.stat().st_size} bytes\); it may be truncated",
    ):
        read_weights(path)


def test_a_member_named_twice_is_refused(tmp_path):
    import warnings

    path = tmp_path / "w.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name
        _stored(path, [("a.npy", np.zeros(2)), ("a.npy", np.ones(2))])
    with pytest.raises(WeightFileError, match=r"is damaged \(member 'a.npy' twice\)"):
        read_weights(path)


def test_an_open_archive_reads_from_the_file_it_opened(tmp_path):
    """A save that replaces the file between the check and the read is never half seen:
    both come from one open file."""
    path = tmp_path / "w.npz"
    _stored(path, [("a.npy", np.arange(3.0))])
    with open_archive(path, "t") as archive:
        _stored(tmp_path / "new.npz", [("a.npy", np.arange(5.0))])
        os.replace(tmp_path / "new.npz", path)
        np.testing.assert_array_equal(archive.read(["a"])["a"], np.arange(3.0))
    np.testing.assert_array_equal(read_weights(path)["a"], np.arange(5.0))


def test_a_link_in_a_loop_says_what_to_do(tmp_path):
    # the error said only "(Too many levels of symbolic links)"
    path = tmp_path / "loop.npz"
    path.symlink_to(path)
    model = _model()
    before = {k: np.array(p.data, copy=True) for k, p in model.named_params().items()}
    with pytest.raises(OSError) as info:
        load_checkpoint(path, model=model)
    assert str(info.value) == (
        f"[Errno 40] load_checkpoint: cannot open the checkpoint '{path}' (Too many levels "
        f"of symbolic links); it is a symbolic link in a loop: remove it or point it at a "
        f"checkpoint."
    )
    with pytest.raises(OSError, match=r"in a loop: remove it or point it at a weight file\.$"):
        read_weights(path)
    for k, p in model.named_params().items():
        np.testing.assert_array_equal(p.data, before[k])


UNREADABLE_ARCHIVES = """
import sys
from zerograd_nn.checkpoint import load_checkpoint
from zerograd_nn.models import MLP
from zerograd_nn.weights import load_weights

model = MLP((3, 2))
for load in (lambda p: load_weights(model, p), lambda p: load_checkpoint(p, model=model)):
    try:
        load(sys.argv[1])
    except OSError as exc:
        print(type(exc).__name__, exc)
"""


def test_a_file_without_read_permission_says_what_to_do(tmp_path):
    # the error said only "(Permission denied)"
    path = tmp_path / "run.npz"
    path.write_bytes(b"unread")
    script = tmp_path / "load.py"
    script.write_text(UNREADABLE_ARCHIVES)
    cmd = unprivileged([sys.executable, str(script), str(path)])
    os.chmod(path, 0o000)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    finally:
        os.chmod(path, 0o644)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"PermissionError [Errno 13] {op}: cannot open the {what} '{path}' (Permission "
        f"denied); make it readable (chmod u+r)."
        for op, what in (("load_weights", "weight file"), ("load_checkpoint", "checkpoint"))
    ]
