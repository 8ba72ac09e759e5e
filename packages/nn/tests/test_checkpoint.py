"""Checkpoints: exact resume mid-epoch, all-or-nothing loading, the safe file format."""

import errno
import os
import random
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst
from unprivileged import unprivileged

import zerograd_nn.functional as F
from zerograd.backends import list_backends
from zerograd_nn import DataLoader
from zerograd_nn import layers as L
from zerograd_nn import optimizers as O
from zerograd_nn import schedulers as S
from zerograd_nn.checkpoint import (
    CheckpointError,
    load_checkpoint,
    prepare_load_checkpoint,
    save_checkpoint,
)
from zerograd_nn.datasets import Spiral
from zerograd_nn.models import Model


class Net(Model):
    def __init__(self):
        super().__init__()
        self.l1 = L.Linear(16)
        self.l2 = L.Linear(3)

    def forward(self, x):
        return self.l2(F.dropout(F.relu(self.l1(x)), 0.3))


class Loader:
    """A loader built to the agreed interface (own seeded RNG, position, index order)."""

    def __init__(self, dataset, batch_size, seed):
        self.dataset, self.batch_size = dataset, batch_size
        self.rng = np.random.default_rng(seed)
        self.epoch, self.iteration, self.index, self._resume = 0, 0, None, False

    def __iter__(self):
        if not self._resume:
            self.index = self.rng.permutation(len(self.dataset))
            self.iteration = 0
        self._resume = False
        while self.iteration * self.batch_size < len(self.dataset):
            i = self.index[
                self.iteration * self.batch_size : (self.iteration + 1) * self.batch_size
            ]
            self.iteration += 1
            batch = [self.dataset[j] for j in i]
            yield np.array([b[0] for b in batch]), np.array([b[1] for b in batch])
        self.epoch += 1

    def state_dict(self):
        return {
            "epoch": self.epoch,
            "iteration": self.iteration,
            "index": self.index,
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, d):
        if set(d) != {"epoch", "iteration", "index", "rng"}:
            raise ValueError(f"Loader.load_state_dict: unexpected keys {sorted(d)}")
        self.rng.bit_generator.state = d["rng"]
        self.epoch, self.iteration = int(d["epoch"]), int(d["iteration"])
        self.index, self._resume = np.asarray(d["index"]), True


def make_run(seed, loader_seed, make_loader):
    np.random.seed(seed)
    model = Net()
    model(np.zeros((1, 2), np.float32))
    opt = O.Adam(0.01).setup(O.weight_decay_groups(model, 1e-3))
    warm = S.LinearWarmup(opt, 3, start_factor=0.1)
    cos = S.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2, eta_min=1e-4)
    sched = S.ChainedScheduler([warm, cos])
    data = Spiral(train=True)
    loader = make_loader(data, 32, loader_seed)
    return model, opt, sched, loader


def train(model, opt, sched, loader, steps):
    it = iter(loader)
    for _ in range(steps):
        try:
            x, t = next(it)
        except StopIteration:
            it = iter(loader)
            x, t = next(it)
        loss = F.softmax_cross_entropy(model(x.astype(np.float32)), t)
        model.cleargrads()
        loss.backward()
        opt.update()
        sched.step()


def real_loader(dataset, batch_size, seed):
    return DataLoader(dataset, batch_size, shuffle=True, seed=seed)


