"""DataLoader and SeqDataLoader: batches, epochs, shuffling, drop_last, backend switching."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from zerograd.backends import NoBackendError, gpu_backend
from zerograd_nn import DataLoader, SeqDataLoader
from zerograd_nn.datasets import Dataset, Spiral


class Range(Dataset):
    """data = 0..n-1, label = 10 * data."""

    def __init__(self, n=10, **kw):
        self.n = n
        super().__init__(**kw)

    def prepare(self):
        self.data = np.arange(self.n, dtype=np.float32)[:, None]
        self.label = np.arange(self.n) * 10


def collect(loader):
    return [(x.copy(), None if t is None else t.copy()) for x, t in loader]


def test_batches_in_order_without_shuffle():
    batches = collect(DataLoader(Range(10), batch_size=4, shuffle=False))
    assert [x.shape for x, _ in batches] == [(4, 1), (4, 1), (2, 1)]
    np.testing.assert_array_equal(np.concatenate([x for x, _ in batches])[:, 0], np.arange(10))
    np.testing.assert_array_equal(np.concatenate([t for _, t in batches]), np.arange(10) * 10)


def test_drop_last_and_len():
    loader = DataLoader(Range(10), batch_size=4, shuffle=False, drop_last=True)
    assert len(loader) == 2 and [x.shape[0] for x, _ in loader] == [4, 4]
    assert len(DataLoader(Range(10), batch_size=4)) == 3


def test_each_epoch_is_a_new_permutation_of_all_items():
    np.random.seed(0)
    loader = DataLoader(Range(10), batch_size=3)
    epochs = []
    for _ in range(2):
        xs = np.concatenate([x[:, 0] for x, _ in loader])
        assert sorted(xs.tolist()) == list(range(10))
        epochs.append(xs)
    assert not np.array_equal(epochs[0], epochs[1])
    for x, t in DataLoader(Range(10), batch_size=3):
        np.testing.assert_array_equal(t, x[:, 0] * 10)  # pairs stay together


def test_next_and_reset_like_dezero():
    loader = DataLoader(Range(4), batch_size=2, shuffle=False)
    x, _ = loader.next()
    np.testing.assert_array_equal(x[:, 0], [0, 1])
    next(loader)
    with pytest.raises(StopIteration):
        next(loader)
    x, _ = next(loader)  # reset after the epoch
    np.testing.assert_array_equal(x[:, 0], [0, 1])


def test_a_subclass_reset_orders_the_first_epoch_too_like_dezero():
    # DeZero's constructor calls reset(), so a loader overriding it (its own order) gets
    # that order from the first epoch on, not from the second.
    class Reversed(DataLoader):
        def reset(self):
            super().reset()
            self.index = self.index[::-1].copy()

    loader = Reversed(Range(5), batch_size=2, shuffle=False)
    for _ in range(2):
        assert [t.tolist() for _, t in loader] == [[40, 30], [20, 10], [0]]


@pytest.mark.parametrize("shuffle", [False, True])
def test_a_dataset_whose_length_changed_is_refused_at_the_next_epoch(shuffle):
    # Appended items were never served (the order and len() counted the first five).
    data = [(np.float32(i), i) for i in range(5)]
    loader = DataLoader(data, batch_size=2, shuffle=shuffle, seed=0)
    assert sorted(t for _, b in loader for t in b.tolist()) == [0, 1, 2, 3, 4]
    data += [(np.float32(i), i) for i in range(5, 9)]
    index = loader.index.copy()
    with pytest.raises(ValueError, match=r"has 9 items now but had 5 when the loader was made"):
        next(loader)
    assert loader.iteration == 0 and loader.epoch == 1 and len(loader) == 3
    np.testing.assert_array_equal(loader.index, index)
    assert "Make a new DataLoader" in str(pytest.raises(ValueError, list, loader).value)


def test_a_dataset_that_shrank_in_an_epoch_is_explained():
    data = [(np.float32(i), i) for i in range(5)]
    loader = DataLoader(data, batch_size=2, shuffle=False)
    next(loader)
    del data[3:]
    with pytest.raises(ValueError, match=r"has 3 items now but had 5") as info:
        next(loader)
    assert isinstance(info.value.__context__, IndexError)
    assert loader.iteration == 1  # the failed batch is not counted


def test_transforms_are_applied_per_item():
    ds = Range(6, transform=lambda x: x + 100, target_transform=lambda t: -t)
    x, t = next(DataLoader(ds, batch_size=6, shuffle=False))
    np.testing.assert_array_equal(x[:, 0], np.arange(6) + 100)
    np.testing.assert_array_equal(t, -np.arange(6) * 10)


def test_plain_sequence_dataset_and_unlabelled():
    pairs = [(np.full(2, i, np.float32), i) for i in range(5)]
    x, t = next(DataLoader(pairs, batch_size=5, shuffle=False))
    assert x.shape == (5, 2) and t.tolist() == [0, 1, 2, 3, 4]

    class Plain(Dataset):
        def prepare(self):
            self.data = np.arange(4)

    x, t = next(DataLoader(Plain(), batch_size=4, shuffle=False))
    assert t is None and x.tolist() == [0, 1, 2, 3]


def test_spiral_loader_matches_dataset():
    ds = Spiral()
    x, t = next(DataLoader(ds, batch_size=30, shuffle=False))
    np.testing.assert_array_equal(x, ds.data[:30])
    assert x.dtype == np.float32


@pytest.mark.parametrize("bad", [0, -1, np.int64(0)])
def test_a_batch_size_below_one_is_a_value_error(bad):
    with pytest.raises(
        ValueError, match=r"^DataLoader: batch_size must be a positive int \(>= 1\)"
    ):
        DataLoader(Range(), batch_size=bad)
    with pytest.raises(ValueError, match=r"^SeqDataLoader: batch_size must be a positive int"):
        SeqDataLoader(Range(), batch_size=bad)


@pytest.mark.parametrize("bad", [True, False, 2.0, "2", np.bool_(True), np.array([2])])
def test_a_batch_size_that_is_no_int_is_a_type_error(bad):
    with pytest.raises(TypeError, match=r"^DataLoader: batch_size must be a positive int, got "):
        DataLoader(Range(), batch_size=bad)
    with pytest.raises(TypeError, match=r"^SeqDataLoader: batch_size must be a positive int"):
        SeqDataLoader(Range(), batch_size=bad)


def test_numpy_integer_batch_size_is_accepted():
    loader = DataLoader(Range(5), batch_size=np.int64(2), shuffle=False)
    assert loader.batch_size == 2 and type(loader.batch_size) is int and len(loader) == 3
    assert [x.shape[0] for x, _ in loader] == [2, 2, 1]


def test_data_and_label_length_mismatch_is_refused_at_construction():
    ds = Range(5)
    ds.label = ds.label[:3]
    with pytest.raises(ValueError, match="5 data items but 3 labels; give one label per item"):
        DataLoader(ds, batch_size=2)

    class Mismatch(Dataset):
        def prepare(self):
            self.data = np.zeros((4, 2))
            self.label = np.zeros(6)

    with pytest.raises(ValueError, match="Mismatch: 4 data items but 6 labels"):
        Mismatch()


def test_dataset_must_be_sized_indexable_and_not_empty():
    with pytest.raises(TypeError, match="dataset must be sized and indexable .* got int"):
        DataLoader(5, batch_size=2)
    with pytest.raises(ValueError, match="the dataset is empty"):
        DataLoader([], batch_size=2)


def test_seq_dataloader_refuses_a_batch_larger_than_the_data():
    with pytest.raises(ValueError, match=r"batch_size 5 is larger than the dataset \(3 items\)"):
        SeqDataLoader(Range(3), batch_size=5)
    rows = [x[:, 0].tolist() for x, _ in SeqDataLoader(Range(3), batch_size=3)]
    assert rows == [[0, 1, 2]]  # batch == length: every row its own item


# -- epochs after break, seeding, state ---------------------------------------------------


def test_a_for_after_break_starts_a_new_epoch():
    loader = DataLoader(Range(10), batch_size=3, shuffle=False)
    for _batch in loader:
        break
    assert loader.iteration == 1 and loader.epoch == 0
    firsts = [x[0, 0] for x, _ in loader]
    assert firsts == [0, 3, 6, 9]  # the whole epoch again, not the old one's rest
    assert loader.epoch == 2
    assert [x[0, 0] for x, _ in loader] == [0, 3, 6, 9]  # a finished epoch: a new one
    assert loader.epoch == 3


def test_next_calls_then_for_continue_the_epoch_like_dezero():
    loader = DataLoader(Range(6), batch_size=2, shuffle=False)
    assert loader.next()[0][:, 0].tolist() == [0, 1]
    assert [x[0, 0] for x, _ in loader] == [2, 4]
    for _ in loader:
        break
    assert next(loader)[0][:, 0].tolist() == [2, 3]  # next() keeps the epoch going


def test_shuffled_epochs_after_break_are_new_permutations():
    loader = DataLoader(Range(12), batch_size=4, seed=3)
    for x, _ in loader:
        first = x[:, 0].copy()
        break
    epoch = np.concatenate([x[:, 0] for x, _ in loader])
    assert sorted(epoch.tolist()) == list(range(12))
    assert not np.array_equal(epoch[:4], first)


def test_seeded_loaders_give_the_same_order_and_leave_the_global_rng_alone():
    np.random.seed(5)
    before = np.random.get_state()
    a = [collect(DataLoader(Range(20), batch_size=6, seed=11)) for _ in range(2)]
    loader = DataLoader(Range(20), batch_size=6, seed=11)
    epochs = [np.concatenate([x[:, 0] for x, _ in loader]) for _ in range(3)]
    after = np.random.get_state()  # nothing drawn from the global state
    np.testing.assert_array_equal(after[1], before[1])
    assert after[2:] == before[2:]
    assert np.random.rand() == np.random.RandomState(5).rand()
    for (xa, ta), (xb, tb) in zip(a[0], a[1]):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ta, tb)
    ref = np.random.Generator(np.random.PCG64(11))
    for epoch in epochs:  # an independent generator gives the same permutations
        np.testing.assert_array_equal(epoch, ref.permutation(20))
    other = np.concatenate([x[:, 0] for x, _ in DataLoader(Range(20), batch_size=6, seed=12)])
    assert not np.array_equal(other, epochs[0])


@pytest.mark.parametrize("bad", [-1, 1.5, "0", True])
def test_bad_seed(bad):
    with pytest.raises(ValueError, match="seed must be None or a non-negative int, got"):
        DataLoader(Range(), batch_size=2, seed=bad)


def _rest_of_epoch(loader):
    return [x[:, 0].tolist() for x, _ in loader]


@pytest.mark.parametrize("seed", [None, 4])
def test_state_round_trip_mid_epoch_gives_the_same_remaining_batches(seed):
    np.random.seed(1)
    loader = DataLoader(Range(11), batch_size=3, seed=seed)
    list(loader)  # one whole epoch first
    next(loader)
    state = loader.state_dict()
    assert state["epoch"] == 1 and state["iteration"] == 1
    assert all(isinstance(state[k], int) for k in ("epoch", "iteration"))
    assert all(isinstance(state[k], np.ndarray) for k in ("index", "rng_state"))
    snapshot = np.random.get_state()
    expected = _rest_of_epoch(loader) + _rest_of_epoch(loader)  # this epoch's rest, the next

    fresh = DataLoader(Range(11), batch_size=3, seed=None if seed is None else 99)
    np.random.set_state(snapshot)  # a checkpoint restores the global state too
    fresh.load_state_dict(state)
    assert (fresh.epoch, fresh.iteration) == (1, 1)
    got = _rest_of_epoch(fresh) + _rest_of_epoch(fresh)
    assert got == expected and len(got) == 3 + 4


def test_state_dict_is_a_copy():
    loader = DataLoader(Range(5), batch_size=2, seed=0)
    state = loader.state_dict()
    state["index"][:] = 0
    assert sorted(loader.index.tolist()) == [0, 1, 2, 3, 4]


def test_seq_dataloader_state_round_trip():
    loader = SeqDataLoader(Range(10), batch_size=3)
    next(loader)
    next(loader)
    state = loader.state_dict()
    expected = _rest_of_epoch(loader)
    fresh = SeqDataLoader(Range(10), batch_size=3)
    fresh.load_state_dict(state)
    assert _rest_of_epoch(fresh) == expected == [[2, 5, 8], [3, 6, 9]]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s: s.pop("index"), r"expected a dict with keys \['epoch', 'iteration'"),
        (lambda s: s.update(iteration=9), "iteration 9 do not fit this loader"),
        (lambda s: s.update(epoch=-1), "epoch -1 / iteration 2"),
        (lambda s: s.update(epoch=1.5), "must be ints .*, got epoch=1.5"),
        (lambda s: s.update(index=np.arange(6)), r"all 5 items .* got shape \(6,\)"),
        (lambda s: s.update(index=np.zeros(5, int)), "an order of all 5 items"),
        (lambda s: s.update(rng_state=np.zeros(3, np.uint64)), "rng_state must hold 0 or 6"),
        (lambda s: s.update(rng_state=np.zeros(0, np.uint64)), "without seed=, this one has"),
        (lambda s: s.update(index=np.arange(5.0)), "index must hold integers .* float64"),
        (lambda s: s.update(iteration=True), "must be ints .*, got epoch=0, iteration=True"),
        (lambda s: s.update(rng_state=s["rng_state"].astype(float)), "6 words of dtype uint64"),
        (lambda s: s.update(position=3), r"unknown keys \['position'\]; is this the state"),
        (lambda s: s.update(batch_size=0), "batch_size >= 1"),
        (lambda s: s.update(batch_size=1), "in the middle of an epoch .* batch_size 1; this one"),
    ],
)
def test_load_state_dict_checks_everything_and_changes_nothing_on_failure(change, message):
    loader = DataLoader(Range(5), batch_size=2, seed=0)
    next(loader)
    state = DataLoader(Range(5), batch_size=2, seed=1).state_dict()
    state["iteration"] = 2
    change(state)
    before = loader.state_dict()
    with pytest.raises(ValueError, match=message):
        loader.load_state_dict(state)
    after = loader.state_dict()
    assert before.keys() == after.keys()
    for k in before:
        np.testing.assert_array_equal(before[k], after[k])
    with pytest.raises(ValueError, match="DataLoader.load_state_dict: expected a dict"):
        loader.load_state_dict([1, 2])


def _examples_from_here(loader, epochs=2):
    """The examples the loader gives from its position on: this epoch's rest and more."""
    return [v for _ in range(epochs) for x, _ in loader for v in x[:, 0].tolist()]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 12),
    saved_size=st.integers(1, 5),
    size=st.integers(1, 5),
    served=st.integers(0, 12),
    seed=st.none() | st.integers(0, 3),
    drop_last=st.booleans(),
)
def test_a_state_resumes_the_same_examples_or_is_refused_with_another_batch_size(
    n, saved_size, size, served, seed, drop_last
):
    assume(not drop_last or max(saved_size, size) <= n)  # else a loader has no batch at all
    np.random.seed(0)
    saved = DataLoader(Range(n), batch_size=saved_size, seed=seed, drop_last=drop_last)
    served = min(served, len(saved))
    for _ in range(served):
        next(saved)
    state = saved.state_dict()
    np.random.seed(1)
    loader = DataLoader(
        Range(n), batch_size=size, seed=None if seed is None else seed + 1, drop_last=drop_last
    )
    before = loader.state_dict()
    mid_epoch = 0 < served < len(saved)
    if saved_size != size and mid_epoch:
        with pytest.raises(ValueError, match=f"batch_size {saved_size}; this one has batch_size"):
            loader.load_state_dict(state)
        after = loader.state_dict()
        assert all(np.array_equal(before[k], after[k]) for k in before)
        return
    loader.load_state_dict(state)  # at an epoch's start or end any batch size goes on
    if drop_last and saved_size != size:
        # the next epochs drop other examples at the end: only the position carries over
        assert loader.state_dict()["epoch"] == state["epoch"]
        assert loader.iteration in (0, loader.max_iter)
        return
    np.random.seed(2)  # a checkpoint restores the global random state with the loader's
    want = _examples_from_here(saved)
    np.random.seed(2)
    assert _examples_from_here(loader) == want


