"""What the transforms give back: arrays for arrays, Variables where an outside graph reaches.

As ``torch.func`` and JAX do: an aux is data (arrays), under ``vmap`` too; a transform
nested in ``vmap`` of arrays gives arrays; a transform of arrays nested in another
transform stays differentiable by the outer one (it may read the outer one's argument);
Variables given in (or captured and kept by ``vmap``) stay connected. Values against
hand-computed derivatives, float64.
"""

from __future__ import annotations

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Variable, modes
from zerograd.func import grad, hessian, hvp, jacfwd, jacrev, jvp, value_and_grad, vjp, vmap


@pytest.fixture(autouse=True)
def _no_mode_left_behind():
    yield
    assert modes.switch.on == 0 and modes.current() is None, "a transform left a mode entered"


X = np.array([0.5, -1.0, 2.0])
XS = np.linspace(-1.0, 1.0, 12).reshape(4, 3)


def _aux(x):
    """An aux with every kind of leaf: Variables computed from x, a number, a string."""
    return {"sq": x * x, "parts": (F.cos(x), [F.sum(x)]), "n": 3, "tag": "kept"}


def _check_aux(aux, x):
    """``aux`` is _aux(x) as data: the same structure, arrays for the Variables."""
    assert set(aux) == {"sq", "parts", "n", "tag"}
    assert type(aux["parts"]) is tuple and type(aux["parts"][1]) is list
    for got, want in [
        (aux["sq"], x * x),
        (aux["parts"][0], np.cos(x)),
        (aux["parts"][1][0], np.sum(x, axis=-1)),
    ]:
        assert type(got) is np.ndarray, type(got)
        np.testing.assert_allclose(got, want, rtol=1e-15)
    assert aux["n"] == 3 and aux["tag"] == "kept"


def _scalar(x):
    return F.sum(F.sin(x) * x), _aux(x)


def _vector(x):
    return F.sin(x) * x, _aux(x)


def _d(x):
    """d/dx of sin(x) * x, elementwise."""
    return np.cos(x) * x + np.sin(x)


def _grad(x):
    g, aux = grad(_scalar, has_aux=True)(x)
    return aux, g


def _value_and_grad(x):
    (_, aux), g = value_and_grad(_scalar, has_aux=True)(x)
    return aux, g


def _vjp(x):
    _, vjp_fn, aux = vjp(_vector, x, has_aux=True)
    return aux, vjp_fn(x)[0] / x  # ct = x: d * x


def _jvp(x):
    _, tangent, aux = jvp(_vector, (x,), (x,), has_aux=True)
    return aux, tangent / x


def _jacrev(x):
    J, aux = jacrev(_vector, has_aux=True)(x)
    return aux, F.sum(J, axis=0)  # J is diagonal


def _jacfwd(x):
    J, aux = jacfwd(_vector, has_aux=True)(x)
    return aux, F.sum(J, axis=0)


# each transform with has_aux at one sample x: (aux, the derivative of sin(x) * x it gives)
WITH_AUX = {
    "grad": _grad,
    "value_and_grad": _value_and_grad,
    "vjp": _vjp,
    "jvp": _jvp,
    "jacrev": _jacrev,
    "jacfwd": _jacfwd,
}


# -- aux is data ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(WITH_AUX))
def test_aux_comes_as_arrays_in_the_functions_structure(name):
    aux, derivative = WITH_AUX[name](X)
    _check_aux(aux, X)
    if isinstance(derivative, Variable):  # jacrev's and jacfwd's, summed by F.sum
        derivative = derivative.data
    np.testing.assert_allclose(derivative, _d(X), rtol=1e-14)


@pytest.mark.parametrize("name", sorted(WITH_AUX))
def test_aux_under_vmap_comes_as_arrays_with_the_batch_axis(name):
    def per_sample(x):
        aux, derivative = WITH_AUX[name](x)
        return {k: v for k, v in aux.items() if k != "tag"}, derivative

    aux, derivative = vmap(per_sample)(XS)
    assert aux["n"].tolist() == [3] * 4  # a number: the same for every sample
    _check_aux({**aux, "n": 3, "tag": "kept"}, XS)
    assert type(derivative) is np.ndarray
    np.testing.assert_allclose(derivative, _d(XS), rtol=1e-14)


def test_aux_of_nested_transforms_is_an_array_and_the_outer_one_differentiates_it():
    inner = grad(lambda y: (y**3, y**2), has_aux=True)  # (3 y^2, y^2)
    second, aux = grad(inner, has_aux=True)(2.0)  # torch.func: (12., 4.)
    assert type(second) is np.ndarray and type(aux) is np.ndarray
    assert (float(second), float(aux)) == (12.0, 4.0)
    d_aux = grad(lambda x: inner(x)[1])(2.0)  # the aux is the outer one's to differentiate
    assert type(d_aux) is np.ndarray and float(d_aux) == 4.0


def test_aux_of_a_variable_stays_connected_to_it_as_in_torch_func():
    x = Variable(X.copy())
    g, aux = grad(_scalar, has_aux=True)(x)
    assert isinstance(aux["sq"], Variable) and isinstance(g, Variable)
    F.sum(aux["sq"]).backward()
    np.testing.assert_allclose(x.grad.data, 2 * X, rtol=1e-15)