@pytest.mark.parametrize(
    "make_loader",
    [Loader, real_loader],
    ids=["interface-loader", "DataLoader"],
)
def test_resume_mid_epoch_is_bit_identical(tmp_path, make_loader):
    n = 14  # 300 samples / 32 = 10 batches per epoch: the save falls mid-epoch 0
    straight = make_run(0, 1, make_loader)
    train(*straight, n)

    first = make_run(0, 1, make_loader)
    train(*first, n // 2)
    model, opt, sched, loader = first
    path = save_checkpoint(
        tmp_path / "ckpt", model=model, optimizer=opt, scheduler=sched, loader=loader,
        epoch=0, iteration=n // 2, extra={"note": "half way"},
    )  # fmt: skip
    np.random.rand(5)  # the process goes on drawing numbers; the checkpoint has its own

    fresh = make_run(42, 7, make_loader)  # another process: other weights, RNG, order
    info = load_checkpoint(
        path, model=fresh[0], optimizer=fresh[1], scheduler=fresh[2], loader=fresh[3]
    )
    assert info == {"epoch": 0, "iteration": n // 2, "extra": {"note": "half way"}}
    train(*fresh, n - n // 2)
    for k, p in straight[0].named_params().items():
        assert np.array_equal(p.data, fresh[0].named_params()[k].data), k
    assert fresh[1].t == straight[1].t == n
    assert fresh[2].get_last_lr() == straight[2].get_last_lr()


def trained_run(tmp_path):
    run = make_run(0, 1, Loader)
    train(*run, 3)
    model, opt, sched, loader = run
    path = save_checkpoint(
        tmp_path / "c.npz", model=model, optimizer=opt, scheduler=sched, loader=loader
    )
    return run, path


def snapshot(run):
    model, opt, sched, loader = run
    return (
        {k: v.copy() for k, v in model.state_dict().items()},
        {id(p): {k: a.copy() for k, a in s.items()} for p, s in opt._state.items()},
        (getattr(opt, "t", None), [g["lr"] for g in opt.param_groups]),
        sched.state_dict(),
        (loader.epoch, loader.iteration, loader.rng.bit_generator.state),
        np.random.get_state()[1].copy(),
    )


def assert_same(a, b):
    assert a[0].keys() == b[0].keys()
    for k in a[0]:
        np.testing.assert_array_equal(a[0][k], b[0][k])
    assert a[1].keys() == b[1].keys()
    for pid in a[1]:
        for k in a[1][pid]:
            np.testing.assert_array_equal(a[1][pid][k], b[1][pid][k])
    assert a[2:5] == b[2:5]
    np.testing.assert_array_equal(a[5], b[5])


class Wider(Net):
    def __init__(self):
        super().__init__()
        self.l1 = L.Linear(17)


@pytest.mark.parametrize(
    ("change", "err", "words"),
    [
        ("model", ValueError, r"l1.W: model \(2, 17\), given \(2, 16\)"),
        ("optimizer", ValueError, r"the state dict was saved by Adam, not SGD: .*optimizer=None"),
        ("scheduler", ValueError, r"ChainedScheduler.load_state_dict: the state holds 2"),
        ("loader", ValueError, r"Loader.load_state_dict: unexpected keys"),
    ],
)
def test_a_part_that_does_not_fit_changes_nothing(tmp_path, change, err, words):
    _, path = trained_run(tmp_path)
    target = list(make_run(5, 5, Loader))
    np.random.seed(9)
    if change == "model":
        target[0] = Wider()
        target[0](np.zeros((1, 2), np.float32))
        target[1] = O.Adam(0.01).setup(O.weight_decay_groups(target[0], 1e-3))
    elif change == "optimizer":
        target[1] = O.SGD().setup(O.weight_decay_groups(target[0], 1e-3))
    elif change == "scheduler":
        target[2] = S.ChainedScheduler([S.ExponentialLR(target[1], 0.5)])
    else:
        target[3].load_state_dict = lambda d: Loader.load_state_dict(target[3], {"x": 1})
    before = snapshot(target)
    with pytest.raises(err, match=words):
        load_checkpoint(
            path, model=target[0], optimizer=target[1], scheduler=target[2], loader=target[3]
        )
    assert_same(snapshot(target), before)


def _restorable(run):
    """Everything a checkpoint restores, as plain copies (a DataLoader run)."""
    model, opt, sched, loader = run
    position = loader.state_dict()
    return (
        {k: v.copy() for k, v in model.state_dict().items()},
        {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in opt.state_dict().items()},
        sched.state_dict(),
        {k: np.array(v, copy=True) for k, v in position.items()},
        np.random.get_state()[1].copy(),
    )


def _assert_states_equal(a, b):
    for x, y in zip(a, b):
        if isinstance(x, dict):
            assert x.keys() == y.keys()
            for k in x:
                np.testing.assert_equal(x[k], y[k])
        else:
            np.testing.assert_array_equal(x, y)


def test_a_prepared_load_changes_nothing_until_its_commit(tmp_path):
    run = make_run(0, 1, real_loader)
    train(*run, 5)
    path = save_checkpoint(
        tmp_path / "c.npz", model=run[0], optimizer=run[1], scheduler=run[2], loader=run[3],
        epoch=2, iteration=5,
    )  # fmt: skip
    fresh, other = make_run(42, 7, real_loader), make_run(42, 7, real_loader)
    train(*fresh, 1)
    train(*other, 1)
    np.random.seed(3)
    before = _restorable(fresh)
    commit, info = prepare_load_checkpoint(
        path, model=fresh[0], optimizer=fresh[1], scheduler=fresh[2], loader=fresh[3]
    )
    assert info == {"epoch": 2, "iteration": 5, "extra": None}
    _assert_states_equal(_restorable(fresh), before)  # read and checked, nothing taken yet
    commit()
    np.random.seed(3)
    load_checkpoint(path, model=other[0], optimizer=other[1], scheduler=other[2], loader=other[3])
    _assert_states_equal(_restorable(fresh), _restorable(other))  # the commit is the load
    assert fresh[3].state_dict()["iteration"] == 5


def test_a_part_missing_from_the_file_is_named(tmp_path):
    (model, opt, _, _), _ = trained_run(tmp_path)
    path = save_checkpoint(tmp_path / "m.npz", model=model)
    with pytest.raises(CheckpointError, match=r"holds no optimizer state; pass optimizer=None"):
        load_checkpoint(path, model=model, optimizer=opt)


def test_the_file_is_plain_npy_members_and_a_json_description(tmp_path):
    _, path = trained_run(tmp_path)
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
    assert all(n.endswith(".npy") for n in names)
    assert "model/l1.W.npy" in names and "optimizer/state/l1.W/m.npy" in names
    assert "random/keys.npy" in names and "__checkpoint__.npy" in names
    with np.load(path, allow_pickle=False) as npz:  # readable without pickle
        assert npz["random/keys"].dtype == np.uint32


def test_a_weight_file_is_not_a_checkpoint(tmp_path):
    run, _ = trained_run(tmp_path)
    run[0].save_weights(tmp_path / "w.npz")
    with pytest.raises(CheckpointError, match=r"but not a checkpoint .* load_weights\(\)"):
        load_checkpoint(tmp_path / "w.npz", model=run[0])


def test_extra_round_trips_and_unsupported_values_write_nothing(tmp_path):
    run, _ = trained_run(tmp_path)
    extra = {"best": 0.25, "hist": [1, 2.5, None], "arr": np.arange(3.0), "flag": True}
    path = save_checkpoint(tmp_path / "e", model=run[0], extra=extra)
    got = load_checkpoint(path, model=run[0])["extra"]
    np.testing.assert_array_equal(got.pop("arr"), np.arange(3.0))
    assert got == {"best": 0.25, "hist": [1, 2.5, None], "flag": True}
    with pytest.raises(TypeError, match=r"extra\['f'\] is a function; a checkpoint holds"):
        save_checkpoint(tmp_path / "bad", model=run[0], extra={"f": lambda: 0})
    assert not (tmp_path / "bad.npz").exists()


def _exactly(got, want):
    """``got`` is ``want``: the same types (arrays: dtype and values) all the way down."""
    assert type(got) is type(want), (got, want)
    if isinstance(want, dict):
        assert list(got) == list(want)
        for k in want:
            _exactly(got[k], want[k])
    elif isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _exactly(g, w)
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    else:
        assert got == want


EXACT_EXTRAS = {
    "reserved name, a member's": {"__array__": "model/l1.W"},
    "reserved name, unknown": {"x": {"__array__": "nope"}, "n": {"__array__": 3}},
    "reserved name, nested": {"__array__": {"__array__": [np.arange(2), None]}},
    "reserved name among others": {"__array__": "a", "b": 1},
    "separator in keys": {"a/b": np.ones(2), "a": {"b": np.zeros(2)}},
    "escapes in keys": {"%2F": np.ones(1), "/": np.zeros(1), "\\": np.full(1, 2.0)},
    "odd keys": {"": np.ones(1), "\x00": np.zeros(1), "\udc80": np.full(1, 3), "重み": [1]},
    "values": {"s": "\x00\udc80", "f": -0.0, "big": 2**80, "none": None, "nan": np.arange(0)},
}


@pytest.mark.parametrize("extra", list(EXACT_EXTRAS.values()), ids=list(EXACT_EXTRAS))
def test_extra_comes_back_exactly_whatever_its_keys(tmp_path, extra):
    """``{"__array__": ...}`` came back as a weight array (or the load called the file
    damaged), and ``"a/b"`` and ``"a" -> "b"`` shared one member: the second's array
    came back for both."""
    model = Net()
    model(np.ones((1, 2), np.float32))
    path = save_checkpoint(tmp_path / "c.npz", model=model, extra=extra)
    _exactly(load_checkpoint(path, model=model)["extra"], extra)


def test_extra_tuples_come_back_as_lists_and_numpy_scalars_as_numbers(tmp_path):
    model = Net()
    model(np.ones((1, 2), np.float32))
    extra = {"t": (1, (2, np.arange(2))), "f": np.float32(0.5), "i": np.int64(7)}
    path = save_checkpoint(tmp_path / "c.npz", model=model, extra=extra)
    got = load_checkpoint(path, model=model)["extra"]
    _exactly(got, {"t": [1, [2, np.arange(2)]], "f": 0.5, "i": 7})


def test_save_refuses_a_model_given_as_the_optimizer_and_writes_nothing(tmp_path):
    """It saved, and the error came only at resume."""
    model = Net()
    model(np.ones((1, 2), np.float32))
    for slot in ("optimizer", "scheduler", "loader"):
        with pytest.raises(
            TypeError, match=rf"^save_checkpoint: {slot} must be None or .*, got a model\.$"
        ):
            save_checkpoint(tmp_path / "c.npz", model=model, **{slot: model})
    assert list(tmp_path.iterdir()) == []


def test_an_optimizer_set_up_on_another_model_is_refused_at_save_and_at_load(tmp_path):
    run, path = trained_run(tmp_path)
    model, opt, sched, loader = run
    twin = Net()
    twin(np.ones((1, 2), np.float32))
    words = (
        r"the optimizer updates parameters that are not the model's \(4: \['l1.W', 'l2.W', "
        r"'l1.b', 'l2.b'\]\); it was set up on another model. Set it up on this one "
        r"\(optimizer.setup\(model\)\). Nothing was "
    )
    with pytest.raises(ValueError, match=rf"^save_checkpoint: {words}written\.$"):
        save_checkpoint(tmp_path / "d.npz", model=twin, optimizer=opt)
    assert not (tmp_path / "d.npz").exists()
    before = snapshot(run)
    twin_before = {k: v.copy() for k, v in twin.state_dict().items()}
    with pytest.raises(ValueError, match=rf"^load_checkpoint: {words}changed\.$"):
        load_checkpoint(path, model=twin, optimizer=opt, scheduler=sched, loader=loader)
    assert_same(snapshot(run), before)
    for k, v in twin.state_dict().items():
        np.testing.assert_array_equal(v, twin_before[k])


def test_a_checkpoint_with_a_negative_adam_step_is_refused_and_changes_nothing(tmp_path):
    """``t = -3`` was loaded, and the next update failed with "math domain error"."""
    run, _ = trained_run(tmp_path)
    run[1].t = -3
    path = save_checkpoint(tmp_path / "t.npz", model=run[0], optimizer=run[1])
    target = make_run(5, 5, Loader)
    before = snapshot(target)
    with pytest.raises(ValueError, match=r"counter 't' counts steps taken: an int >= 0, got -3"):
        load_checkpoint(path, model=target[0], optimizer=target[1])
    assert_same(snapshot(target), before)


def test_saving_through_a_symbolic_link_writes_the_file_it_points_at(tmp_path):
    run, _ = trained_run(tmp_path)
    (tmp_path / "runs").mkdir()
    target = tmp_path / "runs" / "real.npz"
    save_checkpoint(target, model=run[0], epoch=1)
    link = tmp_path / "latest.npz"
    link.symlink_to(target)
    save_checkpoint(link, model=run[0], epoch=2)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert load_checkpoint(target, model=run[0])["epoch"] == 2
    assert load_checkpoint(link, model=run[0])["epoch"] == 2
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["real.npz"]


@pytest.mark.parametrize("size", [236, 250, 255])
def test_names_up_to_the_longest_the_file_system_takes_save_and_load(tmp_path, size):
    """Names of 236 to 255 bytes failed: the hidden temporary's name was too long."""
    run, _ = trained_run(tmp_path)
    name = "é" * ((size - 4) // 2) + "x" * ((size - 4) % 2) + ".npz"  # 2 bytes per é
    assert len(os.fsencode(name)) == size
    path = save_checkpoint(tmp_path / name, model=run[0], epoch=4)
    assert load_checkpoint(path, model=run[0])["epoch"] == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["c.npz", name])


def test_a_name_longer_than_the_file_system_takes_is_refused_by_its_length(tmp_path):
    run, _ = trained_run(tmp_path)
    name = "x" * 252 + ".npz"
    with pytest.raises(OSError, match=r"its name is 256 bytes long and the file system") as info:
        save_checkpoint(tmp_path / name, model=run[0])
    assert info.value.errno == errno.ENAMETOOLONG
    assert "takes names of up to 255; choose a shorter name. Nothing was written" in str(info.value)
    assert [p.name for p in tmp_path.iterdir()] == ["c.npz"]


@pytest.mark.parametrize("given", ["run", "run.npz"])
def test_saving_onto_a_folder_named_npz_is_one_clear_error_naming_the_users_path(tmp_path, given):
    """ "run" became "run.npz", a folder: a raw IsADirectoryError named the temporary."""
    run, _ = trained_run(tmp_path)
    (tmp_path / "run.npz").mkdir()
    with pytest.raises(ValueError) as info:
        save_checkpoint(tmp_path / given, model=run[0])
    msg = str(info.value)
    assert msg.startswith(f"save_checkpoint: '{tmp_path / given}' names no file")
    assert ".tmp" not in msg and "Nothing was written" in msg
    if given == "run":
        assert f"('{tmp_path / 'run.npz'}' is one)" in msg
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.npz", "run.npz"]
    assert list((tmp_path / "run.npz").iterdir()) == []


def test_numpy_global_random_state_is_restored(tmp_path):
    run, _ = trained_run(tmp_path)
    np.random.seed(3)
    path = save_checkpoint(tmp_path / "r", model=run[0])
    want = np.random.rand(4)
    np.random.seed(99)
    load_checkpoint(path, model=run[0])
    np.testing.assert_array_equal(np.random.rand(4), want)


def _with_backend_states(monkeypatch, states):
    import zerograd_nn.checkpoint as C

    monkeypatch.setattr(C, "_backend_rng_states", lambda: states)


def test_a_gpu_checkpoint_loads_where_that_backend_is_not_usable(tmp_path, monkeypatch):
    """A checkpoint saved on the GPU holds cupy's generator state; a CPU-only machine has
    nothing drawing from it and loads the rest."""
    if "cupy" in {r.name for r in list_backends() if r.available}:
        pytest.skip("the cupy backend is usable here: its state would be restored")
    run, _ = trained_run(tmp_path)
    _with_backend_states(monkeypatch, {"cupy": np.array([7, 9], np.uint64)})
    path = save_checkpoint(tmp_path / "gpu", model=run[0])
    monkeypatch.undo()
    with np.load(path) as z:
        assert any(np.array_equal(z[k], [7, 9]) for k in z.files if k != "__checkpoint__")
    fresh = make_run(5, 1, Loader)[0]
    load_checkpoint(path, model=fresh)
    for k, p in run[0].named_params().items():
        np.testing.assert_array_equal(fresh.named_params()[k].data, p.data)


def test_a_backend_state_the_backend_refuses_changes_nothing(tmp_path, monkeypatch):
    run, _ = trained_run(tmp_path)
    _with_backend_states(monkeypatch, {"numpy": np.array([1, 2], np.uint64)})
    path = save_checkpoint(tmp_path / "odd", model=run[0])  # numpy's state lives elsewhere
    monkeypatch.undo()
    fresh = make_run(5, 1, Loader)[0]
    before = {k: p.data.copy() for k, p in fresh.named_params().items()}
    np.random.seed(4)
    with pytest.raises(CheckpointError, match=r"random state for backend 'numpy' that it refuses"):
        load_checkpoint(path, model=fresh)
    for k, p in fresh.named_params().items():
        np.testing.assert_array_equal(p.data, before[k])
    np.random.seed(4)
    want = np.random.rand(3)
    np.random.seed(4)
    with pytest.raises(CheckpointError):
        load_checkpoint(path, model=fresh)
    np.testing.assert_array_equal(np.random.rand(3), want)  # numpy's generator untouched


def test_resume_on_the_backend_under_test(tmp_path, backend, to_np):
    def run(model, opt, steps, seed):
        rng = np.random.default_rng(seed)
        for _ in range(steps):
            x = backend.from_numpy(rng.standard_normal((8, 2)).astype(np.float32))
            loss = F.sum(model(x) ** 2)
            model.cleargrads()
            loss.backward()
            opt.update()

    def fresh(seed):
        np.random.seed(seed)
        m = L.Linear(3, in_size=2).to(backend)
        return m, O.Adam(0.05).setup(m)

    straight = fresh(0)
    run(*straight, 2, seed=1)
    run(*straight, 2, seed=2)
    first = fresh(0)
    run(*first, 2, seed=1)
    path = save_checkpoint(tmp_path / "b", model=first[0], optimizer=first[1])
    again = fresh(5)
    load_checkpoint(path, model=again[0], optimizer=again[1])
    for p in again[0].params():
        assert type(p.data) is type(first[0].W.data)  # loaded onto the model's backend
    for st in again[1]._state.values():
        assert all(type(a) is type(first[0].W.data) for a in st.values())
    run(*again, 2, seed=2)
    for k, p in straight[0].named_params().items():
        assert np.array_equal(to_np(p.data), to_np(again[0].named_params()[k].data)), k


@pytest.mark.parametrize(
    ("kwargs", "err", "words"),
    [
        ({"model": None}, TypeError, r"save_checkpoint: model must be a Layer/Model .* NoneType"),
        (
            {"optimizer": "adam"},
            TypeError,
            r"^save_checkpoint: optimizer must be None or a zerograd_nn optimizer set up on the "
            r"model \(Adam\(\).setup\(model\)\), got str\.$",
        ),
        ({"scheduler": 3}, TypeError, r"scheduler must be None or an object with state_dict"),
        ({"epoch": "a"}, TypeError, r"save_checkpoint: epoch must be an int >= 0, got 'a' \(str\)"),
        ({"epoch": 1.5}, TypeError, r"epoch must be an int >= 0, got 1.5 \(float\)"),
        ({"iteration": -1}, ValueError, r"save_checkpoint: iteration must be an int >= 0, got -1"),
        ({"epoch": True}, TypeError, r"epoch must be an int >= 0, got True \(bool\)"),
    ],
)
def test_save_refuses_wrong_arguments_by_name_and_writes_nothing(tmp_path, kwargs, err, words):
    model = Net()
    model(np.ones((1, 2), np.float32))
    args = {"model": model, **kwargs}
    with pytest.raises(err, match=words):
        save_checkpoint(tmp_path / "c.npz", **args)
    assert list(tmp_path.iterdir()) == []


def test_load_refuses_a_missing_model_or_a_non_scheduler_changing_nothing(tmp_path):
    model = Net()
    model(np.ones((1, 2), np.float32))
    path = save_checkpoint(tmp_path / "c.npz", model=model)
    state = np.random.get_state()[1].copy()
    with pytest.raises(TypeError, match=r"load_checkpoint: model must be a Layer/Model .* None"):
        load_checkpoint(path, model=None)
    with pytest.raises(TypeError, match=r"scheduler must be None or an object .* got int"):
        load_checkpoint(path, model=model, scheduler=3)
    np.testing.assert_array_equal(np.random.get_state()[1], state)


# -- damaged files, a save killed midway, a folder that takes no new files -----------------


def everything(model, opt, sched, loader):
    """Every value a load could change, copied: parameters, optimizer, schedule, loader
    position and numpy's global random state."""
    return (
        {k: v.copy() for k, v in model.state_dict().items()},
        opt.state_dict(),
        sched.state_dict(),
        {k: np.array(v, copy=True) for k, v in loader.state_dict().items()},
        np.random.get_state(),
    )


def assert_identical(a, b):
    def same(x, y):
        if isinstance(x, dict):
            assert x.keys() == y.keys()
            for k in x:
                same(x[k], y[k])
        elif isinstance(x, (list, tuple)):
            assert len(x) == len(y)
            for p, q in zip(x, y):
                same(p, q)
        elif isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y)
        else:
            assert x == y

    same(a, b)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    run = make_run(0, 1, real_loader)
    train(*run, 3)
    model, opt, sched, loader = run
    path = tmp_path_factory.mktemp("saved") / "c.npz"
    save_checkpoint(path, model=model, optimizer=opt, scheduler=sched, loader=loader)
    return path.read_bytes(), everything(*run)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=hst.data())
def test_a_truncated_or_corrupted_checkpoint_is_refused_and_changes_nothing(
    tmp_path_factory, saved, data
):
    good, want = saved
    if data.draw(hst.booleans(), label="truncate"):
        damaged = good[: data.draw(hst.integers(0, len(good) - 1), label="keep bytes")]
    else:
        damaged = bytearray(good)
        for _ in range(data.draw(hst.integers(1, 3), label="flips")):
            at = data.draw(hst.integers(0, len(good) - 1), label="at")
            damaged[at] ^= data.draw(hst.integers(1, 255), label="xor")
        damaged = bytes(damaged)
    path = tmp_path_factory.mktemp("damaged") / "c.npz"
    path.write_bytes(damaged)
    target = make_run(5, 5, real_loader)
    np.random.seed(9)
    before = everything(*target)
    try:
        load_checkpoint(
            path, model=target[0], optimizer=target[1], scheduler=target[2], loader=target[3]
        )
    except ValueError as exc:  # WeightFileError, CheckpointError: a clear refusal
        assert str(exc).startswith("load_checkpoint: ") or "load_state_dict" in str(exc)
        assert_identical(everything(*target), before)
    else:  # a flip in bytes nobody reads (a zip timestamp): the load is the saved state
        assert_identical(everything(*target)[:4], want[:4])


def _assert_refused_changing_nothing(path, match):
    """Loading ``path`` into a fresh run raises a ValueError matching ``match`` and leaves
    the model, optimizer, scheduler and loader as they were."""
    target = make_run(5, 5, real_loader)
    before = everything(*target)
    with pytest.raises(ValueError, match=match):
        load_checkpoint(
            path, model=target[0], optimizer=target[1], scheduler=target[2], loader=target[3]
        )
    assert_identical(everything(*target), before)


def test_a_zip_directory_naming_an_unknown_zip_version_is_refused_and_changes_nothing(
    tmp_path, saved
):
    """A flipped byte in a member's "version needed to extract" makes Python's zipfile
    raise NotImplementedError while it reads the directory (found by the test above)."""
    good, _ = saved
    damaged = bytearray(good)
    entry = good.rindex(b"PK\x01\x02")  # the last member's central-directory entry
    damaged[entry + 6] = 109  # version needed to extract: 10.9, beyond what zipfile reads
    path = tmp_path / "c.npz"
    path.write_bytes(bytes(damaged))
    _assert_refused_changing_nothing(
        path,
        r"^load_checkpoint: .* is not a readable \.npz "
        r".*\(NotImplementedError: zip file version 10\.9\)",
    )


def test_a_checkpoint_that_lost_arrays_its_description_names_is_refused_and_changes_nothing(
    tmp_path, saved
):
    """A damaged zip directory can drop members while the description survives (a single
    flipped bit did, found by scanning flips): refused by name, not with a KeyError."""
    import zipfile

    good, _ = saved
    (tmp_path / "good.npz").write_bytes(good)
    path = tmp_path / "c.npz"
    with zipfile.ZipFile(tmp_path / "good.npz") as src, zipfile.ZipFile(path, "w") as dst:
        for info in src.infolist():
            if not info.filename.startswith("loader/"):
                dst.writestr(info, src.read(info))
    _assert_refused_changing_nothing(
        path,
        r"^load_checkpoint: .* is damaged: its description "
        r"names an array that the archive does not list \('loader/",
    )


KILLED_SAVE = """
import os, sys, time
from zerograd_nn.checkpoint import save_checkpoint
from zerograd_nn.layers import Linear

def stall(fd):  # the archive is written: wait here, as a long save would
    print("writing", flush=True)
    time.sleep(120)

os.fsync = stall
model = Linear(3, in_size=2)
model.W.data[...] = 2
save_checkpoint(sys.argv[1], model=model, extra={"i": 2})
"""


def _next_line(proc, seconds=60):
    """The child's next line; fails when it ends or says nothing for ``seconds`` (a bound
    on a hang: the child prints at once)."""
    import select

    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    assert ready, f"the saving process said nothing in {seconds} s"
    line = proc.stdout.readline()  # unbuffered: select saw every byte not yet read
    assert line, f"the saving process ended with status {proc.wait(timeout=30)}"
    return line.decode().strip()


def test_a_save_killed_midway_leaves_the_old_file_and_its_temporary_is_cleaned(tmp_path):
    import signal
    import subprocess
    import sys

    from zerograd_nn.layers import Linear

    path = tmp_path / "c.npz"
    model = Linear(3, in_size=2)
    model.W.data[...] = 1
    save_checkpoint(path, model=model, extra={"i": 1})
    good = path.read_bytes()
    script = tmp_path / "save.py"
    script.write_text(KILLED_SAVE)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path)], stdout=subprocess.PIPE, bufsize=0
    )
    try:
        assert _next_line(proc) == "writing"  # the new archive is whole in its temporary
        assert len(list(tmp_path.glob(".c.npz.*.tmp"))) == 1
    finally:
        proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    assert path.read_bytes() == good
    assert len(list(tmp_path.glob(".c.npz.*.tmp"))) == 1  # the dead process left it behind
    model = Linear(3, in_size=2)
    info = load_checkpoint(path, model=model)  # the last complete save, whole
    assert info["extra"]["i"] == 1 and np.all(model.W.data == 1)
    assert list(tmp_path.glob(".c.npz.*.tmp")) == []  # its writer is dead: removed


