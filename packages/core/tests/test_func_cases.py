"""Every transform on every case of func_cases, against numerical derivatives and loops.

First order (grad, jacrev, jacfwd, vjp, jvp) against central differences; second order
(grad of grad, hessian, hvp) against central differences of the engine's own gradient
(``Variable.backward``, no transform); vmap against a Python loop of the function, and
vmap(grad) against a loop of grad. float64 throughout; PyTorch's values in test_func_torch.
"""

from __future__ import annotations

import numpy as np
import pytest
from func_cases import CASES, engine_grad, inputs, num_jacobian, weights

import zerograd.functions as F
from zerograd import Variable
from zerograd.backends import as_array_of, as_numpy, backend_of
from zerograd.func import grad, hessian, hvp, jacfwd, jacrev, jvp, vjp, vmap

NAMES = sorted(CASES)


def _close(got, want, rtol=1e-5, atol=1e-7):
    np.testing.assert_allclose(as_numpy(got), want, rtol=rtol, atol=atol)


def _scalar(name, backend):
    """The case contracted with fixed weights: a scalar function of its inputs."""
    f, _, _, _ = CASES[name]
    xs = inputs(name, backend)
    w = weights(np.shape(as_numpy(call(f, *xs))), backend)
    return (lambda *vs: F.sum(f(*vs) * w)), xs


@pytest.mark.parametrize("name", NAMES)
def test_grad_matches_central_differences(name, backend):
    """grad with respect to every input equals the numerical gradient."""
    s, xs = _scalar(name, backend)
    got = grad(s, argnums=tuple(range(len(xs))))(*xs)
    for i, g in enumerate(got):
        _close(g, num_jacobian(s, xs, i))


@pytest.mark.parametrize("name", NAMES)
def test_grad_of_grad_matches_central_differences_of_the_engine_gradient(name, backend):
    """Second order: grad of (grad . w2) equals the numerical derivative of the same
    contraction of the engine's own first-order gradient."""
    s, xs = _scalar(name, backend)
    w2 = weights(np.shape(as_numpy(xs[0])), backend, seed=5)

    def first(*vs):
        return F.sum(grad(s)(*vs) * w2)

    def reference(*vs):
        return F.sum(F.mul(_engine_grad(s, [v.data for v in vs], 0), w2))

    got = grad(first, argnums=tuple(range(len(xs))))(*xs)
    for i, g in enumerate(got):
        _close(g, num_jacobian(reference, xs, i), rtol=1e-4, atol=1e-6)


def _engine_grad(s, xs, i):
    """The engine's d s / d xs[i] (``Variable.backward``) as an array of the inputs' backend."""
    return as_array_of(engine_grad(s, xs, i), backend_of(xs[0]))


