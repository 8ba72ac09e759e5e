"""Complex data in zerograd-nn: the holomorphic functions differentiate, the others refuse.

The reference for a holomorphic function is its difference quotient along a real step
(which equals ``f'(z)``); a refusal names the convention and changes nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Parameter, Variable, test_mode
from zerograd.backends import HOLOMORPHIC_RULE
from zerograd.testing import numerical_grad
from zerograd_nn import Model, optimizers
from zerograd_nn import layers as L

rng = np.random.default_rng(11)


def cplx(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def check(op, *xs):
    """``sum(c * op(*xs))``'s gradient (complex weights ``c``) against difference quotients."""
    c = cplx(*op(*xs).shape)
    vs = [Variable(x) for x in xs]
    F.sum(op(*vs) * c).backward()
    for i, x in enumerate(xs):

        def term(v, i=i):
            return op(*[v if j == i else a for j, a in enumerate(xs)]) * c

        np.testing.assert_allclose(vs[i].grad.data, numerical_grad(term, x), atol=1e-6)


HOLOMORPHIC = {
    "sigmoid": (F.sigmoid, [(2, 3)]),
    "sigmoid_simple": (F.sigmoid_simple, [(2, 3)]),
    "softmax": (F.softmax, [(2, 3)]),
    "softmax_simple": (F.softmax_simple, [(2, 3)]),
    "log_softmax": (F.log_softmax, [(2, 3)]),
    "linear": (F.linear, [(2, 3), (3, 4), (4,)]),
    "linear_simple": (F.linear_simple, [(2, 3), (3, 4), (4,)]),
    "conv2d": (lambda x, w: F.conv2d(x, w, pad=1), [(1, 2, 4, 4), (3, 2, 3, 3)]),
    "deconv2d": (F.deconv2d, [(1, 2, 3, 3), (2, 3, 2, 2)]),
    "average_pooling": (lambda x: F.average_pooling(x, 2, 2), [(1, 2, 4, 4)]),
    "embed_id": (lambda w: F.embed_id(np.array([0, 2, 2]), w), [(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_a_holomorphic_function_gives_the_complex_derivative(name):
    op, shapes = HOLOMORPHIC[name]
    check(op, *[cplx(*s) * 0.5 for s in shapes])


def test_dropout_passes_complex_data_by_its_mask():
    x = Variable(cplx(50, 4))
    y = F.dropout(x, 0.5)
    F.sum(y).backward()
    kept = y.data != 0
    np.testing.assert_allclose(y.data[kept], x.data[kept] * 2)
    np.testing.assert_allclose(x.grad.data, kept * 2.0)
    with test_mode():
        np.testing.assert_array_equal(F.dropout(x, 0.5).data, x.data)


def _labels():
    return np.array([0, 2])


REFUSED = {
    # name: (call, the message's reason)
    "relu": (lambda x: F.relu(x), "it compares values"),
    "leaky_relu": (lambda x: F.leaky_relu(x), "it compares values"),
    "pooling": (lambda x: F.pooling(F.reshape(x, (1, 1, 2, 3)), 2), "it compares values"),
    "mean_squared_error": (lambda x: F.mean_squared_error(x, np.zeros((2, 3))), "a loss is"),
    "mean_squared_error_simple": (
        lambda x: F.mean_squared_error_simple(np.zeros((2, 3)), x),
        "a loss is",
    ),
    "softmax_cross_entropy": (lambda x: F.softmax_cross_entropy(x, _labels()), "a loss is"),
    "softmax_cross_entropy_simple": (
        lambda x: F.softmax_cross_entropy_simple(x, _labels()),
        "a loss is",
    ),
    "sigmoid_cross_entropy": (
        lambda x: F.sigmoid_cross_entropy(x, np.ones((2, 3), int)),
        "a loss is",
    ),
    "binary_cross_entropy": (
        lambda x: F.binary_cross_entropy(x, np.ones((2, 3), int)),
        "a loss is",
    ),
    "accuracy": (lambda x: F.accuracy(x, _labels()), "its arg-max compares scores"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_function_without_a_holomorphic_derivative_refuses_complex_input(name):
    """relu, leaky_relu and pooling ordered complex numbers lexicographically; the losses
    returned complex 'losses' (binary_cross_entropy: a range error about discarded
    imaginary parts); accuracy took the lexicographic arg-max."""
    call, why = REFUSED[name]
    data = cplx(2, 3) * 0.3
    x = Variable(data.copy())
    with pytest.raises(TypeError) as e:
        call(x)
    message = str(e.value)
    assert message.startswith(f"{name}: complex input (complex128) is refused: {why}")
    assert HOLOMORPHIC_RULE in message and "Nothing was computed." in message
    assert x.creator is None and x.grad is None
    np.testing.assert_array_equal(x.data, data)


@pytest.mark.parametrize("loss", ["sigmoid_cross_entropy", "binary_cross_entropy"])
def test_complex_targets_are_refused_not_cast_to_real(loss):
    # the targets were cast to the scores' real dtype: numpy dropped their imaginary parts
    x = Variable(np.full((2, 3), 0.5))
    with pytest.raises(TypeError, match=rf"^{loss}: complex input \(complex128\) is refused"):
        getattr(F, loss)(x, np.ones((2, 3)) * (1 + 1j))


@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_refuses_complex_input_and_keeps_its_running_statistics(train):
    # train mode wrote complex statistics into the real running arrays: numpy dropped the
    # imaginary parts with a ComplexWarning, and the output used a complex "variance"
    x = Variable(cplx(4, 3))
    mean, var = np.zeros(3), np.ones(3)
    gamma, beta = Variable(np.ones(3)), Variable(np.zeros(3))
    with test_mode() if not train else _nothing():
        with pytest.raises(TypeError) as e:
            F.batch_norm(x, gamma, beta, mean, var)
    assert str(e.value).startswith("batch_norm: complex input (complex128) is refused: its ")
    np.testing.assert_array_equal(mean, np.zeros(3))
    np.testing.assert_array_equal(var, np.ones(3))
    assert x.creator is None and gamma.grad is None


@pytest.mark.parametrize("train", [True, False])
def test_the_batch_norm_layer_refuses_complex_input_and_keeps_its_state(train):
    """L.BatchNorm, unsized and after a real batch: refused in both modes, the parameters
    and running statistics as they were (the docs' table names the layer too)."""
    layer = L.BatchNorm()
    with test_mode() if not train else _nothing():
        with pytest.raises(TypeError, match=r"^batch_norm: complex input \(complex128\) is"):
            layer(Variable(cplx(4, 3)))
    assert layer.gamma.data is None and layer.avg_mean.data is None
    layer(Variable(rng.standard_normal((4, 3))))
    before = [p.data.copy() for p in (layer.gamma, layer.beta, layer.avg_mean, layer.avg_var)]
    with test_mode() if not train else _nothing():
        with pytest.raises(TypeError, match=r"^batch_norm: complex input"):
            layer(Variable(cplx(4, 3)))
    after = [p.data for p in (layer.gamma, layer.beta, layer.avg_mean, layer.avg_var)]
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
        assert b.dtype == np.float64


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("name", ["SGD", "MomentumSGD", "AdaGrad", "AdaDelta", "Adam", "AdamW"])
def test_an_optimizer_refuses_a_complex_parameter_and_changes_nothing(name):
    model = Model()
    model.w = Parameter(np.array([1.0, 2.0]))
    model.z = Parameter(np.array([1 + 2j, 3 - 1j]))
    opt = getattr(optimizers, name)().setup(model)
    model.w.grad = Variable(np.array([0.5, 0.5]))
    model.z.grad = Variable(np.array([0.5 + 0.5j, -1j]))
    with pytest.raises(TypeError) as e:
        opt.update()
    message = str(e.value)
    assert "dtype complex128 has a gradient of dtype complex128; nothing was updated" in message
    assert "Complex parameters are refused: " + HOLOMORPHIC_RULE in message
    assert "two real parameters" in message
    np.testing.assert_array_equal(model.w.data, [1.0, 2.0])
    np.testing.assert_array_equal(model.z.data, [1 + 2j, 3 - 1j])
    model.z = None  # without the complex parameter, the same optimizer updates
    opt = getattr(optimizers, name)().setup(model)
    model.w.grad = Variable(np.array([0.5, 0.5]))
    opt.update()
    assert not np.array_equal(model.w.data, [1.0, 2.0])
