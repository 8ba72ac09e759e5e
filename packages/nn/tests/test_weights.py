"""Weight files: round trip, atomic writes, no pickle, all-or-nothing loading."""

import os
import zipfile

import numpy as np
import pytest

import zerograd_nn.layers as L
from zerograd.backends import backend_of
from zerograd_nn.models import MLP, Sequential
from zerograd_nn.weights import WeightFileError, named_params, read_weights, save_weights


def make_model(seed=0, sizes=(4, 3)):
    np.random.seed(seed)
    m = MLP(sizes)
    m(np.ones((1, 2), dtype=np.float32))  # size the lazy layers
    return m


def snapshot(model):
    return {k: np.array(p.data, copy=True) for k, p in named_params(model).items()}


def assert_unchanged(model, snap):
    now = named_params(model)
    assert list(now) == list(snap)
    for k, a in snap.items():
        np.testing.assert_array_equal(now[k].data, a)


def test_round_trip_keeps_names_order_values_and_dtypes(tmp_path):
    src = make_model(0)
    path = tmp_path / "mlp.npz"
    src.save_weights(str(path))
    with np.load(path, allow_pickle=False) as npz:
        assert npz.files == ["l0/W", "l0/b", "l1/W", "l1/b"]
    dst = make_model(1)
    dst.load_weights(str(path))
    for (k, a), (k2, b) in zip(named_params(src).items(), named_params(dst).items()):
        assert k == k2 and b.data.dtype == np.float32
        np.testing.assert_array_equal(a.data, b.data)


def test_npz_suffix_is_added_like_numpy(tmp_path):
    m = make_model(0)
    m.save_weights(tmp_path / "weights")
    assert (tmp_path / "weights.npz").exists() and not (tmp_path / "weights").exists()
    other = make_model(1)
    assert not np.array_equal(other.l0.W.data, m.l0.W.data)
    other.load_weights(tmp_path / "weights")  # found with the suffix too
    loaded, saved = named_params(other), named_params(m)
    assert list(loaded) == list(saved)
    for k, p in saved.items():
        np.testing.assert_array_equal(loaded[k].data, p.data)


def test_round_trip_nested_layers_and_batchnorm_state(tmp_path, rand, to_np, backend):
    def build():
        return Sequential(L.Conv2d(2, 3, pad=1, in_channels=1), L.BatchNorm(), L.Linear(3))

    a = build().to(backend)
    x = rand(2, 1, 4, 4, dtype="float32")
    a.l2(a.l1(a.l0(x)).reshape(2, -1))
    a.save_weights(tmp_path / "seq.npz")
    names = list(read_weights(tmp_path / "seq.npz"))
    assert names == [
        "l0/W", "l0/b", "l1/avg_mean", "l1/avg_var", "l1/gamma", "l1/beta", "l2/W", "l2/b",
    ]  # fmt: skip
    b = build().to(backend)  # BatchNorm and Linear still unsized: they take the file's shapes
    b.load_weights(tmp_path / "seq.npz")
    for p in (b.l0.W, b.l1.avg_mean, b.l2.W):  # the unsized ones too land on the model's backend
        assert backend_of(p.data).name == backend.name
    np.testing.assert_array_equal(to_np(b.l1.avg_mean), to_np(a.l1.avg_mean))
    np.testing.assert_array_equal(to_np(b.l2.W), to_np(a.l2.W))


def test_save_refuses_unsized_parameters_and_writes_nothing(tmp_path):
    m = MLP([3])
    with pytest.raises(WeightFileError, match=r"parameters \['l0/W'\] have no data yet"):
        m.save_weights(tmp_path / "x.npz")
    assert list(tmp_path.iterdir()) == []


def test_save_is_atomic_when_writing_fails(tmp_path, monkeypatch):
    path = tmp_path / "w.npz"
    make_model(0).save_weights(path)
    good = path.read_bytes()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        make_model(1).save_weights(path)
    assert path.read_bytes() == good  # the old file is intact
    assert [p.name for p in tmp_path.iterdir()] == ["w.npz"]  # no temp file left behind