def _gpu_usable():
    try:
        gpu_backend()
        return True
    except NoBackendError:
        return False


def test_to_gpu_without_gpu_is_a_clear_error_and_changes_nothing():
    if _gpu_usable():
        pytest.skip("a GPU backend is usable here; the no-GPU error cannot be tested")
    loader = DataLoader(Range(), batch_size=2)
    with pytest.raises(NoBackendError, match="GPU"):
        loader.to_gpu()
    assert loader.gpu is False
    with pytest.raises(NoBackendError):
        DataLoader(Range(), batch_size=2, gpu=True)


def test_to_gpu_moves_batches():
    if not _gpu_usable():
        pytest.skip("no usable GPU backend (install zerograd-cupy on a CUDA machine)")
    loader = DataLoader(Range(), batch_size=2, shuffle=False, gpu=True)
    x, t = next(loader)
    assert type(x) is not np.ndarray
    loader.to_cpu()
    x, t = next(loader)
    assert type(x) is np.ndarray


def test_seq_dataloader_jumps_like_dezero():
    ds = Range(10)
    loader = SeqDataLoader(ds, batch_size=3)
    assert loader.shuffle is False and len(loader) == 4
    rows = [x[:, 0].tolist() for x, _ in loader]
    # jump = 10 // 3 = 3: row i of batch k is item (3 * i + k) % 10
    assert rows == [[0, 3, 6], [1, 4, 7], [2, 5, 8], [3, 6, 9]]
    _, t = next(loader)
    assert t.tolist() == [0, 30, 60]


