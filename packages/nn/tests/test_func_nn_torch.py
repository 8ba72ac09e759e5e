"""zerograd.func on zerograd-nn against PyTorch's torch.func, in float64.

Skipped, with the reason printed, where PyTorch is not installed (the default test
sessions); test_func_nn checks the same against numerical derivatives and loops.
"""

from __future__ import annotations

import numpy as np
import pytest
from func_nn_cases import CASES, call, inputs, values

import zerograd_nn.functional as F
from zerograd import Variable
from zerograd.backends import as_array_of, as_numpy
from zerograd.func import functional_call, grad, hessian, jacrev, vmap
from zerograd_nn.models import MLP

torch = pytest.importorskip("torch", reason="PyTorch is not installed: pip install torch==2.13.0")
tf = pytest.importorskip("torch.func", reason="torch.func is missing from this PyTorch")

NAMES = sorted(CASES)


def _t(a):
    return torch.as_tensor(np.asarray(as_numpy(a), dtype=np.float64))


def _close(got, want, rtol=1e-9, atol=1e-11):
    np.testing.assert_allclose(as_numpy(got), want.detach().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", NAMES)
def test_grad_jacrev_hessian_and_per_sample_grads_match_torch_func(name, backend):
    f, twin, _ = CASES[name]
    xs = inputs(name, backend)
    txs = [_t(x) for x in xs]
    w = as_array_of(
        np.random.default_rng(3).standard_normal(np.shape(as_numpy(call(f, *xs)))), backend
    )
    tw = _t(w)
    s = lambda *vs: F.sum(f(*vs) * w)  # noqa: E731
    ts = lambda *v: (twin(torch, *v) * tw).sum()  # noqa: E731
    nums = tuple(range(len(xs)))
    for got, want in zip(grad(s, argnums=nums)(*xs), tf.grad(ts, argnums=nums)(*txs)):
        _close(got, want)
    _close(jacrev(f)(*xs), tf.jacrev(lambda *v: twin(torch, *v))(*txs))
    rest, trest = xs[1:], txs[1:]
    _close(
        hessian(lambda x: s(x, *rest))(xs[0]),
        tf.hessian(lambda x: ts(x, *trest))(txs[0]),
        rtol=1e-8,
        atol=1e-10,
    )
    batch = inputs(name, backend, batch=3)[0]
    got = vmap(grad(s), in_axes=(0, *[None] * len(rest)))(batch, *rest)
    want = tf.vmap(tf.grad(ts), in_dims=(0, *[None] * len(trest)))(_t(batch), *trest)
    _close(got, want)


def _torch_mlp(T, params, x):
    h = x
    keys = sorted({k.split(".")[0] for k in params})
    for i, k in enumerate(keys):
        h = h @ params[f"{k}.W"] + params[f"{k}.b"]
        if i < len(keys) - 1:
            h = T.sigmoid(h)
    return h


def test_per_sample_gradients_of_an_mlp_match_torch_func(backend):
    np.random.seed(0)
    model = MLP((6, 3))
    x = as_array_of(values((8, 5), 1), backend)
    t = np.array([0, 2, 1, 1, 0, 2, 2, 1])
    model(x)
    params = {k: p.data for k, p in model.named_params().items()}

    def loss(p, xi, ti):
        return F.softmax_cross_entropy(functional_call(model, p, xi[None]), ti[None])

    def tloss(p, xi, ti):
        y = _torch_mlp(torch, p, xi[None])
        return torch.nn.functional.cross_entropy(y, ti[None])

    got = vmap(grad(loss), in_axes=(None, 0, 0))(params, x, as_array_of(t, backend))
    tparams = {k: _t(v) for k, v in params.items()}
    want = tf.vmap(tf.grad(tloss), in_dims=(None, 0, 0))(tparams, _t(x), torch.as_tensor(t))
    for k in params:
        _close(got[k], want[k])


def test_per_sample_gradients_of_a_cnn_match_torch_func(backend):
    rng = np.random.default_rng(1)
    p = {
        "W1": rng.standard_normal((4, 1, 3, 3)) * 0.5,
        "b1": rng.standard_normal(4) * 0.1,
        "W2": rng.standard_normal((4 * 2 * 2, 3)) * 0.5,
        "b2": rng.standard_normal(3) * 0.1,
    }
    params = {k: as_array_of(v, backend) for k, v in p.items()}
    x = as_array_of(values((6, 1, 4, 4), 2), backend)
    t = np.array([0, 2, 1, 1, 0, 2])

    def loss(p, xi, ti):
        h = F.relu(F.conv2d(xi[None], p["W1"], p["b1"], pad=1))
        h = F.reshape(F.pooling(h, 2, 2), (1, -1))
        return F.softmax_cross_entropy(F.linear(h, p["W2"], p["b2"]), ti[None])

    def tloss(p, xi, ti):
        nf = torch.nn.functional
        h = nf.relu(nf.conv2d(xi[None], p["W1"], p["b1"], padding=1))
        h = nf.max_pool2d(h, 2, 2).reshape(1, -1)
        return nf.cross_entropy(h @ p["W2"] + p["b2"], ti[None])

    got = vmap(grad(loss), in_axes=(None, 0, 0))(params, x, as_array_of(t, backend))
    want = tf.vmap(tf.grad(tloss), in_dims=(None, 0, 0))(
        {k: _t(v) for k, v in params.items()}, _t(x), torch.as_tensor(t)
    )
    for k in params:
        _close(got[k], want[k])


@pytest.mark.parametrize("name", NAMES)
def test_mixed_second_derivatives_by_backward_match_torchs_double_backward(name, backend):
    """``backward(create_graph=True)``, then the backward of every first derivative
    contracted with its own weights: each input's row of the Hessian times those weights,
    the mixed derivatives (d/dW of d/dx) included, against torch.autograd.grad twice."""
    f, twin, _ = CASES[name]
    xs = inputs(name, backend)
    rng = np.random.default_rng(4)
    w = as_array_of(rng.standard_normal(np.shape(as_numpy(call(f, *xs)))), backend)
    vs = [as_array_of(rng.standard_normal(np.shape(as_numpy(x))), backend) for x in xs]
    zs = [Variable(x) for x in xs]
    F.sum(f(*zs) * w).backward(create_graph=True)
    total = None
    for z, v in zip(zs, vs):
        assert z.grad.creator is not None, "a gradient recorded with create_graph has a graph"
        term = F.sum(z.grad * v)
        total = term if total is None else total + term
        z.cleargrad()
    total.backward()
    ts = [_t(x).requires_grad_() for x in xs]
    gs = torch.autograd.grad((twin(torch, *ts) * _t(w)).sum(), ts, create_graph=True)
    total = sum((g * _t(v)).sum() for g, v in zip(gs, vs))
    wants = torch.autograd.grad(total, ts, allow_unused=True)  # a bias's: None
    for z, t, want in zip(zs, ts, wants):
        got = np.zeros(z.shape) if z.grad is None else z.grad.data
        _close(got, torch.zeros_like(t) if want is None else want, rtol=1e-8, atol=1e-10)
