"""zerograd.func on zerograd-nn: the functions' batching rules, functional_call, and
per-sample gradients and Hessians of models, against numerical derivatives and loops.

The same against torch.func is in test_func_nn_torch.
"""

from __future__ import annotations

import doctest
import threading
import warnings

import numpy as np
import pytest
from func_nn_cases import CASES, call, inputs, num_jacobian, values

import zerograd.func.model as model_module
import zerograd_nn.functional as F
import zerograd_nn.layers.base as base_module
from zerograd import Parameter, Variable, modes, test_mode
from zerograd.backends import as_array_of, as_numpy
from zerograd.func import (
    VmapFallbackWarning,
    functional_call,
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    vmap,
)
from zerograd_nn.layers import RNN, BatchNorm, Linear
from zerograd_nn.models import MLP

NAMES = sorted(CASES)


@pytest.fixture(autouse=True)
def _strict():
    """No loop fallback here (every nn function below has a rule), and no mode left on."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", VmapFallbackWarning)
        yield
    assert modes.switch.on == 0


def _close(got, want, rtol=1e-5, atol=1e-7):
    np.testing.assert_allclose(as_numpy(got), want, rtol=rtol, atol=atol)


def _sample(a, i):
    return a[i, ...]


def _scalar(name, backend):
    f = CASES[name][0]
    xs = inputs(name, backend)
    w = as_array_of(
        np.random.default_rng(3).standard_normal(np.shape(as_numpy(call(f, *xs)))), backend
    )
    return (lambda *vs: F.sum(f(*vs) * w)), xs


@pytest.mark.parametrize("name", NAMES)
def test_grad_and_jacobians_match_central_differences(name, backend):
    f = CASES[name][0]
    s, xs = _scalar(name, backend)
    nums = tuple(range(len(xs)))
    for i, g in enumerate(grad(s, argnums=nums)(*xs)):
        _close(g, num_jacobian(s, xs, i))
    want = num_jacobian(f, xs, 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", VmapFallbackWarning)
        _close(jacrev(f)(*xs), want)
        _close(jacfwd(f)(*xs), want)
    # max pooling's derivatives read one primal's winners: with a batch of cotangents or
    # tangents they repeat them for each (they ran per row, with a warning)
    assert not [str(w.message) for w in caught]


@pytest.mark.parametrize("name", NAMES)
def test_vmap_with_shared_and_with_per_sample_weights_equals_a_loop(name, backend):
    """Batched inputs alone (shared weights), then every input batched (per-sample)."""
    f = CASES[name][0]
    xs = inputs(name, backend)
    batch = inputs(name, backend, batch=3)
    shared = vmap(f, in_axes=(0, *[None] * (len(xs) - 1)))(batch[0], *xs[1:])
    _close(shared, np.stack([as_numpy(call(f, _sample(batch[0], i), *xs[1:])) for i in range(3)]))
    every = vmap(f)(*batch)
    want = np.stack([as_numpy(call(f, *[_sample(b, i) for b in batch])) for i in range(3)])
    _close(every, want)


@pytest.mark.parametrize("name", NAMES)
def test_vmap_of_grad_gives_per_sample_gradients(name, backend):
    s, xs = _scalar(name, backend)
    batch = inputs(name, backend, batch=3)
    nums = tuple(range(len(xs)))
    got = vmap(grad(s, argnums=nums), in_axes=(0, *[None] * (len(xs) - 1)))(batch[0], *xs[1:])
    for i in range(3):
        for k, g in enumerate(grad(s, argnums=nums)(_sample(batch[0], i), *xs[1:])):
            _close(as_numpy(got[k])[i], as_numpy(g), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "name", ["sigmoid", "softmax", "linear", "conv2d", "sigmoid_cross_entropy", "pooling"]
)
def test_hessian_matches_central_differences_of_the_engine_gradient(name, backend):
    s, xs = _scalar(name, backend)
    rest = xs[1:]

    def engine_grad(x):
        vs = [Variable(x.data), *[Variable(r) for r in rest]]
        s(*vs).backward()
        return F.reshape(as_array_of(as_numpy(vs[0].grad), backend), x.shape)

    _close(hessian(lambda x: s(x, *rest))(xs[0]), num_jacobian(engine_grad, [xs[0]], 0), 1e-4, 1e-6)


# -- models: functional_call, per-sample gradients, Hessians --------------------------------
def _mlp(backend, sizes=(5, 3), in_size=4, seed=0):
    np.random.seed(seed)
    model = MLP(sizes)
    model(as_array_of(np.zeros((1, in_size)), backend))  # sized
    return model


def _params(model):
    return {k: p.data for k, p in model.named_params().items()}


def _loss(model):
    def loss(params, x, t):
        y = functional_call(model, params, F.expand_dims(x, 0))
        return F.softmax_cross_entropy(y, F.expand_dims(t, 0))

    return loss


def test_per_sample_gradients_of_an_mlp(backend):
    model = _mlp(backend)
    params = _params(model)
    x = as_array_of(values((6, 4), 1), backend)
    t = as_array_of(np.array([0, 2, 1, 1, 0, 2]), backend)
    loss = _loss(model)
    per = vmap(grad(loss), in_axes=(None, 0, 0))(params, x, t)
    assert set(per) == set(params)
    for i in range(6):
        one = grad(loss)(params, _sample(x, i), _sample(t, i))
        for k in params:
            assert as_numpy(per[k]).shape == (6, *as_numpy(params[k]).shape)
            _close(as_numpy(per[k])[i], as_numpy(one[k]), rtol=1e-10, atol=1e-12)
    # one sample's gradient against central differences
    w = "l0.W"

    def of_w(v):
        return loss({**params, w: v}, _sample(x, 2), _sample(t, 2))

    _close(as_numpy(per[w])[2], num_jacobian(of_w, [params[w]], 0))


def test_per_sample_gradients_of_a_cnn(backend):
    rng = np.random.default_rng(0)
    params = {
        "W1": as_array_of(rng.standard_normal((3, 1, 3, 3)) * 0.5, backend),
        "b1": as_array_of(rng.standard_normal(3) * 0.1, backend),
        "W2": as_array_of(rng.standard_normal((3 * 2 * 2, 4)) * 0.5, backend),
        "b2": as_array_of(np.zeros(4), backend),
    }
    x = as_array_of(values((5, 1, 4, 4), 2), backend)
    t = as_array_of(np.array([0, 3, 1, 2, 0]), backend)

    def loss(p, xi, ti):
        h = F.relu(F.conv2d(F.expand_dims(xi, 0), p["W1"], p["b1"], pad=1))
        h = F.reshape(F.pooling(h, 2, 2), (1, -1))
        return F.softmax_cross_entropy(F.linear(h, p["W2"], p["b2"]), F.expand_dims(ti, 0))

    per = vmap(grad(loss), in_axes=(None, 0, 0))(params, x, t)
    for i in range(5):
        one = grad(loss)(params, _sample(x, i), _sample(t, i))
        for k in params:
            _close(as_numpy(per[k])[i], as_numpy(one[k]), rtol=1e-10, atol=1e-12)

    def of_w1(v):
        return loss({**params, "W1": v}, _sample(x, 4), _sample(t, 4))

    _close(as_numpy(per["W1"])[4], num_jacobian(of_w1, [params["W1"]], 0))


def test_hessian_of_a_small_mlp_matches_central_differences(backend):
    model = _mlp(backend, sizes=(3, 2), in_size=2, seed=3)
    params = _params(model)
    x = as_array_of(values((4, 2), 5), backend)
    t = as_array_of(np.array([0, 1, 1, 0]), backend)

    def loss(W):
        y = functional_call(model, {**params, "l0.W": W}, x)
        return F.softmax_cross_entropy(y, t)

    H = hessian(loss)(params["l0.W"])
    assert as_numpy(H).shape == (2, 3, 2, 3)

    def engine_grad(W):
        w = Variable(W.data)
        loss(w).backward()
        return F.reshape(as_array_of(as_numpy(w.grad), backend), W.shape)

    want = num_jacobian(engine_grad, [params["l0.W"]], 0)
    _close(H, want, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(as_numpy(H).reshape(6, 6), as_numpy(H).reshape(6, 6).T, atol=1e-12)


def test_functional_call_leaves_the_model_as_it_was(backend):
    model = _mlp(backend)
    before = {k: (p, p.data, p.grad) for k, p in model.named_params().items()}
    for p in model.params():
        p.grad = Variable(as_array_of(np.ones(p.shape), backend))
        before[[k for k, q in model.named_params().items() if q is p][0]] = (p, p.data, p.grad)
    params = {
        k: Variable(as_array_of(np.full(p.shape, 0.1), backend))
        for k, p in model.named_params().items()
    }
    x = as_array_of(values((2, 4), 3), backend)
    y = functional_call(model, params, x)
    F.sum(y).backward()  # the gradients land on the given Variables
    assert all(v.grad is not None for v in params.values())
    after = model.named_params()
    assert list(after) == list(before)
    for k, (p, data, g) in before.items():
        assert after[k] is p and p.data is data and p.grad is g
    ref = model(x)  # the model's own parameters still compute its own output
    assert not np.allclose(as_numpy(ref), as_numpy(y))


def test_functional_call_gives_the_given_parameters_values(backend):
    layer = Linear(2, in_size=3).to(backend)
    W = as_array_of(np.arange(6.0).reshape(3, 2), backend)
    x = as_array_of(np.array([[1.0, 1.0, 1.0]]), backend)
    y = functional_call(layer, {"W": W}, x)  # b left out: the layer's own
    _close(y, np.array([[6.0, 9.0]]) + as_numpy(layer.b.data))
    y2 = functional_call(layer, ({"W": W}, {"b": as_array_of(np.array([1.0, -1.0]), backend)}), x)
    _close(y2, [[7.0, 8.0]])


def test_functional_call_keeps_state_writes_off_the_model(backend):
    bn = BatchNorm()
    x = as_array_of(values((4, 3), 1), backend)
    bn(x)  # sized, statistics updated once
    mean = as_numpy(bn.avg_mean.data).copy()
    params = {k: p.data for k, p in bn.named_params().items()}
    functional_call(bn, params, x * 3.0 + 1.0)  # train mode: statistics move, on the copy
    np.testing.assert_array_equal(as_numpy(bn.avg_mean.data), mean)
    rnn = RNN(2, in_size=3).to(backend)
    rnn(x[:1, ...])
    h = rnn.h
    functional_call(rnn, {k: p.data for k, p in rnn.named_params().items()}, x[:1, ...])
    assert rnn.h is h
    lazy = Linear(2).to(backend)
    functional_call(lazy, {"W": as_array_of(np.ones((3, 2)), backend)}, x)
    assert lazy.W.data is None, "the model's own lazily sized weight was left unsized"


def test_functional_call_under_vmap_and_threads(backend):
    """Ensembles: a batch of parameter sets (in_axes=0 over the dict); and two threads calling
    one model with different parameters at once."""
    model = _mlp(backend)
    names = list(model.named_params())
    stacks = {
        k: as_array_of(np.stack([values(p.shape, s) for s in range(3)]), backend)
        for k, p in model.named_params().items()
    }
    x = as_array_of(values((2, 4), 9), backend)
    got = vmap(lambda p: functional_call(model, p, x), in_axes=(0,))(stacks)
    for i in range(3):
        one = functional_call(model, {k: _sample(stacks[k], i) for k in names}, x)
        _close(as_numpy(got)[i], as_numpy(one), rtol=1e-12)
    errors = []

    def worker(scale):
        try:
            p = {k: v * scale for k, v in _params(model).items()}
            for _ in range(50):
                y = functional_call(model, p, x)
                ref = model.with_params(p)(x)
                np.testing.assert_allclose(as_numpy(y), as_numpy(ref))
        except Exception as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s,)) for s in (0.5, 2.0)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors


def test_functional_call_refuses_bad_parameters(backend):
    model = _mlp(backend)
    with pytest.raises(
        ValueError, match=r"\['l9.W'\] are not parameters of MLP; its parameters are"
    ):
        functional_call(model, {"l9.W": np.ones(2)}, np.ones((1, 4)))
    with pytest.raises(
        ValueError, match=r"params\['l0.W'\] has shape \(2,\), the parameter \(4, 5\)"
    ):
        functional_call(model, {"l0.W": np.ones(2)}, np.ones((1, 4)))
    with pytest.raises(ValueError, match=r"\['l0.b'\] given in more than one dict"):
        functional_call(model, ({"l0.b": np.ones(5)}, {"l0.b": np.ones(5)}), np.ones((1, 4)))
    with pytest.raises(TypeError, match=r"params must be a dict"):
        functional_call(model, [np.ones(2)], np.ones((1, 4)))
    with pytest.raises(TypeError, match=r"int has no with_params\(params\) method"):
        functional_call(3, {}, np.ones(1))


def test_transforms_of_a_model_without_functional_call_change_nothing(backend):
    """A model called directly inside grad: its Parameters are constants; no gradient lands."""
    model = _mlp(backend)
    x = as_array_of(values((3, 4), 4), backend)
    g = grad(lambda x: F.sum(model(x)))(x)
    assert as_numpy(g).shape == (3, 4)
    assert all(p.grad is None for p in model.params())
    with test_mode():
        g2 = grad(lambda x: F.sum(model(x)))(x)
    _close(g2, as_numpy(g))


def test_dropout_and_batch_norm_run_per_sample_with_a_warning(backend):
    x = as_array_of(values((3, 2, 4), 1), backend)
    mean, var = as_array_of(values((4,), 2), backend), as_array_of(values((4,), 3) ** 2, backend)
    gamma = as_array_of(np.ones(4), backend)
    beta = as_array_of(np.zeros(4), backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with test_mode():
            out = vmap(lambda v: F.dropout(v) * 2.0)(x)
            got = vmap(lambda v: F.batch_norm(v, gamma, beta, Parameter(mean), Parameter(var)))(x)
        _close(out, 2.0 * as_numpy(x))
    names = " ".join(str(w.message) for w in caught if w.category is VmapFallbackWarning)
    assert "has no batching rule" in names
    want = (as_numpy(x) - as_numpy(mean)) / np.sqrt(as_numpy(var) + 2e-5)
    _close(got, want, rtol=1e-4, atol=1e-4)


def test_batch_norm_in_train_mode_inside_vmap_is_refused_and_changes_nothing(backend):
    """Run once per sample, train-mode batch norm moved the running statistics once per
    sample (a batch of 3 moved them 3 times, by each sample's statistics); an ensemble's
    batched statistics (functional_call) failed with an AttributeError of the internals.
    torch.func's vmap refuses both; test mode (eval) works inside vmap."""
    x = as_array_of(values((3, 5, 4), 1), backend)
    bn = BatchNorm()
    bn(_sample(x, 0))
    before = {k: as_numpy(p.data).copy() for k, p in bn.named_params().items()}
    stacked = {k: as_array_of(np.stack([v] * 3), backend) for k, v in before.items()}
    calls = (
        lambda: vmap(bn)(x),
        lambda: vmap(lambda v: F.batch_norm(v, bn.gamma, bn.beta, bn.avg_mean, bn.avg_var))(x),
        lambda: vmap(grad(lambda v: F.sum(bn(v))))(x),
        lambda: vmap(lambda p, v: functional_call(bn, p, v))(stacked, x),
        lambda: vmap(lambda p: functional_call(bn, p, _sample(x, 0)))(stacked),
    )
    for call_ in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", VmapFallbackWarning)
            with pytest.raises(
                TypeError,
                match=r"batch_norm in train mode inside vmap \(a batch of 3\): it would update "
                r"the running statistics once per sample\. Inside vmap use test mode "
                r"\(model\.eval\(\), .*Nothing was changed\.",
            ):
                call_()
        for k, p in bn.named_params().items():
            np.testing.assert_array_equal(as_numpy(p.data), before[k])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapFallbackWarning)
        got = vmap(bn.eval())(x)
    want = (as_numpy(x) - before["avg_mean"]) / np.sqrt(before["avg_var"] + 2e-5)
    _close(got, want, rtol=1e-5, atol=1e-6)
    for k, p in bn.named_params().items():
        np.testing.assert_array_equal(as_numpy(p.data), before[k])


