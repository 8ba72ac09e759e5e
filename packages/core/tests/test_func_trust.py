"""Bad inputs to the transforms: each gives the right value or one clear error, nothing else.

Found by an adversarial pass over zerograd.func (wrong types, structures, dtypes, values
read inside vmap); each test pins one case that used to give a silently wrong result or an
error naming an internal class. Values against hand-computed derivatives, float64.
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


# -- numpy scalars are numbers -------------------------------------------------------------
@pytest.mark.parametrize("scalar", [np.float64(3.0), np.float32(3.0)])
def test_numpy_scalars_are_differentiated_like_python_floats(scalar):
    # iterating over an array (for x in np.linspace(...)) gives numpy scalars
    cube = lambda x: x**3  # noqa: E731
    assert float(grad(cube)(scalar)) == pytest.approx(27.0)
    value, g = value_and_grad(cube)(scalar)
    assert (float(value), float(g)) == pytest.approx((27.0, 27.0))
    assert float(jacrev(cube)(scalar)) == pytest.approx(27.0)
    assert float(jvp(cube, (scalar,), (np.float64(1.0),))[1]) == pytest.approx(27.0)


def test_numpy_integer_scalars_are_refused_as_integers():
    with pytest.raises(TypeError, match=r"grad: argument 0 has dtype int64; only floating"):
        grad(lambda x: x * x)(np.int64(3))


# -- the raw array of a batched Variable ------------------------------------------------------
@pytest.mark.parametrize("read", ["item", "tolist"])
def test_reading_one_value_of_the_raw_batched_array_is_the_vmap_error(read):
    def f(x):
        return x * getattr(x.data, read)()

    with pytest.raises(TypeError, match=rf"{read}\(\) of a batched array inside vmap: .* of 2"):
        vmap(f)(np.ones((2, 3)))


@pytest.mark.parametrize("method", ["max", "sum", "reshape", "copy", "T"])
def test_an_array_method_of_the_raw_batched_array_names_vmap(method):
    def f(x):
        return x - getattr(x.data, method)

    with pytest.raises(AttributeError, match=rf"'{method}'.*inside vmap.*zerograd functions"):
        vmap(f)(np.ones((2, 3)))


# -- vjp's cotangents ------------------------------------------------------------------------
def test_a_none_cotangent_for_a_vector_output_is_refused_not_taken_as_ones():
    x = np.array([1.0, 2.0])
    _, vjp_fn = vjp(lambda x: (x * x, x * 3.0), x)
    with pytest.raises(TypeError, match=r"vjp: the cotangent for \[1\] is None"):
        vjp_fn((np.ones(2), None))
    _, vjp_fn = vjp(lambda x: x * x, x)
    with pytest.raises(TypeError, match=r"vjp: the cotangent for the output is None"):
        vjp_fn(None)
    (g,) = vjp_fn(np.array([1.0, 10.0]))  # the function still works
    np.testing.assert_allclose(g, [2.0, 40.0])


def test_a_none_cotangent_for_a_scalar_output_is_one_as_in_torch():
    x = np.array([1.0, 2.0])
    _, vjp_fn = vjp(lambda x: F.sum(x**3), x)
    np.testing.assert_allclose(vjp_fn(None)[0], 3 * x**2)


# -- hvp's tangents ------------------------------------------------------------------------
def test_hvp_refuses_tangents_whose_dict_is_keyed_differently():
    def f(p):
        return F.sum(p["a"] ** 3 + 2.0 * p["b"] ** 2)

    p = {"a": np.array([1.0, 2.0]), "b": np.array([3.0, 4.0])}
    with pytest.raises(ValueError, match=r"hvp: the tangents must have the structure"):
        hvp(f, (p,), ({"b": np.ones(2), "c": np.zeros(2)},))
    with pytest.raises(ValueError, match=r"hvp: the tangents must have the structure"):
        # the same keys in another order would pair each tangent with the other primal
        hvp(f, (p,), ({"b": np.zeros(2), "a": np.ones(2)},))
    (g,), (hv,) = hvp(f, (p,), ({"a": np.ones(2), "b": np.zeros(2)},))
    np.testing.assert_allclose(hv["a"], 6 * p["a"])
    np.testing.assert_allclose(hv["b"], [0.0, 0.0])
    np.testing.assert_allclose(g["b"], 4 * p["b"])


# -- messages name the transform called ------------------------------------------------------
@pytest.mark.parametrize(
    "call, name",
    [
        (lambda f, x: jvp(f, (x,), (x,), has_aux=True), "jvp"),
        (lambda f, x: jacfwd(f, has_aux=True)(x), "jacfwd"),
    ],
)
def test_has_aux_without_a_pair_names_the_transform_called(call, name):
    with pytest.raises(TypeError, match=rf"^{name}\(has_aux=True\): .* got Variable"):
        call(lambda x: x * 2.0, np.ones(2))


# -- arrays in, arrays out -----------------------------------------------------------------
@pytest.mark.parametrize(
    "f, want",
    [
        (lambda x: x * 2.0, 2 * np.eye(3)),
        (lambda x: x + 1.0, np.eye(3)),
        (lambda x: x[::-1], np.eye(3)[::-1]),
    ],
)
def test_the_jacobian_of_a_linear_function_of_an_array_is_an_array(f, want):
    x = np.array([1.0, 2.0, 3.0])
    for transform in (jacrev, jacfwd):
        J = transform(f)(x)
        assert type(J) is np.ndarray, (transform.__name__, type(J))
        np.testing.assert_allclose(J, want)
    out = jacrev(lambda x: {"y": f(x), "s": F.sum(x)})(x)
    assert type(out["y"]) is np.ndarray and type(out["s"]) is np.ndarray
    np.testing.assert_allclose(out["y"], want)
    x0 = Variable(x)  # Variables in: Variables out
    assert isinstance(jacrev(f)(x0), Variable)


# -- out_axes errors speak of the output -----------------------------------------------------
def test_out_axes_that_do_not_fit_the_output_name_the_output():
    xs = np.ones((2, 3))
    with pytest.raises(ValueError, match=r"out_axes has 1 entries but the output has 2;"):
        vmap(lambda a: (a, a), out_axes=(0,))(xs)
    with pytest.raises(ValueError, match=r"out_axes is a dict but the output there is a tuple"):
        vmap(lambda a: (a, a), out_axes={"a": 0})(xs)
    with pytest.raises(ValueError, match=r"out_axes has keys \['b'\] but the output has \['a'\]"):
        vmap(lambda a: {"a": a}, out_axes={"b": 0})(xs)
    with pytest.raises(ValueError, match=r"in_axes\[0\] has 1 entries but the argument has 2;"):
        vmap(lambda t: t[0], in_axes=((0,),))((xs, xs))


# -- what vmap of arrays gives back from a transform inside it ------------------------------
def test_vmap_of_arrays_gives_arrays_for_an_inner_transforms_values_and_jacobians():
    # as torch.func.vmap and jax.vmap do: arrays in, arrays out, whatever transform runs
    # inside (its own graph, built on its stand-ins, is dropped when it returns); they
    # came as Variables, gradients alone as arrays
    f = lambda x: F.sum(F.sin(x) * x)  # noqa: E731
    g = lambda x: F.sin(x) * x  # noqa: E731
    x = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    d = np.cos(x) * x + np.sin(x)
    d2 = 2 * np.cos(x) - x * np.sin(x)
    hand_jac = np.stack([np.diag(r) for r in d])
    for transform in (jacrev(g), jacfwd(g)):
        out = vmap(transform)(x)
        assert type(out) is np.ndarray
        np.testing.assert_allclose(out, hand_jac, rtol=1e-12)
    out = vmap(hessian(f))(x)
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, np.stack([np.diag(r) for r in d2]), rtol=1e-12, atol=1e-15)
    value, gr = vmap(value_and_grad(f))(x)
    assert type(value) is np.ndarray and type(gr) is np.ndarray
    np.testing.assert_allclose(value, np.sum(np.sin(x) * x, axis=1), rtol=1e-12)
    np.testing.assert_allclose(gr, d, rtol=1e-12)
    out, tangent = vmap(lambda v: jvp(g, (v,), (v,)))(x)
    assert type(out) is np.ndarray and type(tangent) is np.ndarray
    np.testing.assert_allclose(out, np.sin(x) * x, rtol=1e-12)
    np.testing.assert_allclose(tangent, d * x, rtol=1e-12)
    out, pulled = vmap(lambda v: (lambda r: (r[0], r[1](v)[0]))(vjp(g, v)))(x)
    assert type(out) is np.ndarray and type(pulled) is np.ndarray
    np.testing.assert_allclose(out, np.sin(x) * x, rtol=1e-12)
    np.testing.assert_allclose(pulled, d * x, rtol=1e-12)
    (gr,), (hv,) = vmap(lambda v: hvp(f, (v,), (v,)))(x)
    assert type(gr) is np.ndarray and type(hv) is np.ndarray
    np.testing.assert_allclose(gr, d, rtol=1e-12)
    np.testing.assert_allclose(hv, d2 * x, rtol=1e-12)
