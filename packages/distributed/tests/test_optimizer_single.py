"""DataParallelOptimizer's argument checks, and on one rank: exactly the wrapped optimizer."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Variable
from zerograd_distributed import (
    DataParallelOptimizer,
    create_communicator,
    create_multi_node_optimizer,
)
from zerograd_nn import DataLoader
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import SGD, Adam
from zerograd_nn.training import Trainer


def test_arguments_are_checked():
    comm = create_communicator("mpi")
    with pytest.raises(TypeError, match=r"optimizer must be a zerograd-nn optimizer .* got int"):
        DataParallelOptimizer(3, comm)
    with pytest.raises(TypeError, match=r"comm must come from create_communicator\(...\), got str"):
        DataParallelOptimizer(Adam(), "mpi")
    with pytest.raises(ValueError, match=r"bucket_bytes must be a positive int \(>= 1\), got 0"):
        DataParallelOptimizer(Adam(), comm, bucket_bytes=0)
    with pytest.raises(TypeError, match=r"bucket_bytes must be a positive int, got 2.0"):
        DataParallelOptimizer(Adam(), comm, bucket_bytes=2.0)
    with pytest.raises(ValueError, match=r"root must be a rank in 0..0, got 1"):
        DataParallelOptimizer(Adam(), comm, root=1)
    with pytest.raises(TypeError, match=r"root must be a rank in 0..0, got 0.0"):
        DataParallelOptimizer(Adam(), comm, root=0.0)
    for bad in ("no", 0, None):  # read by its truth before: "no" switched the check on
        with pytest.raises(TypeError) as info:
            DataParallelOptimizer(Adam(), comm, check_finite=bad)
        want = f"DataParallelOptimizer: check_finite must be True or False, got {bad!r}"
        assert str(info.value) == want
    assert DataParallelOptimizer(Adam(), comm, check_finite=np.True_).check_finite is True


def test_one_rank_trains_like_the_wrapped_optimizer():
    comm = create_communicator("mpi")
    x = np.random.default_rng(0).random((8, 3), dtype=np.float32)
    t = np.arange(8) % 2
    models = []
    for wrap in (False, True):
        np.random.seed(0)
        model = MLP((5, 2))
        opt = Adam(alpha=0.05).setup(model)
        if wrap:
            opt = create_multi_node_optimizer(Adam(alpha=0.05), comm).setup(model)
        for _ in range(3):
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            opt.update()
        models.append([p.data for p in model.params()])
    for a, b in zip(*models):
        np.testing.assert_array_equal(a, b)


def test_wrapper_copies_without_recursion():
    comm = create_communicator("mpi")
    opt = DataParallelOptimizer(Adam(alpha=0.3), comm)
    twin = copy.copy(opt)  # copy asks for dunder hooks before __init__ has run
    assert twin.optimizer is opt.optimizer and twin.alpha == 0.3
    assert not hasattr(opt, "__missing_hook__")  # dunder names are never forwarded


def test_schedulers_drive_the_wrapped_optimizers_rate():
    from zerograd_nn.optimizers import SGD
    from zerograd_nn.schedulers import StepLR

    comm = create_communicator("mpi")
    model = MLP((3, 2))
    model(np.zeros((1, 2), np.float32))
    opt = DataParallelOptimizer(SGD(lr=1.0), comm).setup(model)
    scheduler = StepLR(opt, step_size=1, gamma=0.5)
    scheduler.step()
    assert opt.optimizer.lr == 0.5 and scheduler.get_last_lr() == [0.5]


def test_step_is_the_wrappers_update_which_averages_first(monkeypatch):
    comm = create_communicator("mpi")
    model = MLP((3, 2))
    model(np.zeros((1, 2), np.float32))
    opt = DataParallelOptimizer(Adam(alpha=0.1), comm).setup(model)
    calls = []
    original = DataParallelOptimizer.average_grads
    monkeypatch.setattr(
        DataParallelOptimizer, "average_grads", lambda self: calls.append(1) or original(self)
    )
    for p in model.params():
        p.grad = Variable(np.ones(p.shape, np.float32))
    before = [p.data.copy() for p in model.params()]
    opt.step()  # not the wrapped optimizer's step, which would skip the averaging
    assert calls == [1]
    assert all(not np.array_equal(p.data, b) for p, b in zip(model.params(), before))
    opt.zero_grad()  # the wrapped optimizer's: clears the model's gradients
    assert all(p.grad is None for p in model.params())


def test_on_one_rank_trainer_static_replays_with_no_warning(tmp_path):
    """Nothing is averaged on one rank: the Trainer's static steps replay."""
    comm = create_communicator("mpi")
    x = np.random.default_rng(0).random((24, 3), dtype=np.float32)
    data = list(zip(x, (x.sum(axis=1) > 1.5).astype(np.int64)))
    model = MLP((4, 2))
    opt = DataParallelOptimizer(SGD(lr=0.1), comm).setup(model)
    assert opt.replay_problem() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trainer = Trainer(
            model, opt, DataLoader(data, 8), max_iterations=6, static=True, out=tmp_path
        )
        trainer.run()
    assert trainer.step.counts["replayed"] > 0


