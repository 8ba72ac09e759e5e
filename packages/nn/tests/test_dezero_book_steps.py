"""The book's steps 48-60 written DeZero's way, with only ``dezero`` -> ``zerograd_nn.dezero``
in the import lines: module paths after ``import dezero`` (``dezero.datasets.Spiral``,
``dezero.optimizers.Adam``, ``dezero.cuda.gpu_enable``, ``dezero.no_grad``, ...), a few
iterations each. Every result is checked against the same computation written with
zerograd's own modules, from the same seed: they must agree bit for bit.
"""

import gzip
import math
import os
import shutil
import struct

import numpy as np
import pytest

# the book's imports, the package name changed (dezero, F, L, DataLoader, MLP, ...), and
# zerograd's own modules, the reference (zerograd, zerograd_nn, zF, zD, zL, zM, zO)
import zerograd
import zerograd_nn
import zerograd_nn.dezero as dezero
import zerograd_nn.dezero.functions as F
import zerograd_nn.dezero.layers as L
import zerograd_nn.functional as zF
from zerograd_nn import datasets as zD
from zerograd_nn import layers as zL
from zerograd_nn import models as zM
from zerograd_nn import optimizers as zO
from zerograd_nn.dezero import DataLoader, Model, SeqDataLoader, Variable, optimizers, test_mode
from zerograd_nn.dezero.models import MLP, VGG16