class FakeGPUArray:
    """An array type of a pretend GPU backend (holds a numpy array)."""

    def __init__(self, a):
        self.a = np.asarray(a)


@pytest.fixture
def fake_gpu(monkeypatch):
    """Make a pretend backend the only GPU one for one test, then restore the registry."""
    from zerograd import backends
    from zerograd.backends import Backend

    class FakeGPU(Backend):
        name = "fakegpu"
        device = "gpu"

        def owns(self, array_type):
            return issubclass(array_type, FakeGPUArray)

        def load_module(self):
            return np

        def to_numpy(self, x):
            return x.a

        def from_numpy(self, a):
            return FakeGPUArray(a)

    monkeypatch.setenv("ZEROGRAD_BLOCK_PLUGINS", "cupy")  # a real (or simulated) GPU backend
    backends.refresh()
    backends.register(FakeGPU())
    try:
        yield
    finally:
        monkeypatch.undo()
        backends.refresh()


def test_to_gpu_and_back_switch_the_batches_backend(fake_gpu):
    loader = DataLoader(Range(6), batch_size=3, shuffle=False, gpu=True)
    x, t = next(loader)
    assert type(x) is FakeGPUArray and type(t) is FakeGPUArray
    np.testing.assert_array_equal(x.a[:, 0], [0, 1, 2])
    loader.to_cpu()
    x, t = next(loader)
    assert type(x) is np.ndarray and x[:, 0].tolist() == [3, 4, 5]
    loader.to_gpu()
    x, _ = next(SeqDataLoader(Range(6), batch_size=2, gpu=True))
    assert type(x) is FakeGPUArray and x.a[:, 0].tolist() == [0, 3]


