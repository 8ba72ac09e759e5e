"""grad, value_and_grad, vjp, jvp, jacobians and hvp: structures, composition, state, errors.

The values of every transform on many functions are checked in test_func_cases; here the
contract around them: what comes back in which structure and kind, what is left unchanged
(no Variable's ``grad``, the mode switch), and one clear error for each bad input.
"""

from __future__ import annotations

import collections
import contextvars
import doctest
import importlib
import threading
import warnings

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import (
    Config,
    Function,
    StaticGraphWarning,
    Variable,
    modes,
    no_grad,
    static_graph,
    test_mode,
)
from zerograd.backends import as_numpy
from zerograd.func import (
    grad,
    grad_and_value,
    hessian,
    hvp,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    value_and_grad,
    vjp,
    vmap,
)


@pytest.fixture(autouse=True)
def _no_mode_left_behind():
    yield
    assert modes.switch.on == 0 and modes.current() is None, "a transform left a mode entered"


def cube(x):
    return F.sum(x**3)


# -- results: structure and kind ----------------------------------------------------------
def test_arrays_in_arrays_out_variables_in_variables_out(arr):
    x = arr([1.0, 2.0])
    g = grad(cube)(x)
    assert type(g) is type(x)
    np.testing.assert_allclose(as_numpy(g), [3.0, 12.0])
    gv = grad(cube)(Variable(x))
    assert isinstance(gv, Variable)
    np.testing.assert_allclose(as_numpy(gv), [3.0, 12.0])


def test_argnums_tuple_and_nested_structures(arr):
    params = {"w": arr([[1.0, 2.0], [3.0, 4.0]]), "b": [arr([0.5, -0.5]), arr(2.0)]}
    x = arr([1.0, -1.0])

    def loss(p, x, scale):
        y = x @ p["w"] + p["b"][0]
        return F.sum(y * y) * p["b"][1] * scale

    gp, gx = grad(loss, argnums=(0, 1))(params, x, 3.0)
    assert set(gp) == {"w", "b"} and isinstance(gp["b"], list) and len(gp["b"]) == 2
    y = np.array([1.0, -1.0]) @ np.array([[1.0, 2.0], [3.0, 4.0]]) + [0.5, -0.5]
    np.testing.assert_allclose(as_numpy(gp["w"]), 2 * 2.0 * 3.0 * np.outer([1.0, -1.0], y))
    np.testing.assert_allclose(as_numpy(gp["b"][0]), 2 * 2.0 * 3.0 * y)
    np.testing.assert_allclose(as_numpy(gp["b"][1]), 3.0 * (y * y).sum())
    np.testing.assert_allclose(as_numpy(gx), 2 * 2.0 * 3.0 * np.array([[1, 2], [3, 4]]) @ y)
    g_last = grad(lambda a, b: F.sum(b * b * a), argnums=-1)(x, arr([2.0, 3.0]))
    np.testing.assert_allclose(as_numpy(g_last), 2 * np.array([1.0, -1.0]) * [2.0, 3.0])


Affine = collections.namedtuple("Affine", "w b")


def test_named_tuples_are_structures_rebuilt_as_their_class(arr):
    """As in JAX and torch.func: a named tuple of parameters is a tuple of leaves (it was
    taken as one leaf: "argument 0 has dtype Affine"), and comes back as its class."""
    p = Affine(arr([1.0, 2.0]), arr(3.0))
    x = arr([0.5, -1.0])

    def loss(p, x):
        return F.sum((p.w * x + p.b) ** 2)

    x_np = np.array([0.5, -1.0])
    r = x_np * [1.0, 2.0] + 3.0  # [3.5, 1.0]
    g = grad(loss)(p, x)
    assert type(g) is Affine
    np.testing.assert_allclose(as_numpy(g.w), 2 * r * x_np)
    np.testing.assert_allclose(as_numpy(g.b), 2 * r.sum())
    (value, g2) = value_and_grad(loss)(p, x)
    assert float(as_numpy(value)) == (r * r).sum() and type(g2) is Affine
    jac = jacrev(lambda p: p.w * p.b)(p)
    assert type(jac) is Affine
    np.testing.assert_allclose(as_numpy(jac.w), 3.0 * np.eye(2))
    np.testing.assert_allclose(as_numpy(jac.b), [1.0, 2.0])
    _, aux = grad(lambda p: (loss(p, x), Affine(p.w * 2, "tag")), has_aux=True)(p)
    assert type(aux) is Affine and aux.b == "tag"
    np.testing.assert_allclose(as_numpy(aux.w), [2.0, 4.0])
    with pytest.raises(TypeError, match=r"argument 0\.b has dtype \S*int64"):
        grad(loss)(Affine(arr([1.0, 2.0]), arr(3, dtype="int64")), x)


def test_vmap_takes_named_tuples_as_arguments_axes_and_outputs(arr):
    batch = Affine(arr(np.arange(6.0).reshape(3, 2)), arr(2.0))
    out = vmap(lambda p: Affine(F.sum(p.w) * p.b, p.w * 0.5), in_axes=(Affine(0, None),))(batch)
    assert type(out) is Affine
    np.testing.assert_allclose(as_numpy(out.w), [2.0, 10.0, 18.0])
    np.testing.assert_allclose(as_numpy(out.b), np.arange(6.0).reshape(3, 2) * 0.5)