READ_ONLY = """
import sys
import numpy as np
from zerograd_nn.checkpoint import save_checkpoint
from zerograd_nn.layers import Linear
from zerograd_nn import DataLoader
from zerograd_nn.datasets import Spiral
from zerograd_nn.optimizers import SGD
from zerograd_nn.training import Snapshot, Trainer

folder = sys.argv[1]
model = Linear(3, in_size=2)
try:
    save_checkpoint(folder + "/c.npz", model=model)
except OSError as exc:
    print(type(exc).__name__, exc)
trainer = Trainer(model, SGD().setup(model), DataLoader(Spiral(), 100), max_epochs=1,
                  out=folder + "/run")
trainer.extend(Snapshot())
try:
    trainer.run()
except OSError as exc:
    print(type(exc).__name__, exc, trainer.iteration)
"""


def test_a_read_only_folder_gives_one_clear_error_and_keeps_the_old_file(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "run").mkdir()
    (folder / "c.npz").write_bytes(b"the old file")
    script = tmp_path / "ro.py"
    script.write_text(READ_ONLY)
    cmd = [sys.executable, str(script), str(folder)]
    if os.geteuid() == 0:  # root writes anywhere: run without the capability to
        if shutil.which("setpriv") is None:
            pytest.skip("running as root and setpriv (util-linux) is missing to drop privileges")
        cmd = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner", *cmd]
    os.chmod(folder / "run", 0o555)
    os.chmod(folder, 0o555)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    finally:
        os.chmod(folder, 0o755)
        os.chmod(folder / "run", 0o755)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert lines[0].startswith(
        f"PermissionError [Errno 13] save_checkpoint: cannot write '{folder}"
    )
    assert "does not take new files (Permission denied); choose a folder you can" in lines[0]
    assert lines[1].startswith("PermissionError [Errno 13] zerograd_nn.training.Trainer: cannot")
    assert lines[1].endswith(
        "which Snapshot write into; pass out= a folder you can write to. Nothing was trained 0"
    )
    assert (folder / "c.npz").read_bytes() == b"the old file"
    assert sorted(p.name for p in folder.iterdir()) == ["c.npz", "run"]


