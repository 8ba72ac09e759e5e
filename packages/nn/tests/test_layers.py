"""Layers: parameter registration and order, lazy sizes, shapes, state, devices."""

import threading

import numpy as np
import pytest

import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd import Parameter, Variable, no_grad, test_mode
from zerograd.backends import as_numpy, backend_of
from zerograd_nn import initializers as I


class TwoLayer(L.Layer):
    def __init__(self):
        super().__init__()
        self.l1 = L.Linear(4, in_size=3)
        self.scale = Parameter(np.ones(1, dtype=np.float32), name="scale")
        self.l2 = L.Linear(2, in_size=4)
        self.note = "not a parameter"

    def forward(self, x):
        return self.l2(F.sigmoid(self.l1(x))) * self.scale


def test_params_in_definition_order_with_names():
    m = TwoLayer()
    params = list(m.params())
    assert [p.shape for p in params] == [(3, 4), (4,), (1,), (4, 2), (2,)]
    flat = {}
    m._flatten_params(flat)
    assert list(flat) == ["l1/W", "l1/b", "scale", "l2/W", "l2/b"]


def test_reassigning_and_deleting_attributes_updates_registration():
    m = TwoLayer()
    m.scale = None
    assert len(list(m.params())) == 4
    del m.l2
    assert [p.shape for p in m.params()] == [(3, 4), (4,)]


def test_shared_parameter_is_listed_once():
    m = L.Layer()
    shared = L.Linear(2, in_size=2)
    m.a, m.b = shared, shared
    assert len(list(m.params())) == 2


def test_call_keeps_weak_references():
    layer = L.Linear(2, in_size=3)
    x = Variable(np.ones((1, 3), dtype=np.float32))
    y = layer(x)
    assert layer.inputs[0]() is x and layer.outputs[0]() is y


def test_cleargrads():
    m = TwoLayer()
    y = m(np.ones((2, 3), dtype=np.float32))
    F.sum(y).backward()
    assert all(p.grad is not None for p in m.params())
    m.cleargrads()
    assert all(p.grad is None for p in m.params())


def test_linear_lazy_in_size_and_init(rand, to_np):
    np.random.seed(0)
    layer = L.Linear(50)
    assert layer.W.data is None
    x = rand(8, 400, dtype="float32")
    y = layer(x)
    assert y.shape == (8, 50) and as_numpy(y).dtype == np.float32
    assert layer.W.shape == (400, 50) and layer.in_size == 400
    assert backend_of(layer.W.data) is backend_of(x) and backend_of(layer.b.data) is backend_of(x)
    # W ~ randn * sqrt(1 / in_size): standard deviation 0.05
    assert abs(float(to_np(layer.W).std()) - 0.05) < 0.003
    np.testing.assert_array_equal(to_np(layer.b), np.zeros(50))


def test_linear_options(rand):
    layer = L.Linear(3, nobias=True, dtype=np.float64, in_size=2)
    assert layer.b is None and as_numpy(layer.W).dtype == np.float64
    assert [p.name for p in layer.params()] == ["W"]
    assert as_numpy(L.Linear(3, dtype="float32", in_size=2).W).dtype == np.float32


def test_conv2d_layer(rand, to_np):
    layer = L.Conv2d(4, kernel_size=(3, 2), stride=(2, 1), pad=1)
    x = rand(2, 3, 7, 6, dtype="float32")
    y = layer(x)
    assert y.shape == (2, 4, 4, 7) and as_numpy(y).dtype == np.float32
    assert layer.W.shape == (4, 3, 3, 2) and layer.b.shape == (4,)
    ref = F.conv2d(x, layer.W.data, layer.b.data, (2, 1), 1)
    np.testing.assert_allclose(to_np(y), to_np(ref))
    eager = L.Conv2d(5, 3, nobias=True, in_channels=2)
    assert eager.W.shape == (5, 2, 3, 3) and eager.b is None


def test_deconv2d_layer(rand, arr, to_np):
    layer = L.Deconv2d(2, kernel_size=4, stride=2, pad=1)
    x = rand(1, 3, 5, 5, dtype="float32")
    y = layer(x)
    assert y.shape == (1, 2, 10, 10) and layer.W.shape == (3, 2, 4, 4)
    layer.b.data = arr([0.5, -2.0], "float32")
    y = layer(x)
    ref = F.deconv2d(x, layer.W.data, layer.b.data, 2, 1)
    np.testing.assert_allclose(to_np(y), to_np(ref), rtol=1e-6)
    no_bias = to_np(F.deconv2d(x, layer.W.data, None, 2, 1))
    added = to_np(y) - no_bias  # the bias of each output channel, everywhere in that channel
    np.testing.assert_allclose(added, np.broadcast_to([[[[0.5]], [[-2.0]]]], y.shape), atol=1e-5)


