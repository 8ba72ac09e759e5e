"""The transforms against PyTorch's torch.func, on every case of func_cases, in float64.

Skipped, with the reason printed, where PyTorch is not installed (the `tests` sessions,
where test_func_cases checks the same transforms against numerical derivatives); the
`torch_example` session installs PyTorch and runs this file.
"""

from __future__ import annotations

import numpy as np
import pytest
from func_cases import CASES, inputs, weights

import zerograd.functions as F
from zerograd.backends import as_numpy
from zerograd.func import grad, hessian, jacfwd, jacrev, jvp, vjp, vmap

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