def test_dtype_names_are_numpy_s_and_unhashable_dtypes_are_named_too():
    from zerograd_distributed.optimizer import _name

    assert _name(np.dtype("float32")) == "float32" == _name(np.float32(0).dtype)
    assert _name(np.dtype(">f8")) == str(np.dtype(">f8"))  # another byte order, its own name

    class Unhashable:
        __hash__ = None

        def __str__(self):
            return "custom"

    assert _name(Unhashable()) == "custom"


def _trained_pair(steps):
    comm = create_communicator("mpi")
    rng = np.random.default_rng(1)
    x, t = rng.random((8, 3), dtype=np.float32), np.arange(8) % 2
    model = MLP((4, 2))
    model(x)
    opt = DataParallelOptimizer(Adam(alpha=0.05), comm).setup(model)

    def train(model, opt, n):
        for _ in range(n):
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            opt.update()

    train(model, opt, steps)
    return comm, model, opt, train


def test_a_deep_copy_of_model_and_wrapper_trains_on_over_the_same_communicator():
    # deepcopy failed with "cannot pickle 'module' object" (the MPI module the
    # communicator holds): a target network or a Trainer could not be copied
    comm, model, opt, train = _trained_pair(2)
    twin, twin_opt = copy.deepcopy((model, opt))
    assert twin_opt.comm is comm and twin_opt.optimizer is not opt.optimizer
    assert twin_opt.target is twin
    before = [p.data.tobytes() for p in model.params()]
    train(twin, twin_opt, 3)
    assert [p.data.tobytes() for p in model.params()] == before
    train(model, opt, 3)
    assert [p.data.tobytes() for p in model.params()] == [p.data.tobytes() for p in twin.params()]


def test_pickling_the_wrapper_is_refused_naming_what_to_pickle():
    # pickle failed inside the communicator ("Can't pickle local object
    # 'WeakValueDictionary.__init__.<locals>.remove'"), naming nothing of the user's
    comm, model, opt, _ = _trained_pair(1)
    with pytest.raises(TypeError, match=r"^MpiCommunicator cannot be pickled: ") as info:
        pickle.dumps((model, opt))
    assert "pickle.dumps((model, optimizer.optimizer))" in str(info.value)
    twin, inner = pickle.loads(pickle.dumps((model, opt.optimizer)))  # what it says works
    assert inner.target is twin


def test_a_deep_copy_of_a_trainer_with_the_wrapper_runs_on_as_the_original(tmp_path):
    comm = create_communicator("mpi")
    rng = np.random.default_rng(2)
    data = [(rng.random(3, dtype=np.float32), i % 2) for i in range(16)]
    model = MLP((4, 2))
    opt = DataParallelOptimizer(Adam(alpha=0.05), comm).setup(model)
    loader = DataLoader(data, 8, seed=0)
    trainer = Trainer(model, opt, loader, max_iterations=2, out=tmp_path)
    trainer.run()
    twin = copy.deepcopy(trainer)
    assert twin.optimizer.comm is comm and twin.optimizer.target is twin.model
    for t in (twin, trainer):
        t.max_iterations = 6
        t.run()
    assert [p.data.tobytes() for p in twin.model.params()] == [
        p.data.tobytes() for p in model.params()
    ]