def _spiral_sgd_book(epochs, batch_size=30):
    """Step 48: get_spiral, MLP, SGD, minibatches by hand, then a prediction in no_grad."""
    x, t = dezero.datasets.get_spiral(train=True)
    model = MLP((10, 3))
    optimizer = optimizers.SGD(1.0).setup(model)
    data_size = len(x)
    max_iter = math.ceil(data_size / batch_size)
    losses = []
    for _epoch in range(epochs):
        index = np.random.permutation(data_size)
        sum_loss = 0
        for i in range(max_iter):
            batch_index = index[i * batch_size : (i + 1) * batch_size]
            batch_x, batch_t = x[batch_index], t[batch_index]
            y = model(batch_x)
            loss = F.softmax_cross_entropy(y, batch_t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            sum_loss += float(loss.data) * len(batch_t)
        losses.append(sum_loss / data_size)
    with dezero.no_grad():
        score = model(x[:7])
    return losses, score.data


def _spiral_sgd_zerograd(epochs, batch_size=30):
    x, t = zD.get_spiral(train=True)
    model = zM.MLP((10, 3))
    optimizer = zO.SGD(1.0).setup(model)
    losses = []
    for _epoch in range(epochs):
        index = np.random.permutation(len(x))
        sum_loss = 0
        for i in range(math.ceil(len(x) / batch_size)):
            batch = index[i * batch_size : (i + 1) * batch_size]
            loss = zF.softmax_cross_entropy(model(x[batch]), t[batch])
            model.cleargrads()
            loss.backward()
            optimizer.update()
            sum_loss += float(loss.data) * len(batch)
        losses.append(sum_loss / len(x))
    with zerograd.no_grad():
        score = model(x[:7])
    return losses, score.data


def test_step48_spiral_with_minibatches_by_hand():
    np.random.seed(0)
    book = _spiral_sgd_book(epochs=3)
    np.random.seed(0)
    direct = _spiral_sgd_zerograd(epochs=3)
    assert book[0] == direct[0] and book[0][2] < book[0][0]
    np.testing.assert_array_equal(book[1], direct[1])


def test_step49_spiral_dataset_items():
    train_set = dezero.datasets.Spiral(train=True)
    batch = [train_set[i] for i in (0, 5, 299)]
    batch_x = np.array([example[0] for example in batch])
    batch_t = np.array([example[1] for example in batch])
    reference = zD.Spiral(train=True)
    np.testing.assert_array_equal(batch_x, reference.data[[0, 5, 299]])
    np.testing.assert_array_equal(batch_t, reference.label[[0, 5, 299]])
    assert len(train_set) == len(reference) == 300


def _step50_book():
    train_set = dezero.datasets.Spiral(train=True)
    test_set = dezero.datasets.Spiral(train=False)
    train_loader = DataLoader(train_set, 30)
    test_loader = DataLoader(test_set, 30, shuffle=False)
    model = MLP((10, 3))
    optimizer = optimizers.SGD(1.0).setup(model)
    out = []
    for _epoch in range(2):
        sum_loss, sum_acc = 0, 0
        for x, t in train_loader:
            y = model(x)
            loss = F.softmax_cross_entropy(y, t)
            acc = F.accuracy(y, t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            sum_loss += float(loss.data) * len(t)
            sum_acc += float(acc.data) * len(t)
        out.append((sum_loss / len(train_set), sum_acc / len(train_set)))
        sum_loss, sum_acc = 0, 0
        with dezero.no_grad():
            for x, t in test_loader:
                y = model(x)
                sum_loss += float(F.softmax_cross_entropy(y, t).data) * len(t)
                sum_acc += float(F.accuracy(y, t).data) * len(t)
        out.append((sum_loss / len(test_set), sum_acc / len(test_set)))
    return out


def _step50_zerograd():
    train_loader = zerograd_nn.DataLoader(zD.Spiral(train=True), 30)
    test_loader = zerograd_nn.DataLoader(zD.Spiral(train=False), 30, shuffle=False)
    model = zM.MLP((10, 3))
    optimizer = zO.SGD(1.0).setup(model)
    out = []
    for _epoch in range(2):
        sums = [0, 0]
        for x, t in train_loader:
            y = model(x)
            loss, acc = zF.softmax_cross_entropy(y, t), zF.accuracy(y, t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            sums = [sums[0] + float(loss.data) * len(t), sums[1] + float(acc.data) * len(t)]
        out.append((sums[0] / 300, sums[1] / 300))
        sums = [0, 0]
        with zerograd.no_grad():
            for x, t in test_loader:
                y = model(x)
                sums[0] += float(zF.softmax_cross_entropy(y, t).data) * len(t)
                sums[1] += float(zF.accuracy(y, t).data) * len(t)
        out.append((sums[0] / 300, sums[1] / 300))
    return out


def test_step50_dataloader_accuracy_and_no_grad():
    np.random.seed(1)
    book = _step50_book()
    np.random.seed(1)
    assert book == _step50_zerograd()


def _write_idx(path, array):
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(struct.pack(">I", d) for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.tobytes())


@pytest.fixture
def small_mnist(tmp_path, monkeypatch):
    """Ten made-up examples in MNIST's files, where MNIST(train=True) reads them."""
    root = tmp_path / "data" / "mnist"
    root.mkdir(parents=True)
    rng = np.random.default_rng(0)
    _write_idx(root / "train-images-idx3-ubyte.gz", rng.integers(0, 256, (10, 28, 28), np.uint8))
    _write_idx(root / "train-labels-idx1-ubyte.gz", rng.integers(0, 10, 10, np.uint8))
    monkeypatch.setenv("ZEROGRAD_DATA", str(tmp_path / "data"))
    monkeypatch.setattr(zD.MNIST, "md5", dict.fromkeys(zD.MNIST.md5))  # not the real files
    monkeypatch.chdir(tmp_path)


def test_steps51_to_53_mnist_gpu_switch_and_weights(small_mnist):
    """Steps 51-53: MNIST, the GPU switch, save_weights / load_weights."""
    np.random.seed(2)
    train_set = dezero.datasets.MNIST(train=True)
    train_loader = DataLoader(train_set, 5)
    model = MLP((20, 10))
    optimizer = optimizers.SGD().setup(model)
    if os.path.exists("my_mlp.npz"):
        model.load_weights("my_mlp.npz")
    if dezero.cuda.gpu_enable:
        train_loader.to_gpu()
        model.to_gpu()
    losses = []
    for x, t in train_loader:
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        losses.append(float(loss.data))
    model.save_weights("my_mlp.npz")

    np.random.seed(2)
    train_loader = zerograd_nn.DataLoader(zD.MNIST(train=True), 5)
    direct = zM.MLP((20, 10))
    optimizer = zO.SGD().setup(direct)
    if zerograd.backends.gpu_enable:
        train_loader.to_gpu()
        direct.to_gpu()
    want = []
    for x, t in train_loader:
        loss = zF.softmax_cross_entropy(direct(x), t)
        direct.cleargrads()
        loss.backward()
        optimizer.update()
        want.append(float(loss.data))
    assert losses == want and len(losses) == 2

    again = MLP((20, 10))
    again.load_weights("my_mlp.npz")
    direct.to_cpu()
    x = np.ones((1, 784), np.float32)
    np.testing.assert_array_equal(again(x).data, direct(x).data)


def test_step54_dropout_and_test_mode():
    x = np.ones(5)
    np.random.seed(3)
    y = F.dropout(x)
    with test_mode():
        y_test = F.dropout(x)
    np.random.seed(3)
    np.testing.assert_array_equal(y.data, zF.dropout(x).data)
    np.testing.assert_array_equal(y_test.data, x)


def test_steps55_to_57_conv_geometry_im2col_and_conv2d():
    assert dezero.utils.get_conv_outsize(4, 3, 1, 1) == (4 + 1 * 2 - 3) // 1 + 1 == 4
    rng = np.random.RandomState(4)
    x1 = rng.rand(1, 3, 7, 7)
    col1 = F.im2col(x1, kernel_size=5, stride=1, pad=0, to_matrix=True)
    assert col1.shape == (9, 75)
    np.testing.assert_array_equal(col1.data[0], x1[0, :, :5, :5].reshape(-1))  # by hand
    x = Variable(rng.randn(1, 5, 15, 15))
    W = rng.randn(8, 5, 3, 3)
    y = F.conv2d_simple(x, W, b=None, stride=1, pad=1)
    y.backward()
    assert y.shape == (1, 8, 15, 15) and x.grad.shape == (1, 5, 15, 15)
    x2 = zerograd.Variable(x.data.copy())
    y2 = zF.conv2d_simple(x2, W, b=None, stride=1, pad=1)
    y2.backward()
    np.testing.assert_array_equal(y.data, y2.data)
    np.testing.assert_array_equal(x.grad.data, x2.grad.data)
    pooled = F.pooling(y, 2, 2)
    np.testing.assert_array_equal(pooled.data, zF.pooling(y2, 2, 2).data)


def test_step58_get_file_preprocess_and_the_pretrained_weights(tmp_path, monkeypatch):
    """Step 58's picture comes through dezero.utils.get_file (here from a file:// URL);
    VGG16(pretrained=True) still downloads nothing, and its error gives the call that does.
    """
    pil = pytest.importorskip("PIL.Image")
    monkeypatch.setenv("ZEROGRAD_DATA", str(tmp_path / "data"))
    picture = tmp_path / "zebra.png"
    rng = np.random.RandomState(5)
    pil.fromarray((rng.rand(30, 40, 3) * 255).astype(np.uint8)).save(picture)
    url = picture.as_uri()
    img_path = dezero.utils.get_file(url)
    assert img_path == os.path.join(dezero.utils.cache_dir, "zebra.png")
    img = pil.open(img_path)
    x = VGG16.preprocess(img)
    x = x[np.newaxis]
    np.testing.assert_array_equal(x[0], zM.VGG16.preprocess(pil.open(picture)))
    assert x.shape == (1, 3, 224, 224) and x.dtype == np.float32
    with pytest.raises(ValueError, match=r"VGG16\(pretrained=get_file\('https://github.com/"):
        VGG16(pretrained=True)
    with pytest.raises(AttributeError, match=r"ast\.literal_eval\(open\(zerograd_nn\.dezero"):
        dezero.datasets.ImageNet.labels()


class SimpleRNN(Model):
    def __init__(self, hidden_size, out_size):
        super().__init__()
        self.rnn = L.RNN(hidden_size)
        self.fc = L.Linear(out_size)

    def reset_state(self):
        self.rnn.reset_state()

    def __call__(self, x):
        h = self.rnn(x)
        y = self.fc(h)
        return y


class BetterRNN(Model):
    def __init__(self, hidden_size, out_size):
        super().__init__()
        self.rnn = L.LSTM(hidden_size)
        self.fc = L.Linear(out_size)

    def reset_state(self):
        self.rnn.reset_state()

    def __call__(self, x):
        y = self.rnn(x)
        y = self.fc(y)
        return y


class DirectRNN(zerograd_nn.Model):
    """Either model, written with zerograd's own modules."""

    def __init__(self, cell, hidden_size, out_size):
        super().__init__()
        self.rnn = cell(hidden_size)
        self.fc = zL.Linear(out_size)

    def reset_state(self):
        self.rnn.reset_state()

    def forward(self, x):
        return self.fc(self.rnn(x))


def _sine_losses(model, optimizer, batches, seqlen, mse, bptt_length=10):
    """Steps 59 and 60's loop: truncated backpropagation every ``bptt_length`` steps."""
    model.reset_state()
    loss, count, out = 0, 0, []
    for x, t in batches:
        loss += mse(model(x), t)
        count += 1
        if count % bptt_length == 0 or count == seqlen:
            model.cleargrads()
            loss.backward()
            loss.unchain_backward()
            optimizer.update()
            out.append(float(loss.data))
    return out


def test_step59_simple_rnn_on_the_sine_curve():
    np.random.seed(6)
    train_set = dezero.datasets.SinCurve(train=True)
    model = SimpleRNN(16, 1)
    optimizer = dezero.optimizers.Adam().setup(model)
    batches = [(x.reshape(1, 1), t) for x, t in (train_set[i] for i in range(25))]
    book = _sine_losses(model, optimizer, batches, len(train_set), F.mean_squared_error)
    with dezero.no_grad():
        model.reset_state()
        prediction = model(np.array(0.5).reshape(1, 1)).data

    np.random.seed(6)
    direct_set = zD.SinCurve(train=True)
    direct = DirectRNN(zL.RNN, 16, 1)
    optimizer = zO.Adam().setup(direct)
    batches = [(x.reshape(1, 1), t) for x, t in (direct_set[i] for i in range(25))]
    want = _sine_losses(direct, optimizer, batches, len(direct_set), zF.mean_squared_error)
    assert book == want and len(book) == 2
    with zerograd.no_grad():
        direct.reset_state()
        np.testing.assert_array_equal(prediction, direct(np.array(0.5).reshape(1, 1)).data)


def test_step60_lstm_with_seq_dataloader():
    np.random.seed(7)
    train_set = dezero.datasets.SinCurve(train=True)
    dataloader = SeqDataLoader(train_set, batch_size=30)
    model = BetterRNN(16, 1)
    optimizer = dezero.optimizers.Adam().setup(model)
    batches = [next(dataloader) for _ in range(20)]
    book = _sine_losses(model, optimizer, batches, len(train_set), F.mean_squared_error)

    np.random.seed(7)
    dataloader = zerograd_nn.SeqDataLoader(zD.SinCurve(train=True), batch_size=30)
    direct = DirectRNN(zL.LSTM, 16, 1)
    optimizer = zO.Adam().setup(direct)
    batches = [next(dataloader) for _ in range(20)]
    want = _sine_losses(direct, optimizer, batches, 999, zF.mean_squared_error)
    assert book == want and len(book) == 2


def test_examples_module_paths_batchnorm_weight_decay_and_cupy_switch():
    """The examples' module paths: dezero.layers.BatchNorm, dezero.optimizers.WeightDecay,
    dezero.models.Model, dezero.cuda (gan.py: xp = dezero.cuda.cupy on a GPU)."""
    np.random.seed(8)
    model = dezero.models.Sequential(dezero.layers.Linear(4), dezero.layers.BatchNorm())
    optimizer = dezero.optimizers.Adam().setup(model)
    optimizer.add_hook(dezero.optimizers.WeightDecay(1e-4))
    x = np.random.rand(6, 3).astype(np.float32)
    loss = F.sum(model(x) ** 2)
    model.cleargrads()
    loss.backward()
    optimizer.update()

    np.random.seed(8)
    direct = zM.Sequential(zL.Linear(4), zL.BatchNorm())
    reference = zO.Adam().setup(direct)
    reference.add_hook(zO.WeightDecay(1e-4))
    y = zF.sum(direct(np.random.rand(6, 3).astype(np.float32)) ** 2)
    direct.cleargrads()
    y.backward()
    reference.update()
    np.testing.assert_array_equal(loss.data, y.data)
    for p, q in zip(model.params(), direct.params(), strict=True):
        np.testing.assert_array_equal(p.data, q.data)
    xp = dezero.cuda.cupy if dezero.cuda.gpu_enable else np
    test_z = xp.random.randn(25, 3).astype(np.float32)  # gan.py
    assert dezero.cuda.as_numpy(test_z).shape == (25, 3)
    assert isinstance(dezero.Parameter(np.ones(1)), zerograd.Parameter)


def test_steps28_29_import_from_the_simple_core_the_books_way():
    if not dezero.is_simple_core:
        from zerograd_nn.dezero.core_simple import Variable as SimpleVariable
        from zerograd_nn.dezero.core_simple import setup_variable

        setup_variable()
    x = SimpleVariable(np.array(2.0))
    y = x**4 - 2 * x**2
    y.backward()
    assert SimpleVariable is zerograd.Variable and float(x.grad.data) == 4 * 8 - 4 * 2


def test_dot_graph_the_books_way(tmp_path):
    viz = pytest.importorskip("zerograd_viz")
    from zerograd_nn.dezero.utils import plot_dot_graph

    x = Variable(np.array(1.0), name="x")
    y = F.tanh(x)
    y.name = "y"
    text = dezero.utils.get_dot_graph(y, verbose=False)
    assert text == viz.get_dot_graph(y, verbose=False)
    assert text.startswith("digraph g {") and '[label="x", color=orange, style=filled]' in text
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    out = tmp_path / "tanh.png"
    plot_dot_graph(y, verbose=False, to_file=str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
