"""Atomic files (zerograd_nn.atomic): whole or not at all; what a failed write leaves."""

import os
import stat

import numpy as np
import pytest

from zerograd_nn.atomic import write_atomically
from zerograd_nn.checkpoint import load_checkpoint, save_checkpoint
from zerograd_nn.models import MLP
from zerograd_nn.weights import load_weights, save_weights


def _listing(folder):
    return sorted(os.listdir(folder))


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def test_a_write_replaces_the_file_whole(tmp_path):
    path = str(tmp_path / "f.bin")
    assert write_atomically(path, lambda f: f.write(b"one"), "t") == path
    write_atomically(path, lambda f: f.write(b"two, longer"), "t")
    assert _read(path) == b"two, longer"
    assert _listing(tmp_path) == ["f.bin"]  # no temporary left behind


def test_a_bare_file_name_is_written_in_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert write_atomically("f.bin", lambda f: f.write(b"here"), "t") == "f.bin"
    assert _read(tmp_path / "f.bin") == b"here"
    assert _listing(tmp_path) == ["f.bin"]


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path):
    path = str(tmp_path / "f.bin")
    write_atomically(path, lambda f: f.write(b"old"), "t")

    def half_then_fail(f):
        f.write(b"new, half written")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        write_atomically(path, half_then_fail, "t")
    assert _read(path) == b"old"
    assert _listing(tmp_path) == ["f.bin"]


def test_a_missing_folder_is_named_and_nothing_is_created(tmp_path):
    path = str(tmp_path / "nope" / "f.bin")
    with pytest.raises(FileNotFoundError, match=r"save_x: the directory .*nope.* does not exist"):
        write_atomically(path, lambda f: f.write(b"x"), "save_x")
    assert _listing(tmp_path) == []