def test_state_survives_an_npz_round_trip(tmp_path):
    """Checkpoints store the state in an .npz file: ints come back as 0-d arrays."""
    loader = DataLoader(Range(9), batch_size=2, seed=7)
    list(loader)
    next(loader)
    np.savez(tmp_path / "state.npz", **loader.state_dict())
    expected = _rest_of_epoch(loader) + _rest_of_epoch(loader)
    with np.load(tmp_path / "state.npz") as f:
        state = {k: f[k] for k in f.files}
    assert state["epoch"].shape == () and state["rng_state"].dtype == np.uint64
    fresh = DataLoader(Range(9), batch_size=2, seed=0)
    fresh.load_state_dict(state)
    assert type(fresh.epoch) is int and (fresh.epoch, fresh.iteration) == (1, 1)
    assert _rest_of_epoch(fresh) + _rest_of_epoch(fresh) == expected


def test_drop_last_that_leaves_no_batch_is_refused():
    with pytest.raises(
        ValueError,
        match=r"^DataLoader: drop_last=True with batch_size 8 larger than the dataset \(5 items\) "
        r"leaves no batch at all",
    ):
        DataLoader(Range(5), batch_size=8, drop_last=True)
    assert len(DataLoader(Range(5), batch_size=8)) == 1  # without drop_last: one short batch