# -- vmap of arrays: every nested transform gives arrays ----------------------------------
def test_a_transform_of_a_transforms_result_under_vmap_gives_arrays():
    cube = lambda x: F.sum(x**3)  # noqa: E731
    out = vmap(lambda x: grad(cube)(grad(cube)(x)))(XS)  # 3 (3 x^2)^2 = 27 x^4
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, 27 * XS**4, rtol=1e-14)


def test_vmap_of_arrays_with_out_axes_gives_an_array():
    out = vmap(lambda x: x * 2.0, out_axes=1)(XS)
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, 2 * XS.T)
    out = vmap(lambda x: grad(lambda v: F.sum(v * v))(x), out_axes=1)(XS)
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, 2 * XS.T)


def test_a_vmap_of_arrays_inside_a_vmap_reads_the_outer_batch():
    xs, ys = np.array([1.0, 2.0]), np.array([0.0, 1.0, 2.0])
    out = vmap(lambda a: vmap(lambda b: a * b)(ys))(xs)
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, np.outer(xs, ys))
    out = vmap(lambda a: vmap(lambda b: a)(ys))(xs)  # a does not depend on the inner batch
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, np.repeat(xs[:, None], 3, axis=1))


def test_a_variable_the_function_closes_over_keeps_its_graph_under_vmap():
    # vmap's promise: an output computed from a Variable with a graph stays connected to it
    w = Variable(np.array([1.0, 2.0, 3.0]))
    f = lambda x: F.sum(F.sin(x) * x)  # noqa: E731
    out = vmap(lambda x: grad(f)(x) * w)(XS)
    assert type(out) is Variable
    np.testing.assert_allclose(out.data, _d(XS) * w.data, rtol=1e-14)
    F.sum(out).backward()
    np.testing.assert_allclose(w.grad.data, _d(XS).sum(axis=0), rtol=1e-14)
    out = vmap(lambda x: F.matmul(hessian(f)(x), w))(XS)
    assert type(out) is Variable
    hand = (2 * np.cos(XS) - XS * np.sin(XS)) * w.data
    np.testing.assert_allclose(out.data, hand, rtol=1e-14, atol=1e-15)


# -- a transform of arrays inside another transform ----------------------------------------
P, X0 = 3.0, np.array([1.0, 2.0])

# the inner transform reads the outer one's argument p: (outer function of p, d/dp by hand)
READS_P = {
    "grad": (lambda p: F.sum(grad(lambda y: F.sum(y * y * p))(X0)), 2 * X0.sum()),
    "value_and_grad": (lambda p: value_and_grad(lambda y: F.sum(y * p))(X0)[0], X0.sum()),
    "vjp": (lambda p: F.sum(vjp(lambda y: y * p, X0)[0]), X0.sum()),
    "vjp_fn": (lambda p: F.sum(vjp(lambda y: y * p, X0)[1](np.ones(2))[0]), 2.0),
    "jvp": (lambda p: F.sum(jvp(lambda y: y * p, (X0,), (X0,))[1]), X0.sum()),
    "jacrev": (lambda p: F.sum(jacrev(lambda y: y * p)(X0)), 2.0),
    "jacfwd": (lambda p: F.sum(jacfwd(lambda y: y * p)(X0)), 2.0),
    "hessian": (lambda p: F.sum(hessian(lambda y: F.sum(y**3 * p))(X0)), 6 * X0.sum()),
    "hvp": (lambda p: F.sum(hvp(lambda y: F.sum(y * y * p), (X0,), (X0,))[1][0]), 2 * X0.sum()),
}


@pytest.mark.parametrize("name", sorted(READS_P))
def test_an_inner_transform_of_arrays_is_differentiated_by_the_outer_one(name):
    outer, want = READS_P[name]
    got = grad(outer)(P)
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_jvp_of_a_variable_gives_a_tangent_connected_to_it():
    t = np.array([1.0, -2.0])
    x = Variable(X0.copy())
    out, tangent = jvp(lambda v: v**2, (x,), (t,))  # tangent 2 x t
    assert isinstance(tangent, Variable)
    np.testing.assert_allclose(tangent.data, 2 * X0 * t)
    F.sum(tangent).backward()
    np.testing.assert_allclose(x.grad.data, 2 * t)
    got = grad(lambda p: F.sum(jvp(lambda v: v**2, (p,), (t,))[1]))(X0)
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, 2 * t)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_0d_result_summed_over_several_walks_is_a_0d_array(dtype):
    """jvp of two primals walks once per tangent, vjp of two outputs once per cotangent;
    numpy adds two 0-d arrays into a scalar (numpy.float64), which must not come back."""
    a, b = np.array(2.0, dtype), np.array(3.0, dtype)
    one = np.array(1.0, dtype)
    out, tangent = jvp(lambda x, y: x * y + F.sin(x), (a, b), (one, 2 * one))
    assert type(tangent) is np.ndarray and tangent.shape == () and tangent.dtype == dtype
    np.testing.assert_allclose(tangent, 3.0 + np.cos(2.0) + 2.0 * 2.0, rtol=1e-6)
    _, vjp_fn = vjp(lambda x: (x * 2.0, x * x), a)
    (g,) = vjp_fn((one, one))
    assert type(g) is np.ndarray and g.shape == () and g.dtype == dtype
    np.testing.assert_allclose(g, 2.0 + 2 * 2.0)
    (_,), (hv,) = hvp(lambda x: x * x * x, (a,), (one,))
    assert type(hv) is np.ndarray and hv.dtype == dtype
    np.testing.assert_allclose(hv, 6 * 2.0)
