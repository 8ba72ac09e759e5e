"""Atomic files (zerograd_nn.atomic): whole or not at all; what a failed write leaves."""

import os

import pytest

from zerograd_nn.atomic import write_atomically


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
