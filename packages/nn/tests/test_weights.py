"""Weight files: round trip, atomic writes, no pickle, all-or-nothing loading."""

import os
import zipfile

import numpy as np
import pytest

import zerograd_nn.layers as L
from zerograd import Parameter
from zerograd.backends import backend_of
from zerograd.testing.interleave import paused_thread
from zerograd_nn.models import MLP, Sequential
from zerograd_nn.weights import (
    WeightFileError,
    load_weights,
    named_params,
    read_weights,
    save_weights,
)


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
        match=r"^load_weights: '[^']*w\.npz' is damaged \(member 'l0/b\.npy': .+\); it may be "
        r"truncated\. Save it again with save_weights\(\)\.$",
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
    with pytest.raises(WeightFileError, match=r"'l0/W.npy' holds Python objects \(dtype object\)"):
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


def test_float64_values_beyond_float32_are_refused_not_loaded_as_inf(tmp_path):
    m64 = MLP([2], activation=None)
    m64.l0.W.data = np.ones((3, 2))
    m64.l0.b.data = np.array([1e39, -1e300])  # finite in float64, inf in float32
    save_weights(m64, tmp_path / "w.npz")
    m32 = MLP([2])
    m32(np.ones((1, 3), dtype=np.float32))
    snap = snapshot(m32)
    with pytest.raises(WeightFileError) as info:
        m32.load_weights(tmp_path / "w.npz")
    assert str(info.value) == (
        "load_weights: 'l0/b' holds 2 finite value(s) beyond the range of float32; loading "
        "them into the float32 parameter would make them inf. Nothing was changed: load into "
        "a model of dtype float64, or rescale the values."
    )
    assert_unchanged(m32, snap)
    m64.l0.b.data = np.array([np.inf, np.nan])  # already not finite: loaded as they are
    save_weights(m64, tmp_path / "w.npz")
    m32.load_weights(tmp_path / "w.npz")
    assert np.isinf(m32.l0.b.data[0]) and np.isnan(m32.l0.b.data[1])


def test_loading_into_another_dtype_leaves_the_warning_filters_of_other_threads_alone(tmp_path):
    # the cast into the parameter's dtype ran under warnings.catch_warnings(), which swaps
    # the process's filter list: a thread inside a catch_warnings block of its own
    # meanwhile put, on leaving, a list holding that cast's "ignore" back for good
    import warnings

    import zerograd_nn.conversion

    m64 = MLP([2], activation=None)
    m64.l0.W.data, m64.l0.b.data = np.ones((3, 2)), np.array([1.5, -2.5])
    save_weights(m64, tmp_path / "w.npz")
    m32 = MLP([2])
    m32(np.ones((1, 3), dtype=np.float32))

    def in_the_cast(frame, event, arg):  # the cast into float32
        return (
            event == "call"
            and frame.f_code.co_name == "astype"
            and frame.f_back.f_code.co_filename == zerograd_nn.conversion.__file__
        )

    before = list(warnings.filters)
    with paused_thread(lambda: m32.load_weights(tmp_path / "w.npz"), in_the_cast) as release:
        with warnings.catch_warnings():  # another thread's block, around the cast's end
            release()
    assert warnings.filters == before
    assert m32.l0.b.data.dtype == np.float32 and m32.l0.b.data.tolist() == [1.5, -2.5]


def test_written_archive_is_plain_npy_members(tmp_path):
    path = save_weights(make_model(0), tmp_path / "w")
    with zipfile.ZipFile(path) as zf:
        assert zf.namelist() == ["l0/W.npy", "l0/b.npy", "l1/W.npy", "l1/b.npy"]


# -- issue 11 item 9: killed saves, crafted archives, bad paths ---------------------------

KILLED_SAVER = """
import os, sys, time
import numpy as np
from zerograd_nn import weights
from zerograd_nn.models import MLP

np.random.seed(1)
m = MLP((4, 3))
m(np.ones((1, 2), dtype=np.float32))

def stall(fd):  # the archive is written: wait here, as a long save would
    print("writing", flush=True)
    time.sleep(120)

os.fsync = stall
weights.save_weights(m, sys.argv[1])
"""