@pytest.mark.parametrize("direction", ["to numpy", "from numpy"])
def test_a_checkpoint_moves_between_the_backend_under_test_and_numpy(
    tmp_path, backend, to_np, direction
):
    def trained(on):
        np.random.seed(0)
        model = L.Linear(3, in_size=2).to(on)
        opt = O.Adam(0.05).setup(model)
        rng = np.random.default_rng(1)
        for _ in range(2):
            x = on.from_numpy(rng.standard_normal((8, 2)).astype(np.float32))
            loss = F.sum(model(x) ** 2)
            model.cleargrads()
            loss.backward()
            opt.update()
        return model, opt

    from zerograd.backends import get_backend

    numpy = get_backend("numpy")
    source, target = (backend, numpy) if direction == "to numpy" else (numpy, backend)
    model, opt = trained(source)
    path = save_checkpoint(tmp_path / "c", model=model, optimizer=opt)
    np.random.seed(5)
    other = L.Linear(3, in_size=2).to(target)
    other_opt = O.Adam(0.05).setup(other)
    load_checkpoint(path, model=other, optimizer=other_opt)
    for p, q in zip(model.params(), other.params()):
        assert type(q.data) is type(target.from_numpy(np.zeros(1)))
        np.testing.assert_array_equal(to_np(q.data), to_np(p.data))
    for p, q in zip(model.params(), other.params()):
        for k, a in opt._state[p].items():
            np.testing.assert_array_equal(to_np(other_opt._state[q][k]), to_np(a))


