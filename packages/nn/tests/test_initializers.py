"""Initializers: draw statistics against their formulas, orthogonality, fans, and the layers'
``initialW`` / ``initial_bias`` keywords.

Statistical tolerances are five standard errors of the estimate for the sample size, so a
correct initializer fails with probability below 1e-6 per check, and the seeds are fixed.
"""

import math

import numpy as np
import pytest

import zerograd_nn.layers as L
from zerograd import test_mode
from zerograd.backends import as_numpy, backend_of
from zerograd_nn import initializers as I


def _check_normal(w, std):
    """Mean, std and the share within one std of a N(0, std**2) sample of size w.size."""
    w = np.asarray(w, dtype=np.float64).ravel()
    n = w.size
    assert abs(w.mean()) < 5 * std / math.sqrt(n)
    assert abs(w.std() - std) < 5 * std / math.sqrt(2 * n)
    inside = np.mean(np.abs(w) < std)  # 0.6827 for a normal, 0.577 for a uniform
    assert abs(inside - 0.6827) < 5 * math.sqrt(0.6827 * 0.3173 / n)


def _check_uniform(w, bound):
    """Bounds, mean and variance of a U[-bound, bound) sample."""
    w = np.asarray(w, dtype=np.float64).ravel()
    n = w.size
    assert w.min() >= -bound and w.max() <= bound
    assert w.max() > bound * (1 - 20 / n) and w.min() < -bound * (1 - 20 / n)
    assert abs(w.mean()) < 5 * bound / math.sqrt(3 * n)
    # Var(X**2) = bound**4 * (1/5 - 1/9) for a uniform
    assert abs(w.var() - bound**2 / 3) < 5 * bound**2 * math.sqrt(4 / 45 / n)


def test_fans_of_a_bias_a_linear_weight_and_a_conv_kernel():
    assert I.get_fans((7,)) == (7, 7)
    assert I.get_fans((30, 20)) == (30, 20)  # Linear.W is (in_size, out_size)
    assert I.get_fans((16, 3, 5, 5)) == (3 * 25, 16 * 25)  # (out, in, kh, kw)
    with pytest.raises(ValueError, match=r"get_fans: a 0-d shape \(\) has no fan-in"):
        I.get_fans(())


# (initializer, shape, hand-computed std or bound, kind)
SCALED = [
    (I.Normal(0.2), (300, 200), 0.2, "normal"),
    (I.Uniform(0.3), (300, 200), 0.3, "uniform"),
    (I.LeCunNormal(), (400, 150), 0.05, "normal"),  # sqrt(1/400)
    (I.LeCunUniform(2.0), (300, 200), 0.2, "uniform"),  # 2 * sqrt(3/300)
    (I.GlorotNormal(), (250, 150), 0.070710678, "normal"),  # sqrt(2/400)
    (I.GlorotUniform(), (100, 200), 0.141421356, "uniform"),  # sqrt(6/300)
    (I.HeNormal(), (64, 32, 3, 3), 1 / 12, "normal"),  # sqrt(2/(32*9))
    (I.HeNormal(fan_option="fan_out"), (32, 64, 3, 3), 1 / 12, "normal"),  # sqrt(2/(32*9))
    (I.HeUniform(), (200, 300), 0.173205081, "uniform"),  # sqrt(6/200)
    (I.GlorotNormal(), (48, 16, 3, 3), 0.058925565, "normal"),  # sqrt(2/(144+432))
]


@pytest.mark.parametrize(("init", "shape", "spread", "kind"), SCALED, ids=repr)
def test_draw_statistics_match_the_formulas(backend, to_np, init, shape, spread, kind):
    np.random.seed(0)
    w = init(shape, "float64", backend)
    assert (
        backend_of(w).name == backend.name and w.shape == shape and as_numpy(w).dtype == np.float64
    )
    (_check_normal if kind == "normal" else _check_uniform)(to_np(w), spread)


