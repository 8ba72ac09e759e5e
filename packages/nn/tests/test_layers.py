"""Layers: parameter registration and order, lazy sizes, shapes, state, devices."""

import numpy as np
import pytest

import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd import Parameter, Variable, test_mode
from zerograd.backends import backend_of


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
    assert y.shape == (8, 50) and y.dtype == np.float32
    assert layer.W.shape == (400, 50) and layer.in_size == 400
    assert backend_of(layer.W.data) is backend_of(x) and backend_of(layer.b.data) is backend_of(x)
    # W ~ randn * sqrt(1 / in_size): standard deviation 0.05
    assert abs(float(to_np(layer.W).std()) - 0.05) < 0.003
    np.testing.assert_array_equal(to_np(layer.b), np.zeros(50))


def test_linear_options(rand):
    layer = L.Linear(3, nobias=True, dtype=np.float64, in_size=2)
    assert layer.b is None and layer.W.dtype == np.float64
    assert [p.name for p in layer.params()] == ["W"]
    assert L.Linear(3, dtype="float32", in_size=2).W.dtype == np.float32


def test_conv2d_layer(rand, to_np):
    layer = L.Conv2d(4, kernel_size=(3, 2), stride=(2, 1), pad=1)
    x = rand(2, 3, 7, 6, dtype="float32")
    y = layer(x)
    assert y.shape == (2, 4, 4, 7) and y.dtype == np.float32
    assert layer.W.shape == (4, 3, 3, 2) and layer.b.shape == (4,)
    ref = F.conv2d(x, layer.W.data, layer.b.data, (2, 1), 1)
    np.testing.assert_allclose(to_np(y), to_np(ref))
    eager = L.Conv2d(5, 3, nobias=True, in_channels=2)
    assert eager.W.shape == (5, 2, 3, 3) and eager.b is None


def test_deconv2d_layer(rand):
    layer = L.Deconv2d(2, kernel_size=4, stride=2, pad=1)
    y = layer(rand(1, 3, 5, 5, dtype="float32"))
    assert y.shape == (1, 2, 10, 10) and layer.W.shape == (3, 2, 4, 4)


def test_rnn_state_and_reset(rand):
    rnn = L.RNN(4)
    x = rand(2, 3, dtype="float32")
    h1 = rnn(x)
    assert h1.shape == (2, 4) and rnn.h is h1
    h2 = rnn(x)
    assert h2.creator is not None and not np.allclose(h1.data, h2.data)
    assert rnn.h2h.W.shape == (4, 4)
    rnn.reset_state()
    assert rnn.h is None
    np.testing.assert_allclose(rnn(x).data, h1.data)


def test_lstm_state_truncated_bptt(rand, to_np):
    lstm = L.LSTM(5, in_size=3)
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


def test_embed_id_layer(arr):
    emb = L.EmbedID(10, 3)
    assert emb.W.shape == (10, 3) and emb.W.dtype == np.float32
    y = emb(arr([[1, 2], [9, 0]], "int64"))
    assert y.shape == (2, 2, 3)


def test_batchnorm_layer_state(rand, to_np):
    bn = L.BatchNorm()
    assert [p.name for p in bn.params()] == ["avg_mean", "avg_var", "gamma", "beta"]
    x = rand(8, 3, 2, 2, dtype="float32") * 3 + 1
    y = bn(x)
    assert y.dtype == np.float32 and bn.avg_mean.shape == (3,)
    np.testing.assert_allclose(to_np(bn.avg_mean), 0.1 * to_np(x).mean(axis=(0, 2, 3)), rtol=1e-5)
    before = to_np(bn.avg_mean).copy()
    with test_mode():
        bn(x)
    np.testing.assert_array_equal(to_np(bn.avg_mean), before)
    F.sum(bn(x)).backward()
    assert bn.avg_mean.grad is None and bn.gamma.grad is not None


def test_layer_to_cpu_keeps_arrays(rand):
    m = TwoLayer()
    before = [p.data for p in m.params()]
    assert m.to_cpu() is m
    assert all(a is b for a, b in zip(before, (p.data for p in m.params())))


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