class Bigger(Net):
    """Net with one more layer: a changed architecture started from Net's checkpoint."""

    def __init__(self):
        super().__init__()
        self.l3 = L.Linear(3)

    def forward(self, x):
        return self.l3(super().forward(x))


def test_strict_off_loads_the_matching_names_of_another_model(tmp_path):
    (model, opt, _, _), path = trained_run(tmp_path)
    np.random.seed(4)
    bigger = Bigger()
    bigger(np.zeros((1, 2), np.float32))
    before = {k: v.copy() for k, v in bigger.state_dict().items()}
    rng = np.random.get_state()[1].copy()
    with pytest.raises(ValueError, match=r"not in the model: \[\]|missing: \['l3.W', 'l3.b'\]"):
        load_checkpoint(path, model=bigger)
    assert_identical(bigger.state_dict(), before)
    np.testing.assert_array_equal(np.random.get_state()[1], rng)
    with pytest.raises(ValueError, match=r"Adam.load_state_dict: the state dict has 2 param"):
        load_checkpoint(path, model=bigger, optimizer=O.Adam().setup(bigger), strict=False)
    assert_identical(bigger.state_dict(), before)
    load_checkpoint(path, model=bigger, strict=False)
    for k, v in bigger.state_dict().items():
        want = model.state_dict()[k] if k in model.state_dict() else before[k]
        np.testing.assert_array_equal(v, want, err_msg=k)


