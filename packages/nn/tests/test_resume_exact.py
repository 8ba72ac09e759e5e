"""A run resumed from a checkpoint equals the uninterrupted run, byte for byte.

Each run trains ``N`` updates and checkpoints at update ``K`` (in the middle of an epoch
and at an epoch's end); the resume happens in a fresh process and in this one after other
draws from every random state, and the parameters, the optimizer's and schedulers' states,
BatchNorm's running statistics and every loss are compared by bytes. The runs draw from
numpy's global state (initial weights, dropout, shuffling without ``seed=``), Python's
``random`` (``RandomHorizontalFlip``) and a loader's own generator (``seed=``).

Run as a script (``python test_resume_exact.py OUT K FLAGS``) it resumes the Trainer run
from ``OUT`` and prints its fingerprint: the fresh process.
"""

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

import zerograd
import zerograd_nn.functional as F
from zerograd import Variable
from zerograd_nn import DataLoader, SeqDataLoader
from zerograd_nn import layers as L
from zerograd_nn import optimizers as O
from zerograd_nn import schedulers as S
from zerograd_nn.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from zerograd_nn.datasets import Dataset, SinCurve
from zerograd_nn.models import Model
from zerograd_nn.training import Evaluator, LogReport, Snapshot, StepScheduler, Trainer
from zerograd_nn.transforms import Compose, Flatten, RandomHorizontalFlip

N = 16  # updates in every run; an epoch of the image data is 7 batches


class Images(Dataset):
    """50 one-channel 2x4 images with 3 classes (a fixed generator: no global draws)."""

    def prepare(self):
        r = np.random.RandomState(3 if self.train else 4)
        self.data = r.rand(50, 1, 2, 4).astype(np.float32)
        self.label = r.randint(0, 3, 50)


class Net(Model):
    def __init__(self):
        super().__init__()
        self.l1 = L.Linear(6)
        self.bn = L.BatchNorm()
        self.l2 = L.Linear(3)

    def forward(self, x):
        return self.l2(F.dropout(self.bn(F.relu(self.l1(x))), 0.3))


def _bytes(obj):
    """Every array and number in ``obj`` (dicts by sorted key), as one bytes string."""
    if isinstance(obj, dict):
        return b"".join(str(k).encode() + _bytes(obj[k]) for k in sorted(obj, key=str))
    if isinstance(obj, (list, tuple)):
        return b"[" + b",".join(_bytes(v) for v in obj) + b"]"
    if hasattr(obj, "dtype"):
        a = np.ascontiguousarray(obj)
        return str(a.dtype).encode() + str(a.shape).encode() + a.tobytes()
    return repr(obj).encode()


def _flags_trainer(out, flags):
    """The Trainer run: flips, dropout, BatchNorm, Adam, ReduceLROnPlateau and a warmup
    followed by a cosine schedule, LogReport, an Evaluator and a Snapshot every K."""
    zerograd.seed(0)
    random.seed(1)
    aug = Compose([RandomHorizontalFlip(), Flatten()])
    loader = DataLoader(
        Images(train=True, transform=aug), batch_size=8, seed=5 if "seeded" in flags else None
    )
    model = Net()
    opt = O.Adam(0.01).setup(model)
    trainer = Trainer(model, opt, loader, max_iterations=N, out=out, static="static" in flags)
    trainer.extend(LogReport(trigger=(1, "iteration"), filename="log.json"))
    plateau = S.ReduceLROnPlateau(opt, patience=0, factor=0.5)
    trainer.extend(StepScheduler(plateau, trigger=(1, "iteration"), monitor="loss"))
    warm = S.SequentialLR(opt, [S.LinearWarmup(opt, 3), S.CosineAnnealingLR(opt, 5)], [3])
    trainer.extend(StepScheduler(warm, trigger=(1, "iteration")), name="warm")
    shuffled = "shuffled-eval" in flags  # the DataLoader's default, against the docstring
    test = DataLoader(Images(train=False, transform=aug), batch_size=10, shuffle=shuffled)
    trainer.extend(Evaluator(test, trigger=(3, "iteration")))
    trainer.extend(Snapshot(trigger=(flags["K"], "iteration")))
    return trainer, (model, opt, plateau, warm)


def _fingerprint(trainer, objects):
    model, opt, plateau, warm = objects
    log = trainer.get_extension("LogReport").log
    state = [model.state_dict(), opt.state_dict(), plateau.state_dict(), warm.state_dict()]
    entries = [{k: v for k, v in e.items() if k != "elapsed_time"} for e in log]  # wall clock
    return _bytes(state).hex(), _bytes(entries).hex()


def _trainer_resumed(out, flags):
    trainer, objects = _flags_trainer(out, flags)
    trainer.resume(os.path.join(out, f"snapshot_iter_{flags['K']:08d}.npz"))
    trainer.run()
    return _fingerprint(trainer, objects)


def _draw_elsewhere():
    """What a notebook does between two runs: draws from every global random state."""
    np.random.rand(7)
    random.random()
    random.gauss(0, 1)  # leaves a cached normal in Python's state
    zerograd.seed(123)