def test_explicit_fans_override_the_shape():
    np.random.seed(1)
    w = I.LeCunNormal()((100, 400), "float64", fan_in=2500)
    _check_normal(w, 0.02)


def test_aliases_are_the_same_classes():
    assert I.XavierNormal is I.GlorotNormal and I.XavierUniform is I.GlorotUniform
    assert I.KaimingNormal is I.HeNormal and I.KaimingUniform is I.HeUniform


def test_he_rejects_an_unknown_fan_option():
    with pytest.raises(ValueError, match="HeNormal: fan_option must be 'fan_in' or 'fan_out'"):
        I.HeNormal(fan_option="avg")


def test_dtype_is_kept_and_constant_fills(backend, to_np):
    w = I.Constant(-1.5)((2, 3), "float32", backend)
    assert as_numpy(w).dtype == np.float32 and backend_of(w).name == backend.name
    np.testing.assert_array_equal(to_np(w), np.full((2, 3), -1.5, np.float32))
    assert as_numpy(I.HeUniform()((10, 4), "float32", backend)).dtype == np.float32
    np.testing.assert_array_equal(to_np(I.Zero()((2,), "float64", backend)), [0.0, 0.0])
    np.testing.assert_array_equal(to_np(I.One()((2,), "float64", backend)), [1.0, 1.0])
    np.testing.assert_array_equal(to_np(I.Constant(2.0)(3, "float64", backend)), [2.0] * 3)


@pytest.mark.parametrize("shape", [(5, 5), (3, 8), (8, 3), (4, 2, 3, 3)])
def test_orthogonal_rows_or_columns_are_orthonormal(backend, to_np, shape):
    np.random.seed(2)
    w = to_np(I.Orthogonal(scale=2.0)(shape, "float64", backend))
    m = w.reshape(shape[0], -1)
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(m.shape)), atol=1e-12)


def test_orthogonal_is_not_always_the_same_matrix():
    np.random.seed(3)
    a, b = I.Orthogonal()((4, 4), "float64"), I.Orthogonal()((4, 4), "float64")
    assert not np.allclose(a, b)


def test_orthogonal_refuses_a_vector():
    with pytest.raises(ValueError, match=r"Orthogonal: needs a shape of 2 or more .* got \(5,\)"):
        I.Orthogonal()((5,))


def test_lecun_normal_reproduces_the_default_linear_weights_bit_for_bit():
    np.random.seed(4)
    default = L.Linear(7, in_size=5).W.data
    np.random.seed(4)
    np.testing.assert_array_equal(I.LeCunNormal()((5, 7)), default)


# -- the layers' keywords ------------------------------------------------------------------


def test_linear_takes_an_initializer_a_number_and_an_array():
    layer = L.Linear(3, in_size=2, initialW=I.Constant(0.25), initial_bias=0.5)
    np.testing.assert_array_equal(layer.W.data, np.full((2, 3), 0.25, np.float32))
    np.testing.assert_array_equal(layer.b.data, np.full(3, 0.5, np.float32))
    source = np.arange(6.0).reshape(2, 3)
    layer = L.Linear(3, in_size=2, initialW=source, dtype="float32")
    source[0, 0] = 99.0  # the layer keeps a copy
    np.testing.assert_array_equal(layer.W.data, np.arange(6.0, dtype=np.float32).reshape(2, 3))
    assert as_numpy(layer.W.data).dtype == np.float32
    y = layer(np.ones((1, 2), np.float32))
    np.testing.assert_array_equal(y.data, [[3.0, 5.0, 7.0]])


def test_lazy_linear_uses_the_initializer_at_its_first_call():
    np.random.seed(5)
    layer = L.Linear(100, initialW=I.HeNormal())
    assert layer.W.data is None
    layer(np.ones((2, 400), np.float32))
    assert layer.W.shape == (400, 100)
    _check_normal(layer.W.data, math.sqrt(2 / 400))