def test_a_symbolic_link_is_written_through_and_stays_a_link(tmp_path):
    """The link itself was replaced by a regular file, and its target kept the old bytes."""
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "f.bin"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    link = tmp_path / "f.bin"
    link.symlink_to(target)
    assert write_atomically(str(link), lambda f: f.write(b"new"), "t") == str(link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert _read(target) == b"new"
    assert os.stat(target).st_mode & 0o777 == 0o640  # the replaced file's mode
    assert _listing(tmp_path) == ["data", "f.bin"] and _listing(tmp_path / "data") == ["f.bin"]


def test_a_dangling_link_creates_the_file_it_names(tmp_path):
    link = tmp_path / "f.bin"
    link.symlink_to(tmp_path / "new.bin")
    write_atomically(str(link), lambda f: f.write(b"x"), "t")
    assert link.is_symlink() and _read(tmp_path / "new.bin") == b"x"


def test_a_link_into_a_missing_folder_is_named(tmp_path):
    link = tmp_path / "f.bin"
    link.symlink_to(tmp_path / "gone" / "f.bin")
    with pytest.raises(FileNotFoundError, match=r"t: '.*f.bin' is a link to '.*gone/f.bin', whose"):
        write_atomically(str(link), lambda f: f.write(b"x"), "t")
    assert _listing(tmp_path) == ["f.bin"]


def test_a_loop_of_links_is_one_clear_error(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(OSError, match=r"\] t: '.*a' is a symbolic link that cannot be followed"):
        write_atomically(str(a), lambda f: f.write(b"x"), "t")
    assert _listing(tmp_path) == ["a", "b"]


def test_a_folder_is_refused_by_the_users_path_before_anything_is_written(tmp_path):
    (tmp_path / "d.npz").mkdir()
    with pytest.raises(IsADirectoryError) as info:
        write_atomically(str(tmp_path / "d.npz"), lambda f: f.write(b"x"), "t")
    msg = str(info.value)
    assert f"t: '{tmp_path / 'd.npz'}' is a folder, not a file" in msg
    assert ".tmp" not in msg and msg.endswith("Nothing was written")
    assert _listing(tmp_path) == ["d.npz"] and _listing(tmp_path / "d.npz") == []


def test_long_names_get_temporaries_that_fit_and_are_cleaned_up(tmp_path, monkeypatch):
    """Names of 236-255 bytes failed: their temporaries' names passed 255 bytes."""
    import tempfile

    from zerograd_nn.atomic import _host, remove_stale_temporaries

    seen = []
    real = tempfile.mkstemp

    def spy(**kw):
        fd, name = real(**kw)
        seen.append(os.path.basename(name))
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", spy)
    long_a, long_b = "a" * 250 + ".bin", "a" * 249 + "b.bin"  # share 249 bytes
    for name in (long_a, long_b, "short.bin"):
        write_atomically(str(tmp_path / name), lambda f: f.write(b"x"), "t")
    assert all(len(os.fsencode(n)) <= 255 for n in seen), seen
    assert seen[2].startswith(f".short.bin.{_host()}.{os.getpid()}.")
    assert seen[0].split(".")[1] != seen[1].split(".")[1]  # the hash tells them apart
    # a dead process's temporary of long_a is removed by the next write of long_a only
    stem = seen[0].split(".")[1]
    dead = tmp_path / f".{stem}.{_host()}.999999999.abc123.tmp"
    dead.write_bytes(b"partial")
    assert remove_stale_temporaries(str(tmp_path / long_b)) == []
    assert remove_stale_temporaries(str(tmp_path / long_a)) == [str(dead)]
    assert _listing(tmp_path) == sorted([long_a, long_b, "short.bin"])


def test_a_name_longer_than_the_file_system_takes_is_refused(tmp_path):
    import errno

    with pytest.raises(OSError) as info:
        write_atomically(str(tmp_path / ("x" * 256)), lambda f: f.write(b"x"), "t")
    assert info.value.errno == errno.ENAMETOOLONG
    assert "its name is 256 bytes long and the file system" in str(info.value)
    assert _listing(tmp_path) == []


def _save_and_load_calls():
    model = MLP((3, 2))
    model(np.ones((1, 4), np.float32))
    return {
        "save_checkpoint": lambda p: save_checkpoint(p, model=model),
        "save_weights": lambda p: save_weights(model, p),
        "load_checkpoint": lambda p: load_checkpoint(p, model=model),
        "load_weights": lambda p: load_weights(model, p),
    }


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
@pytest.mark.parametrize("through_link", [False, True])
def test_a_fifo_is_not_replaced_by_a_save(tmp_path, through_link):
    """A save renamed its temporary over the FIFO: the pipe was silently gone."""
    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    given = fifo
    if through_link:
        given = tmp_path / "link.npz"
        os.symlink(fifo, given)
    shown = f"'{given}'" + (f" \\(a link to '{fifo}'\\)" if through_link else "")
    for op in ("save_checkpoint", "save_weights"):
        with pytest.raises(
            FileExistsError,
            match=rf"{op}: {shown} is a FIFO \(named pipe\), not a regular file; a save "
            r"replaces only regular files, .* Nothing was written$",
        ):
            _save_and_load_calls()[op](given)
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
        assert sorted(os.listdir(tmp_path)) == sorted({"pipe.npz", given.name})
    with pytest.raises(FileExistsError, match=r"^\[Errno 17\] demo: .* is a FIFO"):
        write_atomically(str(given), lambda f: f.write(b"x"), "demo")


@pytest.mark.parametrize(
    "op", ["save_checkpoint", "save_weights", "load_checkpoint", "load_weights"]
)
def test_a_path_with_a_nul_byte_is_one_error_naming_the_path(tmp_path, op):
    """It was Python's bare "embedded null byte", raised from the temporary's stat."""
    path = str(tmp_path / "a\x00b.npz")
    with pytest.raises(
        ValueError,
        match=rf"^{op}: the path '.*a\\x00b\.npz' holds a NUL byte \('\\x00'\), which no file "
        r"name can hold; remove it\. Nothing was read or written\.$",
    ):
        _save_and_load_calls()[op](path)
    assert os.listdir(tmp_path) == []