def test_rnn_state_and_reset(rand, to_np):
    rnn = L.RNN(4)
    x = rand(2, 3, dtype="float32")
    h1 = rnn(x)
    assert h1.shape == (2, 4) and rnn.h is h1
    h2 = rnn(x)
    assert h2.creator is not None and not np.allclose(to_np(h1), to_np(h2))
    assert rnn.h2h.W.shape == (4, 4)
    rnn.reset_state()
    assert rnn.h is None
    np.testing.assert_allclose(to_np(rnn(x)), to_np(h1))


def test_rnn_values_against_numpy(rand, to_np, backend):
    rnn = L.RNN(4, in_size=3).to(backend)
    x1, x2 = rand(2, 3, dtype="float32", seed=1), rand(2, 3, dtype="float32", seed=2)
    Wx, bx = to_np(rnn.x2h.W), to_np(rnn.x2h.b)
    rnn.x2h.b.data = rnn.x2h.b.data + 0.3  # a non-zero bias, to see that it is added
    bx = bx + 0.3
    y1, y2 = rnn(x1), rnn(x2)
    Wh = to_np(rnn.h2h.W)  # drawn with x2h: in_size was given
    assert Wh.shape == (4, 4)
    h1 = np.tanh(to_np(x1) @ Wx + bx)
    h2 = np.tanh(to_np(x2) @ Wx + bx + h1 @ Wh)
    np.testing.assert_allclose(to_np(y1), h1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_np(y2), h2, rtol=1e-5, atol=1e-6)


def test_lstm_state_truncated_bptt(rand, to_np, backend):
    lstm = L.LSTM(5, in_size=3).to(backend)
    x = rand(2, 3, dtype="float32")
    h1 = lstm(x)
    h2 = lstm(x)
    assert lstm.h is h2 and lstm.c.shape == (2, 5) and h2.shape == (2, 5)
    assert len(list(lstm.params())) == 12  # 4 x (W, b) + 4 x W
    F.sum(h2).backward()
    assert lstm.h2f.W.grad is not None  # the second step used the recurrent weights
    h2.unchain_backward()  # truncated BPTT: the first step is cut off
    assert h1.creator is None
    lstm.cleargrads()
    F.sum(lstm(x)).backward()
    assert lstm.x2f.W.grad is not None
    lstm.reset_state()
    assert lstm.h is None and lstm.c is None
    np.testing.assert_allclose(to_np(lstm(x)), to_np(h1), rtol=1e-6)


def test_lstm_values_against_numpy(rand, to_np, backend):
    lstm = L.LSTM(3, in_size=2).to(backend)
    for name in ("x2f", "x2i", "x2o", "x2u"):  # distinct non-zero biases per gate
        lin = getattr(lstm, name)
        lin.b.data = lin.b.data + 0.1 * (1 + "fiou".index(name[-1]))
    w = {n: to_np(getattr(lstm, n).W) for n in ("x2f", "x2i", "x2o", "x2u")}
    w.update({n: to_np(getattr(lstm, n).W) for n in ("h2f", "h2i", "h2o", "h2u")})
    b = {n: to_np(getattr(lstm, n).b) for n in ("x2f", "x2i", "x2o", "x2u")}

    def sigmoid(a):
        return 1 / (1 + np.exp(-a))

    def step(x, h, c):
        def pre(g):
            a = x @ w["x2" + g] + b["x2" + g]
            return a if h is None else a + h @ w["h2" + g]

        f, i, o = sigmoid(pre("f")), sigmoid(pre("i")), sigmoid(pre("o"))
        u = np.tanh(pre("u"))
        c = i * u if c is None else f * c + i * u
        return o * np.tanh(c), c

    x1, x2 = rand(4, 2, dtype="float32", seed=3), rand(4, 2, dtype="float32", seed=4)
    h1, c1 = step(to_np(x1), None, None)
    h2, c2 = step(to_np(x2), h1, c1)
    np.testing.assert_allclose(to_np(lstm(x1)), h1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_np(lstm.c), c1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_np(lstm(x2)), h2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_np(lstm.c), c2, rtol=1e-5, atol=1e-6)


def test_embed_id_layer(arr, to_np, backend):
    emb = L.EmbedID(10, 3)
    assert emb.W.shape == (10, 3) and as_numpy(emb.W).dtype == np.float32
    emb.to(backend)
    ids = [[1, 2], [9, 0]]
    y = emb(arr(ids, "int64"))
    assert y.shape == (2, 2, 3)
    np.testing.assert_array_equal(to_np(y), to_np(emb.W)[np.array(ids)])