@pytest.mark.parametrize("name", NAMES)
def test_hessian_matches_central_differences_of_the_engine_gradient(name, backend):
    """hessian = the Jacobian of the engine's gradient, computed numerically."""
    s, xs = _scalar(name, backend)
    rest = xs[1:]
    h = hessian(lambda x, *r: s(x, *r))(*xs)

    def g(x):
        return F.reshape(_engine_grad(s, [x.data, *rest], 0), x.shape)

    _close(h, num_jacobian(g, [xs[0]], 0), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_jacrev_and_jacfwd_match_central_differences(name, backend):
    """Both Jacobians, for every input, equal the numerical Jacobian (and each other)."""
    f, _, _, _ = CASES[name]
    xs = inputs(name, backend)
    nums = tuple(range(len(xs)))
    rev = jacrev(f, argnums=nums)(*xs)
    fwd = jacfwd(f, argnums=nums)(*xs)
    for i in nums:
        want = num_jacobian(f, xs, i)
        _close(rev[i], want)
        _close(fwd[i], want)


@pytest.mark.parametrize("name", NAMES)
def test_vjp_and_jvp_are_the_jacobian_contracted(name, backend):
    """vjp(ct) = ct . J and jvp(t) = J . t, with J numerical, for the first input."""
    f, _, _, _ = CASES[name]
    xs = inputs(name, backend)
    rest = xs[1:]
    J = num_jacobian(f, xs, 0)
    out_shape = J.shape[: J.ndim - np.ndim(as_numpy(xs[0]))]
    ct = weights(out_shape, backend, seed=2)
    t = weights(np.shape(as_numpy(xs[0])), backend, seed=3)
    g = lambda x: f(x, *rest)  # noqa: E731
    out, vjp_fn = vjp(g, xs[0])
    _close(out, as_numpy(call(f, *xs)))
    k = np.ndim(as_numpy(xs[0]))
    axes = list(range(len(out_shape)))
    _close(vjp_fn(ct)[0], np.tensordot(as_numpy(ct), J, axes=(axes, axes)))
    out2, tangent = jvp(g, (xs[0],), (t,))
    _close(tangent, np.tensordot(J, as_numpy(t), axes=k) if k else J * as_numpy(t))


@pytest.mark.parametrize("name", NAMES)
def test_hvp_is_the_hessian_times_the_tangent(name, backend):
    """hvp gives the gradient and H t, with H from hessian (checked numerically above)."""
    s, xs = _scalar(name, backend)
    rest = xs[1:]
    one = lambda x: s(x, *rest)  # noqa: E731
    t = weights(np.shape(as_numpy(xs[0])), backend, seed=4)
    (g,), (hv,) = hvp(one, (xs[0],), (t,))
    H = as_numpy(hessian(one)(xs[0]))
    k = np.ndim(as_numpy(xs[0]))
    _close(g, as_numpy(grad(one)(xs[0])))
    _close(hv, np.tensordot(H, as_numpy(t), axes=k) if k else H * as_numpy(t))


@pytest.mark.parametrize("name", NAMES)
def test_vmap_equals_a_loop_over_the_samples(name, backend):
    """vmap over the first input (others broadcast), and over all of them, equals a loop."""
    f, _, _, _ = CASES[name]
    batch = inputs(name, backend, batch=3)
    xs = inputs(name, backend)
    rest = xs[1:]
    got = vmap(f, in_axes=(0, *[None] * len(rest)))(batch[0], *rest)
    want = np.stack([as_numpy(call(f, b, *rest)) for b in _samples(batch[0])])
    _close(got, want, rtol=1e-12, atol=1e-12)
    got = vmap(f)(*batch)
    want = np.stack([as_numpy(call(f, *s)) for s in zip(*[_samples(b) for b in batch])])
    _close(got, want, rtol=1e-12, atol=1e-12)


def _samples(a):
    return [a[i, ...] for i in range(a.shape[0])]


def call(f, *xs):
    """``f`` of the arrays ``xs`` as Variables (what the transforms give it)."""
    return f(*[Variable(x) for x in xs])


@pytest.mark.parametrize("name", NAMES)
def test_vmap_of_grad_gives_each_samples_gradient(name, backend):
    """vmap(grad(s)) equals grad(s) sample by sample, for every input at once."""
    f, _, _, _ = CASES[name]
    s, xs = _scalar(name, backend)
    batch = inputs(name, backend, batch=3)
    nums = tuple(range(len(xs)))
    got = vmap(grad(s, argnums=nums))(*batch)
    per = [grad(s, argnums=nums)(*sample) for sample in zip(*[_samples(b) for b in batch])]
    for i in nums:
        _close(got[i], np.stack([as_numpy(p[i]) for p in per]), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_vmap_of_jacrev_gives_each_samples_jacobian(name, backend):
    """vmap composes with jacrev (a vmap inside a vmap) and with out_axes."""
    f, _, _, _ = CASES[name]
    xs = inputs(name, backend)
    rest = xs[1:]
    batch = inputs(name, backend, batch=2)[0]
    got = vmap(jacrev(f), in_axes=(0, *[None] * len(rest)), out_axes=-1)(batch, *rest)
    want = np.stack([as_numpy(jacrev(f)(b, *rest)) for b in _samples(batch)], axis=-1)
    _close(got, want, rtol=1e-10, atol=1e-12)
