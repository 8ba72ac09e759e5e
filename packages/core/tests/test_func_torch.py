"""The transforms against PyTorch's torch.func, on every case of func_cases, in float64.

Skipped, with the reason printed, where PyTorch is not installed (the `tests` sessions,
where test_func_cases checks the same transforms against numerical derivatives); the
`torch_example` session installs PyTorch and runs this file.
"""

from __future__ import annotations

import numpy as np
import pytest
from func_cases import CASES, inputs, values, weights

import zerograd.functions as F
from zerograd import Variable
from zerograd.backends import as_array_of, as_numpy
from zerograd.func import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp, vmap

torch = pytest.importorskip("torch", reason="PyTorch is not installed: pip install torch==2.13.0")
tf = pytest.importorskip("torch.func", reason="torch.func is missing from this PyTorch")

NAMES = sorted(CASES)


def _t(a):
    return torch.as_tensor(np.asarray(as_numpy(a), dtype=np.float64))


def _close(got, want, rtol=1e-9, atol=1e-11):
    want = want.detach().numpy() if hasattr(want, "detach") else np.asarray(want)
    np.testing.assert_allclose(as_numpy(got), want, rtol=rtol, atol=atol)


def _pair(name, backend):
    f, twin, _, _ = CASES[name]
    xs = inputs(name, backend)
    w = weights(np.shape(as_numpy(f(*xs))), backend)
    tw = _t(w)
    return (
        (lambda *vs: F.sum(f(*vs) * w)),
        (lambda *ts: (twin(torch, *ts) * tw).sum()),
        xs,
        [_t(x) for x in xs],
    )


@pytest.mark.parametrize("name", NAMES)
def test_grad_and_second_order_match_torch_func(name, backend):
    s, ts, xs, txs = _pair(name, backend)
    nums = tuple(range(len(xs)))
    for got, want in zip(grad(s, argnums=nums)(*xs), tf.grad(ts, argnums=nums)(*txs)):
        _close(got, want)
    _close(hessian(s)(*xs), tf.hessian(ts)(*txs), rtol=1e-8, atol=1e-10)
    w2 = weights(np.shape(as_numpy(xs[0])), backend, seed=5)
    tw2 = _t(w2)
    gg = grad(lambda *v: F.sum(grad(s)(*v) * w2), argnums=nums)(*xs)
    tgg = tf.grad(lambda *v: (tf.grad(ts)(*v) * tw2).sum(), argnums=nums)(*txs)
    for got, want in zip(gg, tgg):
        _close(got, want, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", NAMES)
def test_jacobians_vjp_and_jvp_match_torch_func(name, backend):
    f, twin, _, _ = CASES[name]
    xs = inputs(name, backend)
    txs = [_t(x) for x in xs]
    tg = lambda *ts: twin(torch, *ts)  # noqa: E731
    nums = tuple(range(len(xs)))
    for got, want in zip(jacrev(f, argnums=nums)(*xs), tf.jacrev(tg, argnums=nums)(*txs)):
        _close(got, want)
    for got, want in zip(jacfwd(f, argnums=nums)(*xs), tf.jacfwd(tg, argnums=nums)(*txs)):
        _close(got, want)
    out, fn = vjp(f, *xs)
    tout, tfn = tf.vjp(tg, *txs)
    ct = weights(np.shape(as_numpy(out)), backend, seed=8)
    _close(out, tout)
    for got, want in zip(fn(ct), tfn(_t(ct))):
        _close(got, want)
    ts = [weights(np.shape(as_numpy(x)), backend, seed=9 + i) for i, x in enumerate(xs)]
    _, tangent = jvp(f, tuple(xs), tuple(ts))
    _, ttangent = tf.jvp(tg, tuple(txs), tuple(_t(t) for t in ts))
    _close(tangent, ttangent)


@pytest.mark.parametrize("name", NAMES)
def test_vmap_and_per_sample_gradients_match_torch_func(name, backend):
    f, twin, _, _ = CASES[name]
    s, ts, xs, txs = _pair(name, backend)
    batch = inputs(name, backend, batch=3)
    tbatch = [_t(b) for b in batch]
    _close(vmap(f)(*batch), tf.vmap(lambda *t: twin(torch, *t))(*tbatch))
    nums = tuple(range(len(xs)))
    got = vmap(grad(s, argnums=nums))(*batch)
    want = tf.vmap(tf.grad(ts, argnums=nums))(*tbatch)
    for g, w in zip(got, want):
        _close(g, w)


def _same_structure(got, want):
    """``got`` (zerograd's) has ``want``'s (torch's) nesting, and its leaves' values."""
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            _same_structure(g, w)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want)
        for k in want:
            _same_structure(got[k], want[k])
    else:
        _close(got, want)