def test_dropout_inside_vmap_draws_a_mask_per_sample_as_randomness_different(backend):
    """What vmap's randomness='different' (the value zerograd's vmap takes) promises:
    each sample its own mask, also run in chunks."""
    x = as_array_of(np.ones((6, 40)), backend)
    for chunk_size in (None, 4):
        np.random.seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", VmapFallbackWarning)  # dropout has no rule
            out = vmap(F.dropout, randomness="different", chunk_size=chunk_size)(x)
        rows = as_numpy(out)
        assert set(np.unique(rows)) <= {0.0, 2.0} and rows.shape == (6, 40)
        assert len({r.tobytes() for r in rows}) == 6, "every sample drew its own mask"


def test_the_docstring_examples_of_functional_call_and_with_params_run():
    for mod in (model_module, base_module):
        result = doctest.testmod(mod)
        assert result.attempted and not result.failed, mod.__name__


def test_functional_call_takes_torch_funcs_tuple_of_inputs():
    """functional_call(model, p, (x,)) gave the model the tuple: an MLP made it one more
    leading axis, output (1, 5, 2) instead of (5, 2), and per-sample gradients in the
    torch.func recipe failed inside vmap."""
    np.random.seed(0)
    model = MLP((3, 2))
    x = np.random.default_rng(1).standard_normal((5, 4))
    model(x)
    params = {k: p.data for k, p in model.named_params().items()}
    np.testing.assert_array_equal(
        functional_call(model, params, (x,)).data, functional_call(model, params, x).data
    )
    assert functional_call(model, params, (x,)).shape == (5, 2)

    def loss(p, xi):
        return F.sum(functional_call(model, p, (xi[None],)) ** 2)

    per_sample = vmap(grad(loss), in_axes=(None, 0))(params, x)
    for i in range(len(x)):
        one = grad(loss)(params, x[i])
        for k in params:
            np.testing.assert_allclose(per_sample[k][i], one[k], rtol=1e-12)