def test_batchnorm_layer_state(rand, to_np):
    bn = L.BatchNorm()
    assert [p.name for p in bn.params()] == ["avg_mean", "avg_var", "gamma", "beta"]
    x = rand(8, 3, 2, 2, dtype="float32") * 3 + 1
    y = bn(x)
    assert as_numpy(y).dtype == np.float32 and bn.avg_mean.shape == (3,)
    np.testing.assert_allclose(to_np(bn.avg_mean), 0.1 * to_np(x).mean(axis=(0, 2, 3)), rtol=1e-5)
    before = to_np(bn.avg_mean).copy()
    with test_mode():
        bn(x)
    np.testing.assert_array_equal(to_np(bn.avg_mean), before)
    F.sum(bn(x)).backward()
    assert bn.avg_mean.grad is None and bn.gamma.grad is not None


def test_batchnorm_layer_values_use_gamma_and_beta(rand, arr, to_np):
    bn = L.BatchNorm()
    x = rand(6, 3, 2, 2, dtype="float32", seed=5) * 2 - 1
    bn(x)  # size the parameters
    gamma, beta = np.array([0.5, 2.0, -1.5], np.float32), np.array([1.0, -0.25, 3.0], np.float32)
    bn.gamma.data, bn.beta.data = arr(gamma, "float32"), arr(beta, "float32")
    y = to_np(bn(x))
    xn = to_np(x)
    mean = xn.mean(axis=(0, 2, 3), keepdims=True)
    var = xn.var(axis=(0, 2, 3), keepdims=True)  # the batch's (biased) variance
    ref = (xn - mean) / np.sqrt(var + 2e-5) * gamma[:, None, None] + beta[:, None, None]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    y2 = to_np(bn(x[:, :, 0, 0]))  # (N, C) input: statistics over the batch axis only
    x2 = xn[:, :, 0, 0]
    ref2 = (x2 - x2.mean(axis=0)) / np.sqrt(x2.var(axis=0) + 2e-5) * gamma + beta
    np.testing.assert_allclose(y2, ref2, rtol=1e-4, atol=1e-5)


def _fails(layer, x, match):
    with pytest.raises(ValueError, match=match):
        layer(x)


def test_failed_first_call_leaves_linear_unsized(rand, to_np):
    layer = L.Linear(3)
    b = layer.b.data
    _fails(layer, rand(4, dtype="float32"), "linear: x of shape")  # 1-D: sized, then refused
    assert layer.W.data is None and layer.in_size is None and layer.b.data is b
    y = layer(rand(2, 5, dtype="float32"))
    assert y.shape == (2, 3) and layer.W.shape == (5, 3) and layer.in_size == 5


@pytest.mark.parametrize("cls", [L.Conv2d, L.Deconv2d], ids=["Conv2d", "Deconv2d"])
def test_failed_first_call_leaves_conv_unsized(cls, rand):
    layer = cls(4, 3)
    b = layer.b.data
    bad = rand(2, 3, 2, 2, dtype="float32") if cls is L.Conv2d else rand(2, 3, 2, dtype="float32")
    _fails(layer, bad, "does not fit" if cls is L.Conv2d else "deconv2d: expected x")
    assert layer.W.data is None and layer.in_channels is None and layer.b.data is b
    y = layer(rand(2, 5, 8, 8, dtype="float32"))
    assert y.shape[:2] == (2, 4) and layer.in_channels == 5
    assert layer.W.shape == ((4, 5, 3, 3) if cls is L.Conv2d else (5, 4, 3, 3))


def test_failed_first_call_leaves_batchnorm_unsized(rand):
    bn = L.BatchNorm()
    _fails(bn, np.zeros((0, 3), np.float32), r"batch_norm: x of shape \(0, 3\) is an empty batch")
    assert all(p.data is None for p in bn.params())
    y = bn(rand(4, 5, dtype="float32"))
    assert y.shape == (4, 5) and all(p.shape == (5,) for p in bn.params())


class Numbered(I.Initializer):
    """Fills the k-th array it makes with k; the first waits (0.5 s at most) for a second."""

    def __init__(self):
        self.made, self.second = 0, threading.Event()

    def generate(self, backend, shape, dtype, fan_in, fan_out):
        self.made += 1
        k = self.made
        if k == 1:
            self.second.wait(0.5)
        else:
            self.second.set()
        return backend.asarray(np.full(shape, float(k), np.float32))