@pytest.mark.parametrize("name", NAMES)
def test_grad_and_value_matches_torch_func(name, backend):
    """The values and the return structure, with has_aux False and True, argnums an int
    and a tuple."""
    f, twin, _, _ = CASES[name]
    s, ts, xs, txs = _pair(name, backend)
    nums = tuple(range(len(xs)))
    _same_structure(grad_and_value(s)(*xs), tf.grad_and_value(ts)(*txs))
    _same_structure(grad_and_value(s, argnums=nums)(*xs), tf.grad_and_value(ts, argnums=nums)(*txs))
    aux = lambda *v: (s(*v), {"out": f(*v), "half": v[0] * 0.5})  # noqa: E731
    taux = lambda *t: (ts(*t), {"out": twin(torch, *t), "half": t[0] * 0.5})  # noqa: E731
    _same_structure(
        grad_and_value(aux, argnums=nums[-1], has_aux=True)(*xs),
        tf.grad_and_value(taux, argnums=nums[-1], has_aux=True)(*txs),
    )
    _same_structure(
        grad_and_value(aux, argnums=nums, has_aux=True)(*xs),
        tf.grad_and_value(taux, argnums=nums, has_aux=True)(*txs),
    )


@pytest.mark.parametrize("chunk_size", [None, 2])
@pytest.mark.parametrize("name", NAMES)
def test_vmap_in_dims_out_dims_and_chunk_size_match_torch_func(name, chunk_size, backend):
    """torch.func's spellings: the batch on the last axis of every argument, moved to the
    last axis of the output, run two samples at a time."""
    f, twin, _, _ = CASES[name]
    batch = inputs(name, backend, batch=5)
    moved = [as_array_of(np.moveaxis(as_numpy(b), 0, -1).copy(), backend) for b in batch]
    got = vmap(f, in_dims=-1, out_dims=-1, chunk_size=chunk_size)(*moved)
    want = tf.vmap(lambda *t: twin(torch, *t), in_dims=-1, out_dims=-1, chunk_size=chunk_size)(
        *[_t(m) for m in moved]
    )
    _close(got, want)
    first_last = (0,) + (None,) * (len(batch) - 1)
    args = [batch[0], *(as_array_of(as_numpy(b)[0], backend) for b in batch[1:])]
    got = vmap(f, in_dims=first_last, chunk_size=chunk_size)(*args)
    want = tf.vmap(lambda *t: twin(torch, *t), in_dims=first_last, chunk_size=chunk_size)(
        *[_t(a) for a in args]
    )
    _close(got, want)


THIRD = {  # elementwise functions and their twins, with the domain of their inputs
    "tanh": (F.tanh, lambda T, x: T.tanh(x), "any"),
    "sin": (F.sin, lambda T, x: T.sin(x), "any"),
    "exp": (F.exp, lambda T, x: T.exp(x), "any"),
    "log": (F.log, lambda T, x: T.log(x), "pos"),
    "sqrt": (F.sqrt, lambda T, x: T.sqrt(x), "pos"),
    "pow_const": (lambda x: x**3.5, lambda T, x: x**3.5, "pos"),
    "pow_var": (lambda x: x ** (x + 0.25), lambda T, x: x ** (x + 0.25), "pos"),
    "rpow": (lambda x: 3.0**x, lambda T, x: 3.0**x, "any"),
    "div": (lambda x: 1.0 / x, lambda T, x: 1.0 / x, "pos"),
}


@pytest.mark.parametrize("name", sorted(THIRD))
def test_third_derivatives_by_backward_match_torchs_triple_backward(name, backend):
    """``backward(create_graph=True)`` three times, each gradient contracted with its own
    weights, against ``torch.autograd.grad(..., create_graph=True)`` three times."""
    f, twin, domain = THIRD[name]
    x0 = values((5,), domain, seed=3)
    ws = [weights((5,), backend, seed=s) for s in (1, 2, 3)]
    x = Variable(as_array_of(x0, backend))
    out = F.sum(f(x) * ws[0])
    for w in ws[1:]:
        out.backward(create_graph=True)
        g = x.grad
        assert g.creator is not None, "a gradient recorded with create_graph has a graph"
        x.cleargrad()
        out = F.sum(g * w)
    out.backward()
    t = torch.tensor(x0, requires_grad=True)
    tout = (twin(torch, t) * _t(ws[0])).sum()
    for w in ws[1:]:
        (tg,) = torch.autograd.grad(tout, t, create_graph=True)
        tout = (tg * _t(w)).sum()
    (want,) = torch.autograd.grad(tout, t)
    _close(x.grad, want, rtol=1e-8, atol=1e-10)