def test_truncated_file_is_a_clear_error_and_model_unchanged(tmp_path):
    path = tmp_path / "w.npz"
    make_model(0).save_weights(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    m = make_model(1)
    snap = snapshot(m)
    with pytest.raises(WeightFileError, match=r"not a readable .npz weight file|is damaged"):
        m.load_weights(path)
    assert_unchanged(m, snap)


def test_corrupt_member_is_a_clear_error(tmp_path):
    path = tmp_path / "w.npz"
    make_model(0).save_weights(path)
    raw = bytearray(path.read_bytes())
    start = raw.index(b"\x93NUMPY", 200)  # the second array's header
    raw[start : start + 6] = b"XXXXXX"
    path.write_bytes(bytes(raw))
    m = make_model(1)
    snap = snapshot(m)
    with pytest.raises(
        WeightFileError,
        match=r"^load_weights: '[^']*w\.npz' is damaged \(BadZipFile: Bad CRC-32 for file "
        r"'l0/b\.npy'\); it may be truncated\. Save it again with save_weights\(\)\.$",
    ):
        m.load_weights(path)
    assert_unchanged(m, snap)


def test_foreign_files_are_refused(tmp_path):
    m = make_model(1)
    snap = snapshot(m)
    text = tmp_path / "notes.npz"
    text.write_text("hello, not weights")
    with pytest.raises(WeightFileError, match="not a readable .npz weight file"):
        m.load_weights(text)
    single = tmp_path / "one.npy"
    np.save(single, np.ones(3))
    with pytest.raises(WeightFileError, match="holds a single array, not an .npz archive"):
        m.load_weights(single)
    pickled = tmp_path / "obj.npz"
    np.savez(pickled, **{"l0/W": np.array([{"a": 1}], dtype=object)})
    with pytest.raises(WeightFileError, match="not a readable|is damaged"):
        m.load_weights(pickled)
    with pytest.raises(FileNotFoundError, match="no weight file"):
        m.load_weights(tmp_path / "missing.npz")
    assert_unchanged(m, snap)


def test_mismatched_model_lists_every_difference_and_changes_nothing(tmp_path):
    path = tmp_path / "w.npz"
    make_model(0, sizes=(4, 3)).save_weights(path)
    other = make_model(1, sizes=(5, 3, 2))
    snap = snapshot(other)
    with pytest.raises(WeightFileError) as info:
        other.load_weights(path)
    msg = str(info.value)
    assert "missing in the file: ['l2/W', 'l2/b']" in msg
    assert "l0/W: model (2, 5), file (2, 4)" in msg
    assert "l1/W: model (5, 3), file (4, 3)" in msg
    assert "The model was not changed" in msg
    assert_unchanged(other, snap)
    smaller = make_model(2, sizes=(4,))
    with pytest.raises(WeightFileError, match=r"not in the model: \['l1/W', 'l1/b'\]"):
        smaller.load_weights(path)


def test_loading_casts_to_the_parameter_dtype(tmp_path):
    m64 = MLP([2], activation=None)
    m64.l0.W.data = np.ones((3, 2))
    m64.l0.b.data = np.zeros(2)
    save_weights(m64, tmp_path / "w.npz")
    m32 = MLP([2])
    m32(np.ones((1, 3), dtype=np.float32))
    m32.load_weights(tmp_path / "w.npz")
    assert m32.l0.W.dtype == np.float32
    np.testing.assert_array_equal(m32.l0.W.data, np.ones((3, 2)))


def test_written_archive_is_plain_npy_members(tmp_path):
    path = save_weights(make_model(0), tmp_path / "w")
    with zipfile.ZipFile(path) as zf:
        assert zf.namelist() == ["l0/W.npy", "l0/b.npy", "l1/W.npy", "l1/b.npy"]