@pytest.mark.parametrize("make", [L.Linear, L.Conv2d], ids=["Linear", "Conv2d"])
def test_threads_calling_an_unsized_layer_at_once_size_it_once(make):
    # each thread found W unsized and drew one: the layer kept the last W drawn while
    # the other thread's output was computed with its own, which the layer no longer has
    init = Numbered()
    layer = make(2, initialW=init, nobias=True) if make is L.Linear else make(2, 1, initialW=init)
    x = np.arange(6, dtype=np.float32).reshape((2, 3) if make is L.Linear else (1, 3, 1, 2))
    out, errors = [None, None], []

    def call(i):
        try:
            with no_grad():  # (Config is per thread)
                out[i] = layer(x).data
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == [] and init.made == 1
    with no_grad():
        want = layer(x).data  # with the W the layer kept
    for y in out:
        np.testing.assert_array_equal(y, want)


def test_layer_to_cpu_keeps_arrays(rand):
    m = TwoLayer()
    before = [p.data for p in m.params()]
    assert m.to_cpu() is m
    assert all(a is b for a, b in zip(before, (p.data for p in m.params())))


class FakeArray:
    """An array type of a pretend backend (holds a numpy array)."""

    def __init__(self, a):
        self.a = np.asarray(a)


@pytest.fixture
def failing_backend():
    """A pretend backend, registered for one test, whose second conversion fails."""
    from zerograd import backends
    from zerograd.backends import Backend

    class Flaky(Backend):
        name = "flaky"
        calls = 0

        def owns(self, array_type):
            return issubclass(array_type, FakeArray)

        def load_module(self):
            return np

        def to_numpy(self, x):
            return x.a

        def from_numpy(self, a):
            Flaky.calls += 1
            if Flaky.calls == 2:
                raise MemoryError("out of device memory (pretend)")
            return FakeArray(a)

    backends.register(Flaky())
    try:
        yield Flaky
    finally:
        backends.refresh()


def test_layer_to_is_all_or_nothing(failing_backend):
    m = TwoLayer()
    m(np.ones((2, 3), dtype=np.float32))
    m.l2.W.grad = Variable(np.ones((4, 2), dtype=np.float32))
    before = [(p.data, None if p.grad is None else p.grad.data) for p in m.params()]
    with pytest.raises(MemoryError, match="pretend"):
        m.to("flaky")  # l1/W converts, l1/b fails: l1/W must not have moved alone
    after = [(p.data, None if p.grad is None else p.grad.data) for p in m.params()]
    assert all(a is b and g is h for (a, g), (b, h) in zip(before, after))
    assert all(type(p.data) is np.ndarray for p in m.params())
    assert m.to("flaky") is m  # the third conversion on works: everything moves
    assert all(type(p.data) is FakeArray for p in m.params())
    assert type(m.l2.W.grad.data) is FakeArray
    m.to_cpu()
    assert all(type(p.data) is np.ndarray for p in m.params())
    np.testing.assert_array_equal(m.l2.W.grad.data, np.ones((4, 2)))


def test_layer_to_gpu_without_gpu_says_what_to_do():
    from zerograd.backends import NoBackendError, gpu_backend

    try:
        gpu_backend()
    except NoBackendError as exc:
        with pytest.raises(NoBackendError, match="GPU"):
            TwoLayer().to_gpu()
        print(f"no GPU here: {exc}")
    else:
        m = TwoLayer().to_gpu()
        assert all(backend_of(p.data).device == "gpu" for p in m.params())


def test_forward_not_implemented():
    with pytest.raises(NotImplementedError, match="Layer.forward"):
        L.Layer()(1)


def test_pickles_that_name_the_single_layers_module_still_load():
    import pickle

    from zerograd_nn.models import Sequential

    np.random.seed(3)
    model = Sequential(
        L.Linear(3, in_size=2),
        L.Conv2d(2, 3, in_channels=1),
        L.RNN(3, in_size=2),
        L.LSTM(2, in_size=3),
        L.EmbedID(5, 2),
        L.BatchNorm(),
    )
    data = pickle.dumps(model, protocol=2)  # GLOBAL opcodes: "c<module>\n<name>\n"
    for part in ("base", "linear", "conv", "recurrent", "embed", "normalization"):
        data = data.replace(b"czerograd_nn.layers.%s\n" % part.encode(), b"czerograd_nn.layers\n")
    assert b"zerograd_nn.layers." not in data  # as a pickle of the one-file layers.py was
    loaded = pickle.loads(data)
    assert [type(m).__name__ for _, m in loaded.named_children()] == [
        "Linear", "Conv2d", "RNN", "LSTM", "EmbedID", "BatchNorm",
    ]  # fmt: skip
    before, after = model.named_params(), loaded.named_params()
    assert list(after) == list(before)
    for name, p in before.items():
        q = after[name]
        assert (q.data is None) == (p.data is None), name
        if p.data is not None:
            np.testing.assert_array_equal(q.data, p.data)
