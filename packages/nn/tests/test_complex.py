"""Complex data in zerograd-nn: the holomorphic functions differentiate, the others refuse.

The reference for a holomorphic function is its difference quotient along a real step
(which equals ``f'(z)``); a refusal names the convention and changes nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Parameter, Variable
from zerograd.backends import HOLOMORPHIC_RULE
from zerograd_nn import Model, optimizers

rng = np.random.default_rng(11)


def cplx(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def holomorphic_grad(f, z, h=1e-6):
    g = np.zeros_like(z)
    for k in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[k] = h
        g[k] = (f(z + e) - f(z - e)) / (2 * h)
    return g


def check(op, *xs):
    """``sum(c * op(*xs))``'s gradient (complex weights ``c``) against difference quotients."""
    c = cplx(*op(*xs).shape)
    vs = [Variable(x) for x in xs]
    F.sum(op(*vs) * c).backward()
    for i, x in enumerate(xs):

        def scalar(xi, i=i):
            args = list(xs)
            args[i] = xi
            return complex(np.sum(op(*args).data * c))

        np.testing.assert_allclose(vs[i].grad.data, holomorphic_grad(scalar, x), atol=1e-6)


@pytest.mark.parametrize("name", ["SGD", "MomentumSGD", "AdaGrad", "AdaDelta", "Adam"])
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