def test_with_params_names_a_parameter_given_as_none():
    """It failed with "'NoneType' object has no attribute 'shape'"."""
    model = MLP((3, 2))
    model(np.ones((1, 4)))
    with pytest.raises(
        TypeError,
        match=r"^with_params: params\['l0\.W'\] holds no array \(None\) for a parameter of shape "
        r"\(4, 3\); give an array",
    ):
        functional_call(model, {"l0.W": None}, np.ones((1, 4)))


@pytest.mark.parametrize("in_axes", [(0, None, None), (0, 0, 0)], ids=["shared W", "batched W"])
def test_linear_of_a_vector_sample_inside_vmap_says_it_has_no_batch_axis(in_axes, backend):
    """One sample x of shape (I,) with W (I, O): outside vmap linear says x has no batch
    axis; inside, the rule said "x of shape (3,) and W of shape (3, 6) do not fit ... with
    the same I", which they had."""
    x = Variable(as_array_of(values((4, 3), 0), backend))
    W = as_array_of(values((3, 6), 1) if in_axes[1] is None else values((4, 3, 6), 1), backend)
    b = as_array_of(values((6,), 2) if in_axes[2] is None else values((4, 6), 2), backend)
    text = (
        "linear: x of shape (3,) has no batch axis; expected x (N, ..., I) for W of shape "
        "(3, 6): pass one example as x.reshape(1, -1)."
    )
    with pytest.raises(ValueError) as outside:
        F.linear(_sample(x.data, 0), W if in_axes[1] is None else W[0, ...], b)
    assert str(outside.value) == text
    with pytest.raises(ValueError) as inside:
        vmap(F.linear, in_axes=in_axes)(x, W, b)
    assert str(inside.value) == text
    assert x.creator is None and x.grad is None
    # a sample with its batch axis goes through, as a loop over the samples does
    y = vmap(lambda v, w, c: F.linear(F.reshape(v, (1, 3)), w, c), in_axes=in_axes)(x, W, b)
    xn, wn, bn = as_numpy(x), as_numpy(W), as_numpy(b)
    want = np.stack(
        [
            xn[i][None] @ (wn if in_axes[1] is None else wn[i])
            + (bn if in_axes[2] is None else bn[i])
            for i in range(4)
        ]
    )
    np.testing.assert_allclose(as_numpy(y), want, rtol=1e-12)