def temporaries(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def test_a_save_killed_midway_keeps_the_old_file_and_the_next_load_cleans_up(tmp_path):
    import signal
    import subprocess
    import sys

    path = tmp_path / "w.npz"
    make_model(0).save_weights(path)
    good = path.read_bytes()
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_SAVER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "writing"
        assert len(temporaries(tmp_path)) == 1  # the half-done save's hidden temporary
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
    assert path.read_bytes() == good
    assert len(temporaries(tmp_path)) == 1  # the dead process left it behind
    m = make_model(2)
    m.load_weights(path)
    assert_unchanged(m, snapshot(make_model(0)))
    assert temporaries(tmp_path) == []


def test_next_save_removes_only_temporaries_of_dead_processes_of_this_host(tmp_path):
    from zerograd_nn.atomic import _host

    host = _host()
    path = tmp_path / "w.npz"
    dead = tmp_path / f".w.npz.{host}.999999999.abc123.tmp"  # no such pid here
    live = tmp_path / f".w.npz.{host}.{os.getppid()}.xyz789.tmp"  # a running process: kept
    other = tmp_path / f".notes.npz.{host}.999999999.abc123.tmp"  # another file's: kept
    remote = tmp_path / ".w.npz.not-this-host-0.999999999.abc123.tmp"  # another host's: kept
    for p in (dead, live, other, remote):
        p.write_bytes(b"partial")
    make_model(0).save_weights(path)
    assert temporaries(tmp_path) == sorted([live.name, other.name, remote.name])


def test_temporaries_are_named_for_the_host_that_writes_them(tmp_path, monkeypatch):
    import socket
    import tempfile

    seen = []
    real = tempfile.mkstemp

    def spy(**kw):
        fd, name = real(**kw)
        seen.append(os.path.basename(name))
        return fd, name

    monkeypatch.setattr(socket, "gethostname", lambda: "node7.cluster")
    monkeypatch.setattr(tempfile, "mkstemp", spy)
    make_model(0).save_weights(tmp_path / "w.npz")
    assert len(seen) == 1 and seen[0].startswith(f".w.npz.node7-cluster.{os.getpid()}.")


@pytest.mark.skipif(os.name != "posix", reason="file modes and umask are POSIX")
def test_saved_files_honour_the_umask_and_keep_a_replaced_files_mode(tmp_path):
    import stat

    old = os.umask(0o002)
    try:
        make_model(0).save_weights(tmp_path / "new.npz")
        assert stat.S_IMODE(os.stat(tmp_path / "new.npz").st_mode) == 0o664
        kept = tmp_path / "kept.npz"
        make_model(0).save_weights(kept)
        os.chmod(kept, 0o640)
        make_model(1).save_weights(kept)
        assert stat.S_IMODE(os.stat(kept).st_mode) == 0o640
    finally:
        os.umask(old)


@pytest.mark.skipif(os.name != "posix", reason="file modes and umask are POSIX")
def test_a_file_saved_while_another_thread_saves_one_gets_the_umasks_mode(tmp_path, monkeypatch):
    # where /proc cannot tell the umask (not Linux), a new file's mode was found by setting
    # the process's umask to 0o022 and back: a file saved in another thread between the
    # two got 0o022's mode instead of the umask's
    import stat

    import zerograd_nn.atomic

    def no_proc(path, *args, **kwargs):
        raise OSError(f"no {path} here")

    monkeypatch.setattr(zerograd_nn.atomic, "open", no_proc, raising=False)

    def after_umask_or_open(frame, event, arg):  # that thread read the umask or made a file
        return event == "c_return" and arg in (os.umask, os.open)

    before = os.umask(0o027)
    try:
        other = lambda: make_model(0).save_weights(tmp_path / "other.npz")  # noqa: E731
        with paused_thread(other, after_umask_or_open) as release:
            try:
                make_model(1).save_weights(tmp_path / "mine.npz")
            finally:
                release()
        umask = os.umask(0o027)
    finally:
        os.umask(before)
    assert umask == 0o027
    for name in ("mine.npz", "other.npz"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o640, name
    assert sorted(os.listdir(tmp_path)) == ["mine.npz", "other.npz"]  # no probe left


def npy_header(shape, dtype="<f8"):
    """A version 1.0 .npy header for ``shape`` (padded as numpy pads it)."""
    d = f"{{'descr': '{dtype}', 'fortran_order': False, 'shape': {tuple(shape)!r}, }}"
    d += " " * (64 - (10 + len(d) + 1) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d.encode()


def test_a_header_claiming_a_huge_shape_is_refused_before_reading(tmp_path, monkeypatch):
    from zerograd_nn.archives import Archive

    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("l0/W.npy", npy_header((2**20, 2**12)) + b"\0" * 64)
    monkeypatch.setattr(Archive, "read", lambda *a: pytest.fail("array data was read"))
    m = make_model(1)
    snap = snapshot(m)
    with pytest.raises(
        WeightFileError,
        match=r"member 'l0/W.npy' declares shape \(1048576, 4096\) of float64 \(34359738368 "
        r"bytes\) but the archive lists 192 bytes",
    ):
        m.load_weights(path)
    with pytest.raises(WeightFileError, match=r"declares shape \(1048576, 4096\)"):
        read_weights(path)
    assert_unchanged(m, snap)


def test_a_member_that_really_expands_huge_is_refused_from_its_header(tmp_path, monkeypatch):
    from zerograd_nn.archives import Archive

    path = tmp_path / "zeros.npz"
    n = 2**23  # 64 MiB of float64 zeros, a few hundred KiB deflated
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("l0/W.npy", "w", force_zip64=True) as f:
            f.write(npy_header((n,)))
            for _ in range(64):
                f.write(bytes(n // 8))
    assert path.stat().st_size < 2**20
    monkeypatch.setattr(Archive, "read", lambda *a: pytest.fail("array data was read"))
    m = make_model(1)
    with pytest.raises(WeightFileError, match=rf"l0/W: model \(2, 4\), file \({n},\)"):
        m.load_weights(path)


def test_members_that_are_not_npy_are_refused(tmp_path):
    path = tmp_path / "mixed.npz"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("l0/W.npy", npy_header((2, 4)) + bytes(64))
        zf.writestr("readme.txt", "hello")
    with pytest.raises(WeightFileError, match=r"holds 'readme.txt', which is not a .npy array"):
        read_weights(path)


def test_saving_into_a_missing_directory_names_the_users_path(tmp_path):
    target = tmp_path / "no_such_dir" / "w.npz"
    with pytest.raises(FileNotFoundError) as info:
        make_model(0).save_weights(target)
    msg = str(info.value)
    assert f"the directory '{tmp_path / 'no_such_dir'}' of '{target}' does not exist" in msg
    assert ".tmp" not in msg and ".w.npz" not in msg


@pytest.mark.parametrize("bad", ["", "some_dir"])
def test_a_path_that_names_no_file_is_refused(tmp_path, monkeypatch, bad):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "some_dir").mkdir()
    with pytest.raises(ValueError, match=rf"save_weights: '{bad}' names no file"):
        make_model(0).save_weights(bad)
    assert [p.name for p in tmp_path.iterdir()] == ["some_dir"]


@pytest.mark.parametrize(
    ("make", "bad", "good"),
    [
        (lambda: L.Linear(3), (4, 5), (4, 3)),
        (lambda: L.Conv2d(8, 3), (8, 2, 5, 5), (8, 2, 3, 3)),
        (lambda: L.Deconv2d(8, 3), (2, 4, 3, 3), (2, 8, 3, 3)),
    ],
)
def test_an_unsized_layer_refuses_a_file_weight_its_arguments_do_not_allow(
    tmp_path, make, bad, good
):
    # DeZero assigns whatever the file holds; here a Conv2d(8, 3) never takes a 5x5
    # kernel (its output size would silently change) and nothing is loaded
    np.random.seed(0)
    model = Sequential(L.Linear(2, in_size=2), make())
    snap = snapshot(model)
    b = np.zeros(model.l1.b.shape, np.float32)
    path = tmp_path / "w.npz"
    np.savez(
        path, **{"l0/W": np.full((2, 2), 7.0), "l0/b": np.ones(2), "l1/W": np.ones(bad), "l1/b": b}
    )
    with pytest.raises(WeightFileError, match=r"l1/W: file .*expected .*layer's arguments"):
        model.load_weights(path)
    assert_unchanged(model, snap)
    assert model.l1.W.data is None
    w = np.arange(np.prod(good), dtype=np.float64).reshape(good)
    np.savez(path, **{"l0/W": np.full((2, 2), 7.0), "l0/b": np.ones(2), "l1/W": w, "l1/b": b})
    model.load_weights(path)
    np.testing.assert_array_equal(model.l1.W.data, w.astype(np.float32))
    assert model.l1.W.data.dtype == np.float32


def test_a_checkpoint_given_to_load_weights_says_to_use_load_checkpoint(tmp_path):
    # it said the file "does not fit MLP", listing every optimizer and random-state array
    # of the checkpoint as "not in the model"; load_checkpoint says the converse already
    from zerograd_nn.checkpoint import save_checkpoint
    from zerograd_nn.optimizers import Adam

    src = make_model(0)
    path = save_checkpoint(tmp_path / "run.npz", model=src, optimizer=Adam().setup(src))
    dst = make_model(1)
    before = snapshot(dst)
    for load in (dst.load_weights, lambda p: load_weights(dst, p)):
        with pytest.raises(WeightFileError) as info:
            load(path)
        msg = str(info.value)
        assert msg.startswith(f"load_weights: {path!r} is a checkpoint")
        assert "load_checkpoint(" in msg and "The model was not changed." in msg
        assert "not in the model" not in msg
        assert_unchanged(dst, before)


def _tied(kind):
    m = L.Layer()
    base = np.arange(12.0).reshape(3, 4)
    m.a = Parameter(base)
    m.b = Parameter(base.T if kind == "view" else base)
    return m


@pytest.mark.parametrize("kind", ["view", "one array"])
@pytest.mark.parametrize("how", ["load_weights", "load_state_dict"])
def test_loading_keeps_tied_parameters_tied(tmp_path, backend, kind, how):
    # each parameter got an array of its own: a decoder tied to its encoder (b = a.T), or
    # one array held by two layers, trained apart after a load of its own weights
    if backend.name != "numpy":
        pytest.skip(f"memory ties are found on numpy arrays; backend {backend.name!r} under test")
    src = _tied(kind)
    src.a.data[...] = src.a.data * 2 + 1  # b follows: tied
    m = _tied(kind)
    user = m.a.data  # the user's array: a load leaves it as it was
    if how == "load_weights":
        save_weights(src, tmp_path / "w.npz")
        load_weights(m, tmp_path / "w.npz")
    else:
        m.load_state_dict(src.state_dict())
    np.testing.assert_array_equal(m.a.data, src.a.data)
    np.testing.assert_array_equal(m.b.data, src.b.data)
    assert np.shares_memory(m.a.data, m.b.data)
    assert not np.shares_memory(m.a.data, user)
    np.testing.assert_array_equal(user, np.arange(12.0).reshape(3, 4))
    m.a.data[0, 1] = -5.0  # what an optimizer's in-place step does
    assert (m.b.data[1, 0] if kind == "view" else m.b.data[0, 1]) == -5.0


def test_loading_one_tied_parameter_with_strict_false_moves_the_other_with_it(backend):
    if backend.name != "numpy":
        pytest.skip(f"memory ties are found on numpy arrays; backend {backend.name!r} under test")
    src, m = _tied("view"), _tied("view")
    src.a.data[...] = 7.0
    m.load_state_dict({"a": src.a.data}, strict=False)
    np.testing.assert_array_equal(m.b.data, np.full((4, 3), 7.0))
    assert np.shares_memory(m.a.data, m.b.data)


def test_loading_different_values_into_tied_parameters_is_refused_and_changes_nothing(
    tmp_path, backend
):
    if backend.name != "numpy":
        pytest.skip(f"memory ties are found on numpy arrays; backend {backend.name!r} under test")
    m = _tied("view")
    before = snapshot(m)
    d = {"a": np.zeros((3, 4)), "b": np.ones((4, 3))}  # where they overlap (all), 0 and 1
    said = (
        r"parameters 'a', 'b' share memory in the model \(tied weights\), but the values "
        r"given for them differ where their arrays overlap; give equal values there, or untie "
        r"them first \(p\.data = p\.data\.copy\(\)\)"
    )
    with pytest.raises(ValueError, match=r"^Layer\.load_state_dict: " + said + r"\. Nothing"):
        m.load_state_dict(d)
    np.savez(tmp_path / "w.npz", **d)
    with pytest.raises(WeightFileError, match=said + r"\. The model was not changed\.$"):
        load_weights(m, tmp_path / "w.npz")
    for k, v in snapshot(m).items():
        np.testing.assert_array_equal(v, before[k])
    assert np.shares_memory(m.a.data, m.b.data)