def test_has_aux_passes_the_second_item_through(arr):
    x = arr([1.0, 2.0])
    g, aux = grad(lambda x: (cube(x), {"note": "kept"}), has_aux=True)(x)
    assert aux == {"note": "kept"}
    np.testing.assert_allclose(as_numpy(g), [3.0, 12.0])
    (value, aux), g = value_and_grad(lambda x: (cube(x), 7), has_aux=True)(x)
    assert aux == 7 and float(as_numpy(value)) == 9.0


def test_value_and_grad_gives_the_value_of_one_evaluation(arr):
    x = arr([1.0, 2.0])
    calls = []
    value, g = value_and_grad(lambda x: calls.append(1) or cube(x))(x)
    np.testing.assert_allclose(as_numpy(value), 9.0)
    np.testing.assert_allclose(as_numpy(g), [3.0, 12.0])
    assert calls == [1], "the function ran once"


def test_grad_and_value_is_torch_funcs_order(arr):
    """(gradient, value); with has_aux (gradient, (value, aux)); a tuple of gradients for a
    tuple argnums: torch.func.grad_and_value's structure, from one evaluation."""
    a, b = arr([1.0, 2.0]), arr([3.0, 4.0])
    calls = []

    def f(a, b):
        calls.append(1)
        return F.sum(F.mul(a**3, b))  # (a strict backend's array refuses a Variable on its right)

    g, value = grad_and_value(f)(a, b)
    np.testing.assert_allclose(as_numpy(g), [9.0, 48.0])  # 3 a^2 b
    np.testing.assert_allclose(as_numpy(value), 35.0)  # 1*3 + 8*4
    (ga, gb), value = grad_and_value(f, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(as_numpy(ga), [9.0, 48.0])
    np.testing.assert_allclose(as_numpy(gb), [1.0, 8.0])  # a^3
    np.testing.assert_allclose(as_numpy(value), 35.0)
    assert calls == [1, 1], "each call ran the function once"
    out = grad_and_value(lambda a, b: (f(a, b), {"twice": a * 2.0}), 1, has_aux=True)(a, b)
    (gb, (value, aux)) = out
    np.testing.assert_allclose(as_numpy(gb), [1.0, 8.0])
    np.testing.assert_allclose(as_numpy(value), 35.0)
    np.testing.assert_allclose(as_numpy(aux["twice"]), [2.0, 4.0])
    assert type(aux["twice"]) is type(a), "arrays in, an array aux out"
    (gs, (value, aux)) = grad_and_value(lambda a: (f(a, b), 7), argnums=(0,), has_aux=True)(a)
    assert isinstance(gs, tuple) and len(gs) == 1 and aux == 7
    np.testing.assert_allclose(as_numpy(gs[0]), [9.0, 48.0])
    (value2, aux2), g2 = value_and_grad(lambda a: (f(a, b), 7), has_aux=True)(a)
    np.testing.assert_array_equal(as_numpy(g2), as_numpy(gs[0]))
    assert float(as_numpy(value2)) == float(as_numpy(value)) and aux2 == aux


def test_grad_and_value_of_variables_stays_connected(arr):
    x = Variable(arr([1.0, 2.0]))
    g, value = grad_and_value(cube)(x)
    assert isinstance(g, Variable) and isinstance(value, Variable)
    F.sum(g).backward()  # d/dx sum(3 x^2) = 6 x
    np.testing.assert_allclose(as_numpy(x.grad), [6.0, 12.0])


def test_keyword_arguments_go_to_the_function_undifferentiated(arr):
    g = grad(lambda x, *, power: F.sum(x**power))(arr([2.0]), power=3)
    np.testing.assert_allclose(as_numpy(g), [12.0])


# -- composition --------------------------------------------------------------------------
def test_grad_of_grad_is_the_second_derivative(arr):
    x = arr(2.0)
    f = lambda x: x**4  # noqa: E731
    assert float(as_numpy(grad(grad(f))(x))) == pytest.approx(48.0)
    assert float(as_numpy(grad(grad(grad(f)))(x))) == pytest.approx(48.0)


def test_a_closure_over_the_outer_input_is_differentiated_by_the_outer_grad(arr):
    """grad(lambda x: grad(lambda y: x * y)(x)): the inner gradient is x itself, so the
    outer derivative is 1 (the inner grad must not confuse the two inputs)."""
    f = lambda x: grad(lambda y: x * y)(x)  # noqa: E731
    assert float(as_numpy(grad(f)(arr(3.0)))) == pytest.approx(1.0)
    g = lambda x: grad(lambda y: x * y * y)(x)  # 2 x^2 -> 4x  # noqa: E731
    assert float(as_numpy(grad(g)(arr(3.0)))) == pytest.approx(12.0)


def test_a_variable_argument_stays_connected_for_backward(arr):
    """The gradient of a Variable argument is differentiable by the engine itself."""
    x = Variable(arr(2.0))
    gx = grad(lambda x: x**3)(x)  # 3 x^2 = 12
    assert float(as_numpy(gx)) == pytest.approx(12.0)
    assert x.grad is None
    gx.backward()  # d(3 x^2)/dx = 6 x
    assert float(as_numpy(x.grad)) == pytest.approx(12.0)


def test_jacobian_is_jacrev_and_hessian_of_two_arguments(arr):
    assert jacobian is jacrev
    f = lambda a, b: F.sum(a * a * b)  # noqa: E731
    a, b = arr([1.0, 2.0]), arr([3.0, 4.0])
    (haa, hab), (hba, hbb) = hessian(f, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(as_numpy(haa), np.diag([6.0, 8.0]))
    np.testing.assert_allclose(as_numpy(hab), np.diag([2.0, 4.0]))
    np.testing.assert_allclose(as_numpy(hba), np.diag([2.0, 4.0]))
    np.testing.assert_allclose(as_numpy(hbb), np.zeros((2, 2)))


def test_jacobians_of_several_outputs_come_in_the_outputs_structure(arr):
    f = lambda x: (x * 2.0, {"s": F.sum(x)})  # noqa: E731
    x = arr([1.0, 2.0, 3.0])
    for jac in (jacrev, jacfwd):
        a, d = jac(f)(x)
        np.testing.assert_allclose(as_numpy(a), 2 * np.eye(3))
        np.testing.assert_allclose(as_numpy(d["s"]), np.ones(3))


def test_vjp_of_several_outputs_adds_their_contributions(arr):
    """Each output's walk adds to the same stand-in: x*x and sin(x) both reach x."""
    x = arr([0.5, 1.5])
    out, vjp_fn = vjp(lambda x: (x * x, F.sin(x)), x)
    (g,) = vjp_fn((arr([1.0, 2.0]), arr([3.0, 1.0])))
    want = 2 * np.array([0.5, 1.5]) * [1.0, 2.0] + np.cos([0.5, 1.5]) * [3.0, 1.0]
    np.testing.assert_allclose(as_numpy(g), want)
    (again,) = vjp_fn((arr([1.0, 2.0]), arr([3.0, 1.0])))
    np.testing.assert_allclose(as_numpy(again), want)


def test_jvp_of_several_primals_sums_their_directions(arr):
    f = lambda a, b: a * b + F.sin(a)  # noqa: E731
    a, b = arr([0.5, 1.0]), arr([2.0, 3.0])
    ta, tb = arr([1.0, 0.0]), arr([0.0, 1.0])
    out, t = jvp(f, (a, b), (ta, tb))
    want = (np.array([2.0, 3.0]) + np.cos([0.5, 1.0])) * [1.0, 0.0] + np.array([0.5, 1.0]) * [
        0.0,
        1.0,
    ]
    np.testing.assert_allclose(as_numpy(t), want)
    np.testing.assert_allclose(as_numpy(out), [1.0 + np.sin(0.5), 3.0 + np.sin(1.0)])


def test_hvp_of_two_primals(arr):
    f = lambda a, b: F.sum(a * a * b)  # noqa: E731
    (ga, gb), (ha, hb) = hvp(f, (arr([1.0, 2.0]), arr([3.0, 4.0])), (arr([1.0, 0.0]),) * 2)
    np.testing.assert_allclose(as_numpy(ga), [6.0, 16.0])
    np.testing.assert_allclose(as_numpy(gb), [1.0, 4.0])
    np.testing.assert_allclose(as_numpy(ha), [6.0 + 2.0, 0.0])  # H_aa t_a + H_ab t_b
    np.testing.assert_allclose(as_numpy(hb), [2.0, 0.0])


# -- outputs not connected to the inputs: zeros --------------------------------------------
def test_an_output_that_ignores_the_input_gives_zeros(arr):
    x = arr([1.0, 2.0])
    np.testing.assert_array_equal(as_numpy(grad(lambda x: F.sum(arr([3.0, 4.0])))(x)), [0, 0])
    np.testing.assert_array_equal(as_numpy(grad(lambda x: 5.0)(x)), [0.0, 0.0])
    ga, gb = grad(lambda a, b: F.sum(a * 2.0), argnums=(0, 1))(x, arr([[1.0]]))
    np.testing.assert_array_equal(as_numpy(gb), [[0.0]])
    np.testing.assert_allclose(as_numpy(jacrev(lambda x: arr([1.0]))(x)), np.zeros((1, 2)))


def test_an_integer_or_bool_output_gets_zero_tangents_as_it_gets_zero_gradients(arr):
    """jvp and jacfwd give an integer output (a count, a mask) zeros, as vjp and jacrev do
    and as torch.func.jvp does; they refused it, calling it an input."""
    x, t = arr([1.0, 2.0], "float32"), arr([1.0, 1.0], "float32")

    def two(x):
        return x * 3.0, {"count": F.sum(x > 1.5), "mask": x > 1.5}

    out, tangent = jvp(two, (x,), (t,))
    np.testing.assert_array_equal(as_numpy(out[1]["count"]), 1)
    np.testing.assert_allclose(as_numpy(tangent[0]), [3.0, 3.0])
    for got, shape in [(tangent[1]["count"], ()), (tangent[1]["mask"], (2,))]:
        assert got.shape == shape and as_numpy(got).dtype == np.float32
        np.testing.assert_array_equal(as_numpy(got), np.zeros(shape))
    jf, jr = jacfwd(two)(x), jacrev(two)(x)
    np.testing.assert_allclose(as_numpy(jf[0]), 3.0 * np.eye(2))
    for k, shape in [("count", (2,)), ("mask", (2, 2))]:
        np.testing.assert_array_equal(as_numpy(jf[1][k]), np.zeros(shape))
        np.testing.assert_array_equal(as_numpy(jf[1][k]), as_numpy(jr[1][k]))
    _, only = jvp(lambda x: F.sum(x > 1.5), (x,), (t,))
    np.testing.assert_array_equal(as_numpy(only), 0.0)


def test_returning_a_variable_from_outside_gives_zeros_and_leaves_it_alone(arr):
    w = Variable(arr([1.0, 2.0]))
    h = w * w  # a Variable with a graph of its own
    g = grad(lambda x: F.sum(h))(arr([0.0, 0.0]))
    np.testing.assert_array_equal(as_numpy(g), [0.0, 0.0])
    assert w.grad is None and h.grad is None


# -- nothing outside changes ----------------------------------------------------------------
def test_gradients_held_by_variables_are_as_before(arr):
    x = Variable(arr([1.0, 2.0]))
    x.grad = Variable(arr([10.0, 20.0]))
    held = x.grad
    w = Variable(arr([3.0, 4.0]))  # captured by the function, a leaf
    w.grad = Variable(arr([5.0, 5.0]))
    w_held = w.grad
    u = Variable(arr([1.0, -1.0]))
    h = u * 2.0  # captured, with a graph back to u
    for transform in (grad, jacrev, jacfwd, hessian):
        out = transform(lambda x: F.sum(x * w * h))(x)
        assert out is not None
    vjp(lambda x: x * w * h, x)[1](arr([1.0, 1.0]))
    jvp(lambda x: x * w * h, (x,), (arr([1.0, 1.0]),))
    hvp(lambda x: F.sum(x * x * w * h), (x,), (arr([1.0, 1.0]),))
    assert x.grad is held and w.grad is w_held and u.grad is None and h.grad is None
    np.testing.assert_array_equal(as_numpy(x.grad), [10.0, 20.0])
    np.testing.assert_array_equal(as_numpy(w.grad), [5.0, 5.0])


def test_captured_variables_are_constants_of_the_transform(arr):
    w = Variable(arr([3.0, 4.0]))
    g = grad(lambda x: F.sum(x * w * w))(arr([1.0, 1.0]))
    np.testing.assert_allclose(as_numpy(g), [9.0, 16.0])
    assert w.grad is None


def test_a_failing_function_changes_nothing_and_the_next_call_works(arr):
    x = Variable(arr([1.0, 2.0]))
    x.grad = Variable(arr([1.0, 1.0]))
    held = x.grad

    def broken(x):
        _ = x * 2.0
        raise KeyError("inside")

    with pytest.raises(KeyError, match="inside"):
        grad(broken)(x)
    assert x.grad is held and modes.switch.on == 0
    np.testing.assert_allclose(as_numpy(grad(cube)(x)), [3.0, 12.0])


def test_grad_records_inside_no_grad_and_leaves_config_alone(arr):
    with no_grad():
        g = grad(cube)(arr([1.0, 2.0]))
        assert Config.enable_backprop is False
    np.testing.assert_allclose(as_numpy(g), [3.0, 12.0])
    with test_mode():
        seen = []
        grad(lambda x: seen.append(Config.train) or cube(x))(arr([1.0]))
    assert seen == [False]


def test_threads_transform_at_once_without_seeing_each_other(arr):
    """Modes and guards are per thread: concurrent transforms and plain code agree."""
    errors = []
    barrier = threading.Barrier(3)

    def transforms(k):
        try:
            barrier.wait()
            for _ in range(30):
                x = arr([1.0, 2.0]) * k
                np.testing.assert_allclose(as_numpy(grad(cube)(x)), 3 * np.array([1, 4]) * k * k)
                h = as_numpy(hessian(cube)(x))
                np.testing.assert_allclose(h, np.diag(6 * np.array([1.0, 2.0]) * k))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def plain():
        try:
            barrier.wait()
            for _ in range(200):
                v = Variable(arr([1.0, 2.0]))
                y = F.sum(v * v)
                assert type(y) is Variable and y.shape == ()
                y.backward()
                np.testing.assert_allclose(as_numpy(v.grad), [2.0, 4.0])
        except Exception as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=transforms, args=(k,)) for k in (1.0, 2.0)]
    threads.append(threading.Thread(target=plain))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def _in_a_thread(fn, *args, context=None):
    """``fn(*args)`` run in a thread of its own (in ``context``, if given), as a pool runs it."""
    out, errors = [], []

    def run():
        try:
            out.append(fn(*args) if context is None else context.run(fn, *args))
        except BaseException as exc:  # (re-raised in the calling thread)
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    if errors:
        raise errors[0]
    return out[0]