def test_wrong_array_shape_names_both_shapes_and_leaves_a_lazy_layer_unsized():
    layer = L.Linear(3, initialW=np.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"Linear: initialW has shape \(4, 3\) .* is \(2, 3\)"):
        layer(np.ones((1, 2), np.float32))
    assert layer.W.data is None and layer.in_size is None
    np.testing.assert_array_equal(layer.b.data, np.zeros(3, np.float32))
    assert layer(np.ones((1, 4), np.float32)).shape == (1, 3)  # the right input sizes it


def test_wrong_initializer_type_is_refused_at_construction():
    with pytest.raises(TypeError, match="Conv2d: initialW must be an initializer .* got str"):
        L.Conv2d(4, 3, initialW="he")
    with pytest.raises(TypeError, match="Linear: initial_bias must be an initializer"):
        L.Linear(4, initial_bias=[0.0] * 4)


def test_conv_kernels_are_scaled_by_their_receptive_field():
    np.random.seed(6)
    conv = L.Conv2d(64, 3, in_channels=32, initialW=I.HeNormal())
    assert conv.W.shape == (64, 32, 3, 3)
    _check_normal(conv.W.data, math.sqrt(2 / (32 * 9)))
    # Deconv2d's kernel is (in, out, kh, kw), but its fan-in is still in_channels * kh * kw
    deconv = L.Deconv2d(8, 3, in_channels=64, initialW=I.LeCunNormal(), initial_bias=1.0)
    assert deconv.W.shape == (64, 8, 3, 3)
    _check_normal(deconv.W.data, math.sqrt(1 / (64 * 9)))
    np.testing.assert_array_equal(deconv.b.data, np.ones(8, np.float32))


def test_lazy_conv_with_an_array_kernel():
    kernel = np.ones((2, 3, 1, 1), np.float32)
    conv = L.Conv2d(2, 1, initialW=kernel, nobias=True)
    y = conv(np.ones((1, 3, 2, 2), np.float32))
    np.testing.assert_array_equal(y.data, np.full((1, 2, 2, 2), 3.0, np.float32))


def test_recurrent_cells_fill_every_matrix():
    rnn = L.RNN(4, in_size=3, initialW=0.5, initial_bias=-1.0)
    rnn(np.ones((1, 3), np.float32))
    rnn(np.ones((1, 3), np.float32))  # sizes h2h
    for w in (rnn.x2h.W, rnn.h2h.W):
        assert np.all(w.data == 0.5)
    assert np.all(rnn.x2h.b.data == -1.0)
    lstm = L.LSTM(3, in_size=2, initialW=I.Orthogonal())
    for name in ("x2f", "x2i", "x2o", "x2u", "h2f", "h2i", "h2o", "h2u"):
        w = getattr(lstm, name).W.data
        m = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
        np.testing.assert_allclose(m, np.eye(min(w.shape)), atol=1e-5, err_msg=name)


def test_recurrent_cells_refuse_an_array():
    with pytest.raises(TypeError, match=r"LSTM: initialW fills matrices of different shapes"):
        L.LSTM(3, in_size=2, initialW=np.zeros((2, 3)))


def test_embed_id_and_batch_norm():
    emb = L.EmbedID(5, 2, initialW=I.Uniform(0.1))
    assert emb.W.shape == (5, 2) and np.all(np.abs(emb.W.data) <= 0.1)
    bn = L.BatchNorm(initial_gamma=2.0, initial_beta=np.array([1.0, 2.0, 3.0]))
    x = np.random.RandomState(0).randn(4, 3)
    with test_mode():  # normalizes by the running statistics, still 0 and 1
        y = bn(x)
    np.testing.assert_array_equal(bn.gamma.data, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(bn.beta.data, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(y.data, 2.0 * x / np.sqrt(1 + 2e-5) + [1.0, 2.0, 3.0])