def test_embed_id_with_per_sample_ids_inside_vmap_equals_a_loop(backend):
    """embed_id's range check read the ids' values, which a batched array has not."""
    W = as_array_of(values((4, 2), 0), backend)
    ids = as_array_of(np.array([[0, 3], [2, 2], [1, 0]]), backend)
    got = vmap(F.embed_id, in_axes=(0, None))(ids, W)
    want = np.stack([as_numpy(W)[as_numpy(ids)[i]] for i in range(3)])
    _close(got, want, rtol=0, atol=0)

    def loss(W, i):
        return F.sum(F.embed_id(i, W) ** 2)

    per_sample = vmap(grad(loss), in_axes=(None, 0))(W, ids)
    for i in range(3):
        _close(as_numpy(per_sample)[i], as_numpy(grad(loss)(W, ids[i, ...])), rtol=0, atol=0)


def test_embed_id_inside_vmap_refuses_an_id_out_of_range_in_any_sample(backend):
    W = as_array_of(values((4, 2), 0), backend)
    ids = as_array_of(np.array([[0, 3], [2, 4]]), backend)
    with pytest.raises(ValueError, match=r"embed_id: id 4 is out of range for W of shape \(4, 2\)"):
        vmap(F.embed_id, in_axes=(0, None))(ids, W)
    np.testing.assert_array_equal(as_numpy(W), values((4, 2), 0))