@pytest.mark.parametrize(
    "transform",
    [
        lambda f, x: grad(f)(x),
        lambda f, x: _pulled_back(*vjp(f, x)),
        lambda f, x: jvp(f, (x,), (x * 0 + 1,))[1],
        lambda f, x: jacrev(f)(x),
        lambda f, x: hessian(f)(x),
    ],
    ids=["grad", "vjp", "jvp", "jacrev", "hessian"],
)
def test_work_done_in_another_thread_is_refused_not_taken_for_no_dependence(arr, transform):
    # the transforms follow the Functions applied in the calling thread (their guard is a
    # context variable); work on the inputs done in a thread the function starts (a pool)
    # was not seen, and the derivative came out as zeros, as for an output that does not
    # depend on the input
    x = arr([1.0, 2.0])

    def elsewhere(v):
        return _in_a_thread(cube, v)

    with pytest.raises(
        RuntimeError,
        match=r"computed from its inputs outside the transform.*another thread.*"
        r"contextvars\.copy_context\(\)",
    ):
        transform(elsewhere, x)

    def in_copied_context(v):  # what the error advises: the thread runs in the caller's context
        return _in_a_thread(cube, v, context=contextvars.copy_context())

    want = as_numpy(transform(cube, x))
    np.testing.assert_allclose(as_numpy(transform(in_copied_context, x)), want)
    assert np.any(want != 0)