def test_items_that_are_not_pairs_are_refused():
    rows = [np.array([1, 2]), np.array([3, 4])]  # used to give x = [1, 3], t = [2, 4]
    with pytest.raises(TypeError, match=r"^DataLoader: dataset\[0\] is a ndarray, not an \(x, t\)"):
        next(DataLoader(rows, batch_size=2, shuffle=False))
    singles = [(np.array([1.0]),), (np.array([2.0]),)]
    with pytest.raises(TypeError, match=r"dataset\[0\] is a tuple of length 1, not an \(x, t\)"):
        next(DataLoader(singles, batch_size=2, shuffle=False))
    x, t = next(DataLoader([(r, None) for r in rows], batch_size=2, shuffle=False))
    assert t is None and x.tolist() == [[1, 2], [3, 4]]


def test_ragged_items_are_refused_naming_the_loader_and_the_items():
    data = [(np.ones(2), 0), (np.ones(2), 1), (np.ones(3), 0)]
    loader = DataLoader(data, batch_size=3, shuffle=False)
    with pytest.raises(
        ValueError,
        match=r"^DataLoader: cannot stack a batch: dataset\[0\] has x of shape \(2,\) but "
        r"dataset\[2\] has x of shape \(3,\); every item's x needs one shape",
    ):
        next(loader)
    assert (loader.epoch, loader.iteration) == (0, 0)
    labels = [(np.ones(2), np.zeros(1)), (np.ones(2), np.zeros(2))]
    with pytest.raises(ValueError, match=r"dataset\[1\] has t of shape \(2,\)"):
        next(DataLoader(labels, batch_size=2, shuffle=False))