def test_binary_cross_entropy_of_per_sample_probabilities_inside_vmap_equals_a_loop(backend):
    """Its check that p holds probabilities read p's values, which a batched array has not."""
    p = as_array_of(np.array([[0.2, 0.9], [0.5, 0.1], [0.7, 0.4]]), backend)
    t = as_array_of(np.array([1, 0]), backend)
    got = vmap(F.binary_cross_entropy, in_axes=(0, None))(p, t)
    want = [
        -np.mean(np.log(pi) * as_numpy(t) + np.log(1 - pi) * (1 - as_numpy(t)))
        for pi in as_numpy(p)
    ]
    _close(got, want, rtol=1e-12, atol=0)
    per_sample = vmap(grad(F.binary_cross_entropy), in_axes=(0, None))(p, t)
    for i in range(3):
        _close(
            as_numpy(per_sample)[i], as_numpy(grad(F.binary_cross_entropy)(p[i, ...], t)), 1e-12, 0
        )
    bad = as_array_of(np.array([[0.2, 0.9], [0.5, 1.5]]), backend)
    with pytest.raises(ValueError, match=r"p must be probabilities in \[0, 1\], got values from"):
        vmap(F.binary_cross_entropy, in_axes=(0, None))(bad, t)


@pytest.mark.parametrize("column", [False, True], ids=["same_shape", "column_targets"])
def test_sigmoid_and_binary_cross_entropy_with_per_sample_targets_inside_vmap(column, backend):
    """The targets were reshaped and cast through the array module, which reads values."""
    x = as_array_of(np.array([[0.5, -1.0], [2.0, 0.25], [-0.5, 1.5]]), backend)
    p = as_array_of(np.array([[0.2, 0.9], [0.5, 0.1], [0.7, 0.4]]), backend)
    t = np.array([[1, 0], [0, 0], [1, 1]])
    t = as_array_of(t[..., None] if column else t, backend)  # (N, 1) targets fit (N,) inputs
    for f, v in [(F.sigmoid_cross_entropy, x), (F.binary_cross_entropy, p)]:
        got = vmap(f)(v, t)
        _close(got, [as_numpy(f(v[i, ...], t[i, ...]).data) for i in range(3)], rtol=1e-12, atol=0)
        per_sample = vmap(grad(f))(v, t)
        for i in range(3):
            _close(
                as_numpy(per_sample)[i], as_numpy(grad(f)(v[i, ...], t[i, ...])), rtol=1e-12, atol=0
            )
        shared = vmap(f, in_axes=(None, 0))(v[0, ...], t)
        _close(
            shared, [as_numpy(f(v[0, ...], t[i, ...]).data) for i in range(3)], rtol=1e-12, atol=0
        )