@pytest.mark.parametrize(
    "k, flags",
    [
        (4, ()),  # mid-epoch, shuffling from numpy's global state
        (7, ("seeded",)),  # an epoch's end, the loader's own generator
        (10, ("seeded", "static")),  # mid-epoch, static_graph replay
        (4, ("shuffled-eval",)),  # a shuffling validation loader, after an evaluation
    ],
)
def test_a_resumed_trainer_run_equals_the_uninterrupted_one(tmp_path, k, flags):
    """Before Python's ``random`` state was saved, the flips after the resume differed.

    A shuffling validation loader draws the next pass's order as a pass ends; before the
    Evaluator kept its loader's state, a resumed run evaluated in the order its fresh loader
    drew, and the logged val/loss differed in the last digits.
    """
    flags = {**dict.fromkeys(flags, True), "K": k}
    trainer, objects = _flags_trainer(str(tmp_path), flags)
    trainer.run()
    want = _fingerprint(trainer, objects)
    _draw_elsewhere()
    assert _trainer_resumed(str(tmp_path), flags) == want  # the same process, other draws
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    cmd = [sys.executable, __file__, str(tmp_path), json.dumps(flags)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert tuple(json.loads(done.stdout)) == want  # a fresh process


def _loop_run(path, k, make_loader, make_sched, resume):
    """A hand-written loop with save_checkpoint/load_checkpoint: Adam with a frozen layer
    (its step counts stay behind the others'), ``make_sched``'s schedule stepped each
    update. Returns the losses' bytes and the final state's."""
    zerograd.seed(2)
    random.seed(3)
    model = Net()
    loader = make_loader()
    opt = O.Adam(0.02).setup(model)
    model(np.zeros((2, np.size(loader.dataset[0][0])), np.float32))
    freeze = O.FreezeParam(model.l1)
    sched = make_sched(opt)
    losses = []
    start = 0
    if resume:
        _draw_elsewhere()
        info = load_checkpoint(path, model=model, optimizer=opt, scheduler=sched, loader=loader)
        start = info["iteration"]
        losses = list(info["extra"]["losses"])
    for it in range(start, N):
        if it >= 3 and freeze not in opt.hooks:  # hooks are code, not state: added again
            opt.add_hook(freeze)  # l1 is frozen from here on: its Adam steps stop
        try:
            x, t = loader.next()
        except StopIteration:  # the epoch ended (DeZero's next); the loader starts the next
            x, t = loader.next()
        x = x.reshape(len(x), -1).astype(np.float32)
        y = model(x)
        loss = F.mean_squared_error(y, np.repeat(t.reshape(len(t), -1), 3, axis=1))
        model.cleargrads()
        loss.backward()
        opt.update()
        sched.step()
        losses.append(float(loss.data))
        if it + 1 == k and not resume:
            save_checkpoint(
                path,
                model=model,
                optimizer=opt,
                scheduler=sched,
                loader=loader,
                iteration=it + 1,
                extra={"losses": losses},
            )
    state = [model.state_dict(), opt.state_dict(), sched.state_dict(), loader.state_dict()]
    return _bytes(losses), _bytes(state)


def _sin_seq():
    return SeqDataLoader(SinCurve(train=True), batch_size=4)


def _flipped(seed):
    def make():
        aug = Compose([RandomHorizontalFlip(), Flatten()])
        return DataLoader(Images(train=True, transform=aug), batch_size=8, seed=seed)

    return make


SCHEDULES = {
    "step": lambda opt: S.StepLR(opt, step_size=3, gamma=0.5),
    "exponential": lambda opt: S.ExponentialLR(opt, gamma=0.9),
    "warm-restarts": lambda opt: S.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2),
    "chained": lambda opt: S.ChainedScheduler(
        [S.LinearWarmup(opt, 4), S.ExponentialLR(opt, gamma=0.95)]
    ),
    "sequential": lambda opt: S.SequentialLR(
        opt, [S.LinearWarmup(opt, 2), S.StepLR(opt, step_size=2, gamma=0.7)], [4]
    ),
}


@pytest.mark.parametrize(
    "make_loader", [_flipped(None), _flipped(9), _sin_seq], ids=["global", "seeded", "seq"]
)
@pytest.mark.parametrize("sched", sorted(SCHEDULES))
def test_a_resumed_loop_equals_the_uninterrupted_one(tmp_path, make_loader, sched):
    path = str(tmp_path / "run.npz")
    want = _loop_run(path, 5, make_loader, SCHEDULES[sched], resume=False)
    assert _loop_run(path, 5, make_loader, SCHEDULES[sched], resume=True) == want