def test_non_ascii_paths(tmp_path):
    (model, opt, sched, loader), _ = trained_run(tmp_path)
    folder = tmp_path / "日本語 ü 🙂"
    folder.mkdir()
    path = save_checkpoint(folder / "モデル", model=model, optimizer=opt, epoch=2)
    model.save_weights(folder / "w€.npz")
    other = Net()
    other(np.zeros((1, 2), np.float32))
    assert load_checkpoint(path, model=other)["epoch"] == 2
    assert_identical(other.state_dict(), model.state_dict())
    other = Net()
    other.load_weights(folder / "w€.npz")
    assert_identical(other.state_dict(), model.state_dict())
    assert sorted(p.name for p in folder.iterdir()) == ["w€.npz", "モデル.npz"]


# -- files written by an earlier version (main 701de1e) ---------------------------------


def _state_of(model, opt, sched, loader):
    return (
        {k: v.copy() for k, v in model.state_dict().items()},
        opt.state_dict(),
        sched.state_dict(),
        {k: np.array(v, copy=True) for k, v in loader.state_dict().items()},
        np.random.get_state(),
    )


def test_a_checkpoint_written_by_the_earlier_version_loads_value_for_value():
    import checkpoint_files as files

    want = _state_of(*files.build())
    target = files.build(seed=7, steps=1)
    assert not np.array_equal(target[0].l0.W.data, want[0]["l0.W"])
    random.seed(4)
    python_random = random.getstate()  # the file holds none: it is left as it is
    info = load_checkpoint(
        files.CHECKPOINT,
        model=target[0],
        optimizer=target[1],
        scheduler=target[2],
        loader=target[3],
    )
    assert_identical(_state_of(*target), want)
    assert random.getstate() == python_random
    assert info["epoch"] == 0 and info["iteration"] == 5
    extra = info["extra"]
    assert set(extra) == set(files.EXTRA)
    assert extra["note"] == "fixture" and extra["best"] == 0.5
    assert extra["history"] == [1, 2.5, None, True, "x"]
    assert extra["counts"].dtype == np.int16
    np.testing.assert_array_equal(extra["counts"], files.EXTRA["counts"])
    np.testing.assert_array_equal(extra["nested"]["a"][0], np.ones(2, np.float32))
    assert extra["nested"]["a"][1] == {"b": 1.25}