def test_accuracy_inside_vmap_gives_each_samples_accuracy(backend):
    """accuracy returns Variable(rate.data), which vmap took for one shared value."""
    rng = np.random.default_rng(0)
    y = as_array_of(rng.standard_normal((3, 4, 5)), backend)
    t = as_array_of(rng.integers(0, 5, (3, 4)), backend)
    want = [float(as_numpy(F.accuracy(y[i, ...], t[i, ...]).data)) for i in range(3)]
    _close(vmap(F.accuracy)(y, t), want, rtol=0, atol=0)
    _close(
        vmap(F.accuracy, in_axes=(0, None))(y, t[0, ...]),
        [float(as_numpy(F.accuracy(y[i, ...], t[0, ...]).data)) for i in range(3)],
        rtol=0,
        atol=0,
    )
    bad = as_array_of(np.array([[0, 1, 2, 3], [0, 1, 5, 0], [0, 0, 0, 0]]), backend)
    with pytest.raises(ValueError, match=r"class ids in 0\.\.4 for scores of shape \(4, 5\), got"):
        vmap(F.accuracy)(y, bad)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: F.softmax_simple(x),
        lambda x: F.log_softmax(x) + F.softmax_simple(x, axis=0),
        lambda x: F.softmax_cross_entropy_simple(x, np.array([1, 0])),
    ],
    ids=["softmax_simple", "softmax_simple_axis0", "softmax_cross_entropy_simple"],
)
def test_the_simple_softmaxes_under_vmap_subtract_each_samples_maximum(f):
    """They subtract the maximum read from the raw array, which a batched sample does not
    give: softmax_simple skipped it (logits of 1000 overflowed to nan) and
    softmax_cross_entropy_simple raised. Their values and jvps equal a loop's."""
    xs = np.array([[[1000.0, 0.0, -3.0], [2.0, 800.0, 1.0]], [[0.5, 0.0, -1.0], [0.0, 1e-3, 1.0]]])
    t = np.array([[1.0, -1.0, 0.5], [0.0, 2.0, -2.0]])
    got = vmap(f)(xs)
    want = np.stack([f(Variable(x)).data for x in xs])
    assert np.all(np.isfinite(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    tangents = vmap(lambda x: jvp(f, (x,), (t,))[1])(xs)
    want = np.stack([jvp(f, (x,), (t,))[1] for x in xs])
    assert np.all(np.isfinite(want))
    np.testing.assert_allclose(tangents, want, rtol=1e-12, atol=1e-300)


def test_jacobians_and_hessians_of_max_pooling_need_no_loop(backend):
    """Max pooling's derivatives (Pooling2DGrad, Pooling2DWithIndexes) have a batching rule:
    jacfwd, jacrev and hessian of overlapping padded windows take the whole basis at once
    (they ran per row with a VmapFallbackWarning, an error here) and equal central
    differences, also under an outer vmap."""
    xs = as_array_of(values((3, 1, 2, 3, 3), seed=4), backend)
    x = xs[0, ...]

    def f(v):
        return F.pooling(v, 2, 1, 1) ** 2

    def s(v):
        return F.sum(F.pooling(v, 2, 1, 1) ** 3)

    want = num_jacobian(f, [x], 0)
    _close(jacfwd(f)(x), want)
    _close(jacrev(f)(x), want)
    _close(hessian(s)(x), num_jacobian(lambda v: grad(s)(v), [x], 0), 1e-4, 1e-6)
    _close(vmap(jacfwd(f))(xs), np.stack([as_numpy(jacrev(f)(xs[i, ...])) for i in range(3)]))


@pytest.mark.parametrize(
    "case",
    ["labels out of range in sample 1", "too many labels", "conv2d channels", "linear"],
)
def test_nn_errors_inside_vmap_are_one_samples(case):
    """The errors name what the function given to vmap sees: softmax_cross_entropy's label
    range named the scores (n * N, C) = (6, 3), and only sample 1's label is wrong."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 3))
    if case == "labels out of range in sample 1":
        args, f = (x, np.array([[0, 1, 2], [0, 7, 1]])), F.softmax_cross_entropy
    elif case == "too many labels":
        args, f = (x, np.zeros((2, 4), dtype=int)), F.softmax_cross_entropy
    elif case == "conv2d channels":
        args = (rng.standard_normal((2, 1, 2, 4, 4)), np.ones((2, 3, 3, 3)))
        f = F.conv2d
    else:
        args, f = (x, np.ones((4, 2))), F.linear
    in_axes = (0, 0) if case.startswith(("labels", "too")) else (0, None)
    loop_error = None
    for i in range(2):
        sample = [a[i] if ax == 0 else a for a, ax in zip(args, in_axes)]
        try:
            f(*sample)
        except ValueError as e:
            loop_error = str(e)
            break
    assert loop_error is not None
    with pytest.raises(ValueError) as caught:
        vmap(f, in_axes=in_axes)(*args)
    assert str(caught.value) == loop_error


@pytest.mark.parametrize("k, s, p", [(2, 2, 0), (3, 1, 1), (2, 1, 1)])
def test_pooling_simple_under_vmap_is_the_per_sample_loop(k, s, p, backend):
    """vmap(pooling_simple) raised a TypeError (it picked the winners from the raw array,
    which inside vmap has no values). Values and per-sample gradients equal the loop's,
    ties, nan and -inf included, with no loop fallback (warnings are errors here)."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, (3, 2, 2, 5, 5)).astype(np.float64)  # ties everywhere
    x[1, 0, 1, 2, 2] = np.nan
    x[2, 1, 0] = -np.inf
    xs = as_array_of(x, backend)
    shape = np.shape(F.pooling_simple(x[0], k, s, p).data)
    w = as_array_of(0.5 + rng.random(shape), backend)  # positive: -inf * w + x is no nan

    def loss(v):
        return F.sum(F.pooling_simple(v, k, s, p) * w)

    got = vmap(lambda v: F.pooling_simple(v, k, s, p))(xs)
    want = np.stack([as_numpy(F.pooling_simple(xs[i, ...], k, s, p).data) for i in range(3)])
    np.testing.assert_array_equal(as_numpy(got), want)
    g = vmap(grad(loss))(xs)
    g_want = np.stack([as_numpy(grad(loss)(xs[i, ...])) for i in range(3)])
    np.testing.assert_array_equal(as_numpy(g), g_want)