@pytest.mark.parametrize("kw", [{"shuffle": "no"}, {"drop_last": "x"}, {"gpu": 1}])
def test_flags_must_be_booleans(kw):
    ((name, value),) = kw.items()
    with pytest.raises(
        TypeError, match=rf"^DataLoader: {name} must be True or False, got {value!r}"
    ):
        DataLoader([(np.ones(1), 0)] * 4, 2, **kw)
    assert DataLoader([(np.ones(1), 0)] * 4, 2, shuffle=np.bool_(False)).shuffle == np.False_


class _FlipThenFail:
    """A random flip (Python's random) and numpy noise, then a failure at the item ``bad``."""

    def __init__(self, bad):
        self.bad = bad

    def __call__(self, x):
        import random

        if x[0] == self.bad:
            raise KeyboardInterrupt  # Ctrl-C, or a corrupt item, after the others drew
        flipped = x[::-1].copy() if random.random() < 0.5 else x
        return flipped + np.random.rand(*x.shape).astype(np.float32)


def test_a_transform_failing_on_the_last_item_of_a_batch_undoes_the_draws_of_the_others():
    """The first items' flips and noise had moved Python's and numpy's random states."""
    import random

    class Pairs(Dataset):
        def prepare(self):
            self.data = np.arange(16, dtype=np.float32).reshape(8, 2)
            self.label = np.arange(8)

    transform = _FlipThenFail(bad=14.0)  # item 7: the last of the second batch
    loader = DataLoader(Pairs(transform=transform), batch_size=4, shuffle=False)
    next(loader)
    random.seed(1)
    np.random.seed(1)
    state = (random.getstate(), np.random.get_state()[1].tobytes(), repr(loader.state_dict()))
    with pytest.raises(KeyboardInterrupt):
        next(loader)
    assert (random.getstate(), np.random.get_state()[1].tobytes()) == state[:2]
    assert repr(loader.state_dict()) == state[2]
    transform.bad = None  # fixed: the batch read again is the batch a first read gives
    x, t = next(loader)
    random.seed(1)
    np.random.seed(1)
    expected = [transform(np.array([2 * i, 2 * i + 1], np.float32)) for i in range(4, 8)]
    np.testing.assert_array_equal(x, np.stack(expected))
    np.testing.assert_array_equal(t, np.arange(4, 8))


def test_threads_sharing_a_loader_never_get_one_batch_twice():
    """Both threads are inside the dataset at once (a barrier at each batch's first item):
    each must be gathering its own batch."""
    import threading

    barrier = threading.Barrier(2)

    class Meeting:  # a dataset where the two threads' gathers meet
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i % 2 == 0:
                barrier.wait(timeout=5)
            return np.array([float(i)]), i

    loader = DataLoader(Meeting(), 2, shuffle=False)
    got, errors = [], []

    def work():
        try:
            got.append(next(loader)[1].tolist())
        except Exception as exc:  # a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(got) == [[0, 1], [2, 3]]
    assert loader.iteration == 2


def test_a_failed_gather_leaves_the_position_as_it_was():
    class Broken:
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 2:
                raise KeyError(i)
            return np.array([float(i)]), i

    loader = DataLoader(Broken(), 2, shuffle=False)
    next(loader)
    with pytest.raises(KeyError):
        next(loader)
    assert loader.iteration == 1