def test_a_weight_file_written_by_the_earlier_version_loads_value_for_value():
    import checkpoint_files as files

    want = files.build()[0].state_dict()
    model = files.build(seed=7, steps=1)[0]
    model.load_weights(str(files.WEIGHTS))
    for k, v in model.state_dict().items():
        assert v.dtype == want[k].dtype and np.array_equal(v, want[k]), k


def test_this_version_writes_what_the_earlier_version_wrote(tmp_path):
    """The same run saved now gives the same members, description and arrays (the zip's
    timestamps aside), plus Python's ``random`` state (the ``py_random`` part and its one
    array), which readers of that version pass over: the format did not change."""
    import json

    import checkpoint_files as files

    files.write(tmp_path)

    def content(path):
        with zipfile.ZipFile(path) as zf:
            names = [i.filename for i in zf.infolist()]
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = arrays.pop("__checkpoint__", None)
        return names, meta if meta is None else json.loads(meta.tobytes().decode()), arrays

    old, new = content(files.CHECKPOINT), content(tmp_path / files.CHECKPOINT.name)
    added = new[1].pop("py_random")
    assert added == {"version": 3, "state": {"__array__": "py_random/state"}, "gauss": None}
    assert new[2].pop("py_random/state").shape == (625,)
    assert [n for n in new[0] if n != "py_random/state.npy"] == old[0] and new[1] == old[1]
    assert_identical(new[2], old[2])
    old, new = content(files.WEIGHTS), content(tmp_path / files.WEIGHTS.name)
    assert new[0] == old[0]
    assert_identical(new[2], old[2])


