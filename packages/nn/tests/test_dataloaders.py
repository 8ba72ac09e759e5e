"""DataLoader and SeqDataLoader: batches, epochs, shuffling, drop_last, backend switching."""

import numpy as np
import pytest

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


def test_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        DataLoader(Range(), batch_size=0)


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
