"""Checkpoints: exact resume mid-epoch, all-or-nothing loading, the safe file format."""

import zipfile

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd_nn import DataLoader
from zerograd_nn import layers as L
from zerograd_nn import optimizers as O
from zerograd_nn import schedulers as S
from zerograd_nn.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
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
        ("optimizer", ValueError, r"the state dict is of a Adam, not a SGD"),
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


def test_numpy_global_random_state_is_restored(tmp_path):
    run, _ = trained_run(tmp_path)
    np.random.seed(3)
    path = save_checkpoint(tmp_path / "r", model=run[0])
    want = np.random.rand(4)
    np.random.seed(99)
    load_checkpoint(path, model=run[0])
    np.testing.assert_array_equal(np.random.rand(4), want)


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
        ({"optimizer": "adam"}, TypeError, r"optimizer must be None or an object with state_dict"),
        ({"epoch": "a"}, TypeError, r"save_checkpoint: epoch must be an int, got 'a' \(str\)"),
        ({"epoch": 1.5}, TypeError, r"save_checkpoint: epoch must be an int, got 1.5"),
        ({"iteration": -1}, ValueError, r"save_checkpoint: iteration must be >= 0, got -1"),
        ({"epoch": True}, TypeError, r"save_checkpoint: epoch must be an int, got True"),
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
