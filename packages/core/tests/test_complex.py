"""Complex data: holomorphic derivatives (JAX's ``holomorphic=True``), and the refusals.

zerograd's gradient of a complex function is ``f'(z)``. For a holomorphic ``f`` the
difference quotient along a real step, ``(f(z + h) - f(z - h)) / 2h``, is ``f'(z)``: the
numerical reference here. The ops that order values have no such derivative and refuse
complex input, changing nothing.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Variable, func
from zerograd.backends import HOLOMORPHIC_RULE
from zerograd.testing import numerical_grad

rng = np.random.default_rng(7)


def cplx(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def check(op, *shapes, at=None):
    """The gradient of ``sum(c * op(*xs))`` (complex weights ``c``) for each input."""
    xs = [cplx(*s) if at is None else at(cplx(*s)) for s in shapes]
    y = op(*[Variable(x) for x in xs])
    c = cplx(*y.shape)
    vs = [Variable(x) for x in xs]
    F.sum(op(*vs) * c).backward()
    for i, x in enumerate(xs):

        def term(v, i=i):
            return op(*[v if j == i else Variable(a) for j, a in enumerate(xs)]) * c

        np.testing.assert_allclose(vs[i].grad.data, numerical_grad(term, x), atol=1e-6)


UNARY = {
    "neg": lambda x: -x,
    "exp": F.exp,
    "log": F.log,
    "sin": F.sin,
    "cos": F.cos,
    "tanh": F.tanh,
    "sqrt": F.sqrt,
    "square": F.square,
    "pow": lambda x: x**3,
    "rpow": lambda x: 2.0**x,
    "sum": lambda x: F.sum(x, axis=1),
    "mean": lambda x: F.mean(x, axis=0),
    "reshape": lambda x: F.reshape(x, (3, 2)),
    "transpose": F.transpose,
    "broadcast_to": lambda x: F.broadcast_to(x, (4, 2, 3)),
    "get_item": lambda x: x[1, ::2],
    "sum_to": lambda x: F.sum_to(x, (1, 3)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_a_holomorphic_unary_op_gives_the_complex_derivative(name):
    check(UNARY[name], (2, 3))


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow_var": lambda a, b: a**b,
    "matmul": F.matmul,
    "concatenate": lambda a, b: F.concatenate([a, b.T], axis=0),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_a_holomorphic_binary_op_gives_the_complex_derivative(name):
    check(BINARY[name], (3, 3), (3, 3))


def test_the_derivatives_are_jaxs_holomorphic_ones_not_their_conjugates():
    # JAX: grad(lambda a: sum(a * b), holomorphic=True) is b; PyTorch's .grad would be conj(b)
    a, b = cplx(2, 3), cplx(3, 4)
    va, vb = Variable(a), Variable(b)
    F.sum(F.matmul(va, vb)).backward()
    np.testing.assert_allclose(va.grad.data, np.ones((2, 4)) @ b.T)  # no conjugate
    np.testing.assert_allclose(vb.grad.data, a.T @ np.ones((2, 4)))
    z = Variable(np.array(1 + 2j))
    (z * z).backward()
    assert z.grad.data == 2 * (1 + 2j)  # torch: (z * z).backward() needs a gradient argument


def test_backward_from_a_complex_output_seeds_one_and_differentiates_twice():
    z = np.array([0.3 - 0.7j, 1.2 + 0.4j])
    x = Variable(z)
    y = F.sum(F.sin(x))
    y.backward(create_graph=True)
    np.testing.assert_allclose(x.grad.data, np.cos(z))
    gx = x.grad
    x.cleargrad()
    F.sum(gx).backward()
    np.testing.assert_allclose(x.grad.data, -np.sin(z))


def test_func_grad_of_a_complex_output_is_the_holomorphic_derivative():
    # decided: as backward() (JAX's grad refuses unless holomorphic=True)
    z = np.array(0.5 + 1.5j)
    np.testing.assert_allclose(func.grad(F.exp)(z), np.exp(z))
    g = func.grad(lambda x: F.sum(x * x * x))(np.array([1j, 2 - 1j]))
    np.testing.assert_allclose(g, 3 * np.array([1j, 2 - 1j]) ** 2)


REFUSED = {
    "max": lambda x: F.max(x),
    "min": lambda x: F.min(x, axis=0),
    "clip": lambda x: F.clip(x, 0.0, 1.0),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_an_op_that_orders_values_refuses_complex_input(name):
    # max, min and clip compared complex numbers by numpy's lexicographic order and passed
    # gradients along that order, a derivative of nothing
    x = Variable(np.array([1 + 2j, 2 - 1j, -1j]))
    with pytest.raises(TypeError) as e:
        REFUSED[name](x)
    message = str(e.value)
    assert message.startswith(f"{name}: complex input (complex128) is refused: it compares values")
    assert HOLOMORPHIC_RULE in message
    assert "x.data.real, x.data.imag" in message
    assert x.creator is None and x.grad is None
    np.testing.assert_array_equal(x.data, [1 + 2j, 2 - 1j, -1j])


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_refusing_ops_keep_real_input_working(name):
    x = Variable(np.array([0.5, 2.0, -1.0]))
    y = REFUSED[name](x)
    F.sum(y).backward()
    assert x.grad.dtype == np.float64


def test_every_test_the_docs_complex_numbers_table_names_exists():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    page = (root / "docs" / "from-pytorch.md").read_text()
    section = page.split("## Complex numbers", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(test_\w+)`", section))
    assert len(named) >= 12
    sources = "".join(p.read_text() for p in root.glob("packages/*/tests/test_*.py"))
    missing = sorted(n for n in named if f"def {n}(" not in sources)
    assert missing == []


def test_numerical_grad_and_gradient_check_keep_the_imaginary_parts():
    # numerical_grad ran in float64: a complex point lost its imaginary part (numpy's
    # ComplexWarning) and the quotient was the real line's, so gradient_check compared
    # zerograd's f'(z) with a wrong reference
    from zerograd.testing import gradient_check

    z = np.array([1 + 2j, 0.5 - 1j])
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        g = numerical_grad(lambda v: v * v, z)
        assert g.dtype == np.complex128
        np.testing.assert_allclose(g, 2 * z, rtol=1e-7)
        assert gradient_check(F.exp, z)
        # a real point with a complex output: the gradient is complex (df/dx, as backward's)
        x = np.array([0.5, 2.0])
        np.testing.assert_allclose(numerical_grad(lambda v: v * (1 + 2j), x), [1 + 2j] * 2)
        assert gradient_check(lambda v: v * (1 + 2j), x)