def _bptt_run(path, k, resume, keep_state):
    """A truncated-BPTT loop (an LSTM over SinCurve, a window of 4 steps per update) that
    checkpoints after window ``k``, in the middle of the sequence; ``keep_state`` saves the
    LSTM's hidden and cell state in ``extra`` and gives them back, as how-to-train says.
    Returns the losses."""
    zerograd.seed(4)
    cell, head = L.LSTM(5), L.Linear(1)
    model = Model()
    model.cell, model.head = cell, head
    loader = SeqDataLoader(SinCurve(train=True), batch_size=3)
    opt = O.Adam(0.01).setup(model)
    losses, start = [], 0
    if resume:
        _draw_elsewhere()
        info = load_checkpoint(path, model=model, optimizer=opt, loader=loader)
        start, losses = info["iteration"], list(info["extra"]["losses"])
        if keep_state:
            cell.h = Variable(info["extra"]["h"])
            cell.c = Variable(info["extra"]["c"])
    for it in range(start, 6):
        loss = 0
        for _ in range(4):
            x, t = loader.next()
            loss += F.mean_squared_error(head(cell(x.astype(np.float32))), t.astype(np.float32))
        model.cleargrads()
        loss.backward()
        loss.unchain_backward()
        opt.update()
        losses.append(float(loss.data))
        if it + 1 == k and not resume:
            extra = {"losses": losses}
            if keep_state:
                extra.update(h=cell.h.data, c=cell.c.data)
            save_checkpoint(
                path, model=model, optimizer=opt, loader=loader, iteration=k, extra=extra
            )
    return losses


def test_a_resumed_bptt_loop_needs_the_rnn_state_that_the_checkpoint_does_not_hold(tmp_path):
    """how-to-train: a checkpoint holds no RNN hidden state; a run resumed in the middle of a
    sequence goes on bit for bit when the loop saves the state in ``extra`` and gives it
    back (the page's list of what a checkpoint restores left this out)."""
    path = str(tmp_path / "run.npz")
    want = _bptt_run(path, 3, resume=False, keep_state=True)
    assert _bptt_run(path, 3, resume=True, keep_state=True) == want
    assert _bptt_run(path, 3, resume=False, keep_state=False) == want
    cold = _bptt_run(path, 3, resume=True, keep_state=False)
    assert cold[:3] == want[:3] and cold[3] != want[3]  # started from no state


def _checkpoint_with(tmp_path, edit):
    """A checkpoint whose description ``edit`` changed, written as save_checkpoint writes."""
    import zipfile

    model = Net()
    model(np.zeros((2, 8), np.float32))
    path = tmp_path / "run.npz"
    save_checkpoint(path, model=model)
    with np.load(path) as z:
        arrays = {name: z[name] for name in z.files}
    parts = json.loads(arrays["__checkpoint__"].tobytes().decode())
    edit(parts, arrays)
    arrays["__checkpoint__"] = np.frombuffer(json.dumps(parts).encode(), np.uint8)
    with zipfile.ZipFile(path, "w") as zf:
        for name, a in arrays.items():
            with zf.open(name + ".npy", "w") as f:
                np.lib.format.write_array(f, a, allow_pickle=False)
    return model, path


def test_a_checkpoint_saves_and_restores_pythons_random_state(tmp_path):
    """``random`` was left where it was: a flip after the resume was not the one it gives."""
    model = Net()
    model(np.zeros((2, 8), np.float32))
    random.seed(11)
    random.gauss(0, 1)  # a cached normal is part of the state too
    save_checkpoint(tmp_path / "c.npz", model=model)
    want = [random.random() for _ in range(5)] + [random.gauss(0, 1)]
    random.seed(99)
    load_checkpoint(tmp_path / "c.npz", model=model)
    assert [random.random() for _ in range(5)] + [random.gauss(0, 1)] == want


def test_a_checkpoint_without_pythons_random_state_loads_and_leaves_it(tmp_path):
    """Files written before the state was saved: the rest loads, ``random`` is untouched."""

    def drop(parts, arrays):
        del parts["py_random"]
        del arrays["py_random/state"]

    model, path = _checkpoint_with(tmp_path, drop)
    random.seed(5)
    before = random.getstate()
    load_checkpoint(path, model=model)
    assert random.getstate() == before


@pytest.mark.parametrize(
    "damage",
    [
        lambda p, a: p["py_random"].update(version="three"),
        lambda p, a: p["py_random"].update(gauss="x"),
        lambda p, a: a.update({"py_random/state": np.zeros(3, np.uint32)}),
        lambda p, a: a.update({"py_random/state": np.zeros(625, np.float32)}),
        lambda p, a: p["py_random"].pop("gauss"),
    ],
    ids=["version", "gauss", "length", "dtype", "missing-key"],
)
def test_a_damaged_python_random_state_is_refused_and_changes_nothing(tmp_path, damage):
    model, path = _checkpoint_with(tmp_path, damage)
    random.seed(6)
    np.random.seed(6)
    before = random.getstate(), np.random.get_state()[1].copy(), model.l1.W.data.copy()
    model.l1.W.data[...] = 7.0
    weights = model.l1.W.data.copy()
    with pytest.raises(CheckpointError, match="holds a Python random state that Python refuses"):
        load_checkpoint(path, model=model)
    assert random.getstate() == before[0]
    assert np.array_equal(np.random.get_state()[1], before[1])
    assert np.array_equal(model.l1.W.data, weights)


if __name__ == "__main__":
    flags = json.loads(sys.argv[2])
    print(json.dumps(_trainer_resumed(sys.argv[1], flags)))