@pytest.mark.parametrize(
    "extra, err, words",
    [
        (
            {"c": np.complex64(1j)},
            TypeError,
            r"extra\['c'\] is a complex; a checkpoint holds real numbers, strings, None, lists",
        ),
        ({"when": np.datetime64("2020-01-01")}, TypeError, r"extra\['when'\] is a date"),
    ],
)
def test_extra_library_scalars_json_cannot_hold_are_named(tmp_path, extra, err, words):
    """numpy's complex scalar failed in the JSON encoder: "Object of type complex is not
    JSON serializable", naming nothing."""
    model = Net()
    model(np.ones((1, 2), np.float32))
    with pytest.raises(err, match=rf"^save_checkpoint: {words}"):
        save_checkpoint(tmp_path / "c.npz", model=model, extra=extra)
    assert list(tmp_path.iterdir()) == []


def test_extra_holding_itself_is_refused_and_writes_nothing(tmp_path):
    """It ran into Python's RecursionError."""
    model = Net()
    model(np.ones((1, 2), np.float32))
    loop = {"a": [1]}
    loop["a"].append(loop)
    with pytest.raises(ValueError, match=r"^save_checkpoint: extra\['a'\]\[1\] holds itself"):
        save_checkpoint(tmp_path / "c.npz", model=model, extra=loop)
    shared = [1, 2]  # the same list twice is no loop: both come back
    path = save_checkpoint(tmp_path / "c.npz", model=model, extra={"x": shared, "y": shared})
    assert load_checkpoint(path, model=model)["extra"] == {"x": [1, 2], "y": [1, 2]}


def test_strict_must_be_a_bool(tmp_path):
    """strict="no" was taken as True, strict=None as False."""
    model = Net()
    model(np.ones((1, 2), np.float32))
    path = save_checkpoint(tmp_path / "c.npz", model=model)
    before = [p.data.copy() for p in model.params()]
    for bad in ("no", None, 0):
        with pytest.raises(TypeError) as info:
            load_checkpoint(path, model=model, strict=bad)
        assert str(info.value) == f"load_checkpoint: strict must be True or False, got {bad!r}"
        with pytest.raises(TypeError) as info:
            model.load_state_dict({}, strict=bad)
        assert str(info.value) == f"Net.load_state_dict: strict must be True or False, got {bad!r}"
    assert all(np.array_equal(p.data, b) for p, b in zip(model.params(), before))


def test_strict_takes_numpys_bools(tmp_path):
    """np.False_ (numpy's bool) was refused: "strict must be True or False, got np.False_"."""
    model = Net()
    model(np.ones((1, 2), np.float32))
    path = save_checkpoint(tmp_path / "c.npz", model=model)
    load_checkpoint(path, model=model, strict=np.True_)
    result = model.load_state_dict({}, strict=np.False_)  # names nothing: all missing
    assert sorted(result.missing) == sorted(model.state_dict())


UNREADABLE_FOLDER = """
import sys
from zerograd_nn import DataLoader
from zerograd_nn.checkpoint import latest_checkpoint
from zerograd_nn.datasets import Spiral
from zerograd_nn.layers import Linear
from zerograd_nn.optimizers import SGD
from zerograd_nn.training import Trainer

folder = sys.argv[1]
model = Linear(3, in_size=2)
trainer = Trainer(model, SGD().setup(model), DataLoader(Spiral(), 100), max_epochs=1)
for find in (latest_checkpoint, trainer.resume):
    try:
        find(folder)
    except OSError as exc:
        print(type(exc).__name__, exc, exc.__cause__ is None and exc.__suppress_context__)
print(trainer.iteration, trainer.resumed_from)
"""


def test_a_folder_that_cannot_be_listed_is_one_clear_error(tmp_path):
    # latest_checkpoint (and Trainer.resume of a folder) let os.listdir's bare
    # "[Errno 13] Permission denied: '<folder>'" out, naming neither itself nor what to do
    import subprocess
    import sys

    folder = tmp_path / "run"
    folder.mkdir()
    model = L.Linear(3, in_size=2)
    save_checkpoint(folder / "c.npz", model=model)
    script = tmp_path / "list.py"
    script.write_text(UNREADABLE_FOLDER)
    cmd = unprivileged([sys.executable, str(script), str(folder)])
    os.chmod(folder, 0o311)  # can be entered, not listed
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    finally:
        os.chmod(folder, 0o755)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    expected = (
        f"PermissionError [Errno 13] latest_checkpoint: cannot list the folder '{folder}' "
        f"(Permission denied); make it readable (chmod u+r) or give the path of a "
        f"checkpoint in it. True"
    )
    assert lines == [expected, expected, "0 None"]


@pytest.mark.parametrize("damage", ["truncated", "a flipped byte"])
def test_latest_checkpoint_warns_when_it_passes_over_a_damaged_newer_checkpoint(tmp_path, damage):
    # a damaged newest checkpoint was passed over in silence: a resume went on from an
    # older one, losing the iterations in between without a word
    from zerograd_nn.checkpoint import latest_checkpoint
    from zerograd_nn.weights import save_weights

    model = L.Linear(3, in_size=2)
    old = save_checkpoint(tmp_path / "c_1.npz", model=model, iteration=1)
    new = save_checkpoint(tmp_path / "c_2.npz", model=model, iteration=2)
    save_weights(model, tmp_path / "w.npz")  # not a checkpoint: passed over in silence
    data = bytearray((tmp_path / "c_2.npz").read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:
        data[120] ^= 1  # in the model's first array: its checksum fails
    (tmp_path / "c_2.npz").write_bytes(bytes(data))
    with pytest.warns(UserWarning) as record:
        assert latest_checkpoint(tmp_path) == old
    assert len(record) == 1
    msg = str(record[0].message)
    assert msg.startswith(f"latest_checkpoint: passed over {new!r}, which cannot be read as a ")
    assert msg.endswith(
        f"; {old!r} is the newest readable checkpoint. Delete or move the damaged file to "
        f"silence this warning."
    )