@pytest.mark.parametrize(
    "transform",
    [lambda f, x: grad(f)(x), lambda f, x: jvp(f, (x,), (x * 0 + 1,))[1]],
    ids=["grad", "jvp"],
)
def test_a_part_computed_in_another_thread_is_refused_not_left_out(arr, transform):
    # a value made in another thread from the inputs, used by the function's own work,
    # was cut off as a value from outside: its part of the derivative was left out
    x = arr([0.0, 1.0, 2.0])

    def partly_elsewhere(v):
        return F.sum(v) + _in_a_thread(cube, v)

    with pytest.raises(RuntimeError, match=r"computed from the transform's inputs outside"):
        transform(partly_elsewhere, x)
    want = as_numpy(transform(lambda v: F.sum(v) + cube(v), x))
    got = transform(
        lambda v: F.sum(v) + _in_a_thread(cube, v, context=contextvars.copy_context()), x
    )
    np.testing.assert_allclose(as_numpy(got), want)


def test_a_batched_value_used_in_another_thread_is_named_so(arr):
    # vmap batches the Functions applied in the calling thread; in a thread the function
    # started, its batched values met plain Functions, and the error said to use zerograd
    # functions (which that code did) instead of naming the thread
    x = arr([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(
        TypeError,
        match=r"in a thread .*that does not run its vmap.*contextvars\.copy_context\(\)",
    ):
        vmap(lambda v: _in_a_thread(F.sum, v))(x)
    got = vmap(lambda v: _in_a_thread(F.sum, v, context=contextvars.copy_context()))(x)
    np.testing.assert_array_equal(as_numpy(got), [3.0, 7.0])


def _pulled_back(out, vjp_fn):
    return vjp_fn(out * 0 + 1)[0]


# -- bad input: one clear error -------------------------------------------------------------
def test_a_non_scalar_output_names_vjp_and_jacrev(arr):
    with pytest.raises(ValueError, match=r"shape \(2,\).*use vjp.*jacrev"):
        grad(lambda x: x * 2.0)(arr([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"scalar.*shape \(2,\)"):
        hvp(lambda x: x, (arr([1.0, 2.0]),), (arr([1.0, 2.0]),))


@pytest.mark.parametrize(
    "argnums, error, text",
    [
        (2, ValueError, r"argnums 2 is out of range for a call with 2 positional arguments"),
        (-3, ValueError, r"argnums -3 is out of range .*valid: -2\.\.1"),
        ((0, 0), ValueError, r"names one argument twice"),
        ((), ValueError, r"argnums is empty"),
        (1.0, TypeError, r"argnums must be an int or a tuple of ints, got 1.0 \(float\)"),
        (True, TypeError, r"argnums must be an int or a tuple of ints, got True"),
        ("0", TypeError, r"argnums must be an int"),
    ],
)
def test_bad_argnums(arr, argnums, error, text):
    with pytest.raises(error, match=text):
        grad(lambda a, b: F.sum(a * b), argnums=argnums)(arr([1.0]), arr([2.0]))


def test_has_aux_without_a_pair(arr):
    with pytest.raises(TypeError, match=r"has_aux=True.*must return a pair.*got Variable"):
        grad(cube, has_aux=True)(arr([1.0]))
    with pytest.raises(TypeError, match=r"pair .*got a tuple of 3"):
        grad(lambda x: (cube(x), 1, 2), has_aux=True)(arr([1.0]))
    with pytest.raises(TypeError, match=r"vjp\(has_aux=True\).*pair"):
        vjp(lambda x: x, arr([1.0]), has_aux=True)


def test_grad_and_value_errors_name_it(arr):
    with pytest.raises(TypeError) as caught:
        grad_and_value(cube, has_aux=True)(arr([1.0]))
    assert str(caught.value) == (
        "grad_and_value(has_aux=True): the function must return a pair (output, aux), got "
        "Variable; return (output, aux), or leave has_aux False."
    )
    with pytest.raises(ValueError, match=r"^grad_and_value: the function must return a scalar"):
        grad_and_value(lambda x: x * 2.0)(arr([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"^grad_and_value: argnums 1 is out of range"):
        grad_and_value(cube, argnums=1)(arr([1.0]))
    with pytest.raises(TypeError, match=r"^grad_and_value: has_aux must be True or False"):
        grad_and_value(cube, has_aux="yes")


def test_integer_inputs_have_no_gradient(arr):
    with pytest.raises(TypeError, match=r"grad: argument 0 has dtype int64.*floating-point"):
        grad(cube)(np.array([1, 2]))
    with pytest.raises(TypeError, match=r"argument 0\['n'\] has dtype \S*int64"):
        grad(lambda p: F.sum(p["w"]) * 2.0)({"w": arr([1.0]), "n": arr([2], "int64")})
    with pytest.raises(TypeError, match=r"jacrev: argument 0 has dtype int"):
        jacrev(lambda x: x)(3)


def test_not_a_function(arr):
    for transform in (grad, value_and_grad, grad_and_value, jacrev, jacfwd, hessian):
        with pytest.raises(TypeError, match=r"expected a function to transform, got int"):
            transform(3)


def test_vjp_refuses_a_cotangent_of_another_shape_or_structure(arr):
    out, vjp_fn = vjp(lambda x: x * 2.0, arr([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"cotangent .* has shape \(3,\).*\(2,\)"):
        vjp_fn(arr([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match=r"structure"):
        vjp_fn((arr([1.0, 2.0]), arr([1.0, 2.0])))


def test_jvp_refuses_bad_primals_and_tangents(arr):
    x = arr([1.0, 2.0])
    with pytest.raises(TypeError, match=r"primals must be a tuple.*jvp\(f, \(x,\), \(t,\)\)"):
        jvp(cube, x, (x,))
    with pytest.raises(ValueError, match=r"1 primals but 2 tangents"):
        jvp(cube, (x,), (x, x))
    with pytest.raises(ValueError, match=r"tangent for .* has shape \(3,\).*\(2,\)"):
        jvp(cube, (x,), (arr([1.0, 2.0, 3.0]),))


def test_hvp_refuses_bad_primals_and_tangents(arr):
    x = arr([1.0, 2.0])
    with pytest.raises(TypeError, match=r"^hvp: tangents must be a tuple of the function's "):
        hvp(cube, (x,), x)
    with pytest.raises(TypeError, match=r"got \w+; write hvp\(f, \(x,\), \(v,\)\)\.$"):
        hvp(cube, x, (x,))
    with pytest.raises(ValueError, match=r"^hvp: 2 primals but 1 tangents; give one per primal\.$"):
        hvp(cube, (x, x), (x,))


BACKWARD_INSIDE = (
    r"^backward\(\) inside a function given to a zerograd.func transform .*: the transform "
    r"differentiates .* constants there, .*no variable its gradient.*zerograd.func.grad "
    r"nests.*or call backward\(\) outside the transform\.$"
)


def test_backward_inside_a_transformed_function_is_refused_and_changes_nothing(arr):
    """A gradient penalty written with the engine inside a transform: the walk could reach
    no variable (the argument's stand-in is no leaf, captured Variables are constants), so
    ``x.grad`` was None (a TypeError about NoneType), and with ``retain_grad=True`` the
    transform's result was silently wrong. PyTorch's torch.func refuses it too."""
    w = Variable(arr([1.5, -0.5]))
    w.grad = Variable(arr([5.0, 5.0]))
    held = w.grad
    x0 = np.array([0.3, -0.8])

    def penalty(x, retain=False):
        F.sum(F.sin(x) * x * w).backward(create_graph=True, retain_grad=retain)
        return F.sum(x.grad * x.grad)

    def fresh(x):  # a walk over Variables of the function's own
        v = Variable(arr([1.0, 2.0]))
        F.sum(v * v).backward()
        return F.sum(x * x)

    x = arr(x0)
    for f in (penalty, lambda x: penalty(x, retain=True), fresh):
        for transform in (grad, jacrev, jacfwd, hessian):
            with pytest.raises(RuntimeError, match=BACKWARD_INSIDE):
                transform(f)(x)
        with pytest.raises(RuntimeError, match=BACKWARD_INSIDE):
            vjp(f, x)
        with pytest.raises(RuntimeError, match=BACKWARD_INSIDE):
            jvp(f, (x,), (x,))
        with pytest.raises(RuntimeError, match=BACKWARD_INSIDE):
            hvp(f, (x,), (x,))
    # under a vmap inside the transform too
    with pytest.raises(RuntimeError, match=BACKWARD_INSIDE):
        grad(lambda x: F.sum(vmap(fresh)(x)))(arr([[0.3], [0.5]]))
    assert w.grad is held
    np.testing.assert_array_equal(as_numpy(w.grad), [5.0, 5.0])
    # what the error advises: the nested transform, or the engine outside any transform
    wd = as_numpy(w.data)
    g = wd * (np.sin(x0) + x0 * np.cos(x0))
    want = 2 * g * wd * (2 * np.cos(x0) - x0 * np.sin(x0))
    inner = grad(lambda v: F.sum(F.sin(v) * v * w))
    np.testing.assert_allclose(as_numpy(grad(lambda x: F.sum(inner(x) ** 2))(x)), want)
    xv = Variable(arr(x0))
    out = penalty(xv)
    xv.cleargrad()
    out.backward()
    np.testing.assert_allclose(as_numpy(xv.grad), want)


def test_argnums_are_checked_after_the_function(arr):
    for transform in (grad, value_and_grad, grad_and_value, jacrev, jacfwd, hessian):
        with pytest.raises(TypeError, match=r"expected a function to transform, got int"):
            transform(3, argnums="0")
        with pytest.raises(ValueError, match=rf"^{transform.__name__}: argnums is empty"):
            transform(cube, argnums=())


def test_a_user_function_without_batching_rule_still_differentiates(arr):
    """Transforms run any Function; its own backward gives the derivative."""

    class Cube(Function):
        def forward(self, x):
            return x**3

        def backward(self, gy):
            (x,) = self.inputs
            return 3 * x * x * gy

    h = hessian(lambda x: F.sum(Cube()(x)))(arr([1.0, 2.0]))
    np.testing.assert_allclose(as_numpy(h), np.diag([6.0, 12.0]))


@pytest.mark.parametrize(
    "module",
    ["", ".gradient", ".products", ".jacobians", ".vectorize", ".rules.registry"],
)
def test_the_docstring_examples_run(module):
    """The examples in zerograd.func's docstrings print what they show."""
    mod = importlib.import_module("zerograd.func" + module)
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted and not result.failed


def test_a_static_graph_step_with_transforms_gives_their_values():
    """static_graph records a step that calls vmap(grad), and its replays give the eager
    values. A step calling hessian gives them too, eagerly: the Hessian's batched walk
    leaves gradients on graph leaves, which a replay does not reproduce, so static_graph
    runs it eagerly with its warning, which names that cause (it guessed at an input's
    .data replaced between forward and backward)."""

    @static_graph
    def per_sample(x, w):
        return vmap(grad(lambda v, w: F.sum(F.tanh(v * w) ** 2)), in_axes=(0, None))(x, w)

    @static_graph
    def curvature(x0, w):
        return hessian(lambda v: F.sum(v**3 * w))(x0)

    rng = np.random.default_rng(0)
    w = rng.random(2)
    with pytest.warns(StaticGraphWarning, match=r"a zerograd.func transform that differ"):
        for _ in range(3):  # recorded, recorded again, then told
            curvature(rng.random(2), w)
    for _ in range(5):
        x = rng.random((3, 2))
        t = np.tanh(x * w)
        np.testing.assert_allclose(as_numpy(per_sample(x, w)), 2 * t * (1 - t**2) * w)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StaticGraphWarning)
            h = curvature(x[0].copy(), w)
        np.testing.assert_allclose(as_numpy(h), np.diag(6 * x[0] * w))
    assert per_sample.counts["replayed"] >= 1


def test_walks_over_one_graph_after_batched_walks(arr):
    """A constant operand of a unary function is a leaf the walks reach: a batched walk
    (vmap over vjp_fn) leaves its gradient there, and later walks over the same graph,
    batched or not, still give the right values."""
    c = arr([0.5, -1.0])

    def f(x):
        k = F.exp(c)  # exp of a raw array: a Constant leaf that walks reach
        return x * k, F.sin(x) * k

    x = arr([0.3, 0.7])
    a, b = jacrev(f)(x)
    k = np.exp([0.5, -1.0])
    np.testing.assert_allclose(as_numpy(a), np.diag(k))
    np.testing.assert_allclose(as_numpy(b), np.diag(np.cos([0.3, 0.7]) * k))
    out, vjp_fn = vjp(f, x)
    eye = arr(np.eye(2))
    for _ in range(2):
        rows = vmap(lambda ct: vjp_fn((ct, ct)))(eye)[0]
        np.testing.assert_allclose(as_numpy(rows), np.diag(k + np.cos([0.3, 0.7]) * k))
    (g,) = vjp_fn((arr([1.0, 1.0]), arr([0.0, 0.0])))
    np.testing.assert_allclose(as_numpy(g), k)


_X = np.array([1.0, 2.0])
_CALLS = {
    "grad": lambda f: grad(f)(_X),
    "value_and_grad": lambda f: value_and_grad(f)(_X),
    "hvp": lambda f: hvp(f, (_X,), (_X,)),
    "vjp": lambda f: vjp(f, _X),
    "jvp": lambda f: jvp(f, (_X,), (_X,)),
    "jacrev": lambda f: jacrev(f)(_X),
    "jacfwd": lambda f: jacfwd(f)(_X),
    "vmap": lambda f: vmap(f)(np.ones((3, 2))),
}


@pytest.mark.parametrize("op", list(_CALLS))
def test_a_function_returning_none_is_refused_by_name(op):
    """grad, value_and_grad, jacrev, hessian and hvp gave zeros for a function with a
    missing return; jvp, jacfwd and vmap failed with an error naming no transform."""

    def forgot_return(x):
        F.sum(x * x)

    with pytest.raises(TypeError, match=rf"^{op}: the function.*None.* \(a missing return\?\)"):
        _CALLS[op](forgot_return)


@pytest.mark.parametrize("op", ["vjp", "jvp", "jacrev", "jacfwd", "vmap"])
def test_an_output_leaf_that_is_not_numeric_is_named_by_its_place(op):
    with pytest.raises(
        TypeError,
        match=rf"^{op}: the function's output \[1\] is str 'loss', not a Variable, an array or "
        r"a number\.$",
    ):
        _CALLS[op](lambda x: (x * 2, "loss"))


def test_grad_of_a_tuple_without_has_aux_says_to_use_it():
    with pytest.raises(
        TypeError,
        match=r"^grad: the function must return a scalar \(a Variable, an array or a number\), "
        r"got tuple; return the output alone, or \(output, aux\) with has_aux=True\.$",
    ):
        grad(lambda x: (F.sum(x), {"n": 1}))(_X)
    g, aux = grad(lambda x: (F.sum(x), {"n": 1}), has_aux=True)(_X)
    np.testing.assert_array_equal(g, [1.0, 1.0])
    assert aux == {"n": 1}
    np.testing.assert_array_equal(grad(lambda x: 3.0)(_X), [0.0, 0.0])  # a constant: zeros


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
@pytest.mark.parametrize("op", ["jvp", "hvp"])
def test_integer_or_bool_tangents_are_one_type_error_before_anything_runs(op, dtype, arr):
    """A tangent is a direction in the primal's (floating-point) space: torch.func.jvp refuses
    an integer or bool one, and jax.jvp wants float0 there. jvp and hvp took it (the integer
    direction silently promoted); the function is not called."""
    calls = []

    def f(x):
        calls.append(1)
        return F.sum(x**3)

    x = Variable(arr([1.0, 2.0]))
    t = arr([1, 0], dtype)
    transform = jvp if op == "jvp" else hvp
    with pytest.raises(TypeError) as caught:
        transform(f, (x,), (t,))
    assert str(caught.value) == (
        f"{op}: the tangent for argument 0 has dtype {t.dtype}; a tangent must be floating "
        f"point, as its primal is (torch.func.jvp and jax.jvp refuse it too). Convert it "
        f"first: t.astype(x.dtype)."
    )
    assert calls == [] and x.grad is None and x.creator is None
    with pytest.raises(TypeError, match=r"^jvp: the tangent for argument 1\['b'\] has dtype "):
        jvp(lambda a, d: a * d["b"], (x, {"b": x}), (x, {"b": arr([1, 0], "bool")}))
    # a floating tangent goes through, and so does None (no direction) beside one
    assert np.allclose(as_numpy(jvp(lambda a: a * 2.0, (x,), (arr([1.0, 0.0]),))[1]), [2.0, 0.0])


@pytest.mark.parametrize("ct_dtype", ["float64", "int64", "bool"])
def test_a_cotangent_is_cast_to_its_outputs_dtype(ct_dtype, arr):
    """vjp of a float32 output with a float64 cotangent (np.ones' default) gave float64
    gradients; torch.func.vjp casts the cotangent to the output's dtype (autograd's
    validate_outputs), so a float32 function keeps float32 gradients. Under vmap over
    vjp_fn (jacrev's way) too."""
    x = arr([1.0, 2.0, 3.0], "float32")
    out, vjp_fn = vjp(lambda v: v * v, x)
    ct = arr([1, 0, 1], ct_dtype)
    (g,) = vjp_fn(ct)
    assert as_numpy(g).dtype == np.float32
    np.testing.assert_allclose(as_numpy(g), 2 * np.array([1.0, 2.0, 3.0]) * [1, 0, 1])
    rows = vmap(vjp_fn)(arr([[1, 0, 0], [0, 1, 1]], ct_dtype))[0]
    assert as_numpy(rows).dtype == np.float32
    np.testing.assert_allclose(as_numpy(rows), [[2.0, 0.0, 0.0], [0.0, 4.0, 6.0]])


def test_a_cotangent_variable_with_a_graph_is_used_as_given(arr):
    """A Variable cotangent stays connected to its graph (its gradient flows back to it),
    so it is not cast: the walk computes with it, promoting as numpy does."""
    x = Variable(arr([1.0, 2.0], "float32"))
    c = Variable(arr([1.0, 1.0]))
    _, vjp_fn = vjp(lambda v: v * v, x)
    (g,) = vjp_fn(c)
    assert as_numpy(g.data).dtype == np.float64
    F.sum(g).backward()
    np.testing.assert_allclose(as_numpy(c.grad.data), [2.0, 4.0])
    np.testing.assert_allclose(as_numpy(x.grad.data), [2.0, 2.0])


def test_tangent_and_seed_dtypes_follow_numpy_promotion(arr):
    """Documented, unchanged: jvp of a float32 primal with a float64 tangent gives float64
    tangents (torch.func.jvp does the same; jax.jvp refuses the mismatch), and y.backward()
    with a y.grad of float64 set on a float32 y gives float64 gradients (DeZero's code
    walks the given gradient)."""
    x = arr([1.0, 2.0], "float32")
    out, t = jvp(lambda v: v * v, (x,), (arr([1.0, 1.0]),))
    assert as_numpy(out).dtype == np.float32 and as_numpy(t).dtype == np.float64
    np.testing.assert_allclose(as_numpy(t), [2.0, 4.0])
    v = Variable(x)
    y = v * v
    y.grad = Variable(arr([1.0, 1.0]))
    y.backward()
    assert as_numpy(v.grad.data).dtype == np.float64


@pytest.mark.parametrize("op", ["vjp", "jvp", "hvp", "grad"])
def test_an_integer_primal_is_told_what_the_transform_takes(op, arr):
    """vjp, jvp and hvp have no argnums, yet an integer primal was told to "leave it out of
    argnums"; they now say to pass it through a closure (grad still names argnums)."""
    n = arr([1, 2], "int64")
    with pytest.raises(TypeError) as caught:
        if op == "vjp":
            vjp(lambda v: v * 2.0, n)
        elif op == "jvp":
            jvp(lambda v: v * 2.0, (n,), (arr([1.0, 1.0]),))
        elif op == "hvp":
            hvp(lambda v: F.sum(v * 2.0), (n,), (arr([1.0, 1.0]),))
        else:
            grad(lambda v: F.sum(v * 2.0))(n)
    start = f"{op}: argument 0 has dtype {n.dtype}; only floating-point inputs have gradients. "
    end = (
        "Convert it first (x.astype('float64')), or leave it out of argnums."
        if op == "grad"
        else "Convert it first (x.astype('float64')), or give it to the function through a "
        "closure rather than as a primal."
    )
    assert str(caught.value) == start + end
