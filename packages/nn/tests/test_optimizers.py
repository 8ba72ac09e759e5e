"""Optimizers and hooks: first steps against hand-computed values, dtype, in-place, state."""

import math

import numpy as np
import pytest

from zerograd import Parameter, Variable
from zerograd.backends import as_array_of, as_numpy, backend_of, get_backend
from zerograd_nn import optimizers as O


class Tiny:
    """A model stand-in: params() yields its Parameters in order."""

    def __init__(self, *values, dtype=np.float64):
        self.ps = [Parameter(np.array(v, dtype=dtype)) for v in values]

    def params(self):
        yield from self.ps


def give_grads(model, *grads):
    for p, g in zip(model.ps, grads):
        p.grad = Variable(np.array(g, dtype=p.data.dtype))


G = [0.5, -1.0]


def run(opt, steps=1, w=(1.0, 2.0), g=G, dtype=np.float64):
    model = Tiny(list(w), dtype=dtype)
    opt.setup(model)
    for _ in range(steps):
        give_grads(model, g)
        opt.update()
    return model.ps[0].data


def test_sgd_first_step():
    np.testing.assert_allclose(run(O.SGD(lr=0.1)), [0.95, 2.1])
    assert O.SGD().lr == 0.01


def test_setup_returns_self_and_accepts_param_list():
    p = Parameter(np.array([1.0]))
    opt = O.SGD(lr=1.0)
    assert opt.setup([p]) is opt
    p.grad = Variable(np.array([0.25]))
    opt.update()
    np.testing.assert_allclose(p.data, [0.75])


def test_setup_rejects_non_model():
    with pytest.raises(TypeError, match="SGD.setup.*Layer/Model"):
        O.SGD().setup(3)
    with pytest.raises(TypeError, match="must be a Parameter, got ndarray"):
        O.SGD().setup([np.ones(2)])


def test_update_without_setup_says_so():
    with pytest.raises(RuntimeError, match=r"call optimizer.setup\(model\) first"):
        O.SGD().update()


def test_momentum_two_steps():
    np.testing.assert_allclose(run(O.MomentumSGD(lr=0.1, momentum=0.9), 2), [0.855, 2.29])


def test_adagrad_two_steps():
    w = run(O.AdaGrad(lr=0.1), 2)
    step2 = 0.1 / math.sqrt(2)
    np.testing.assert_allclose(w, [0.9 - step2, 2.1 + step2], rtol=1e-7)


def test_adadelta_two_steps_against_scalar_loop():
    rho, eps = 0.95, 1e-6
    expected = []
    for w, g in zip([1.0, 2.0], G):
        msg = msdx = 0.0
        for _ in range(2):
            msg = rho * msg + (1 - rho) * g * g
            dx = math.sqrt((msdx + eps) / (msg + eps)) * g
            msdx = rho * msdx + (1 - rho) * dx * dx
            w -= dx
        expected.append(w)
    np.testing.assert_allclose(run(O.AdaDelta(), 2), expected, rtol=1e-12)


def test_adam_first_step_is_alpha_times_sign():
    opt = O.Adam(alpha=0.01)
    np.testing.assert_allclose(run(opt), [0.99, 2.01], rtol=1e-6)
    assert opt.t == 1
    assert opt.step_size() == pytest.approx(0.01 * math.sqrt(1 - 0.999) / (1 - 0.9))
    assert opt.lr == opt.alpha == 0.01


def test_adam_step_size_before_the_first_update_says_why_there_is_none():
    """step_size() is the bias-corrected step of step t; before any update (t == 0) that
    divides by 1 - beta1**0 == 0. It was a bare "float division by zero" (DeZero's
    Adam.lr too); the error, still a ZeroDivisionError, now says what to do."""
    opt = O.Adam(alpha=0.01)
    with pytest.raises(ZeroDivisionError, match=r"Adam.step_size\(\): no update yet \(t == 0\)"):
        opt.step_size()
    assert opt.t == 0
    run(opt)
    assert opt.step_size() == pytest.approx(0.01 * math.sqrt(1 - 0.999) / (1 - 0.9))


def test_adam_two_steps_against_scalar_loop():
    a, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
    expected = []
    for w, g in zip([1.0, 2.0], [0.5, -1.0]):
        m = v = 0.0
        for t in (1, 2):
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            lr = a * math.sqrt(1 - b2**t) / (1 - b1**t)
            w -= lr * m / (math.sqrt(v) + eps)
        expected.append(w)
    np.testing.assert_allclose(run(O.Adam(alpha=a), 2), expected, rtol=1e-12)


def test_adam_adds_eps_before_the_bias_correction_as_dezero():
    """DeZero's step, not PyTorch's: where ``sqrt(v)`` is near ``eps`` the two differ
    (docs/from-pytorch.md, "What behaves differently")."""
    g, eps = 1e-8, 1e-8
    w = run(O.Adam(alpha=0.1, eps=eps), g=[g, -g])
    c = math.sqrt(1 - 0.999) / (1 - 0.9)  # step 1's bias correction of the step size
    dezero = 0.1 * c * (0.1 * g) / (math.sqrt(0.001) * g + eps)
    pytorch = 0.1 * g / (g + eps)  # m_hat / (sqrt(v_hat) + eps) with m_hat = g
    np.testing.assert_allclose(w, [1.0 - dezero, 2.0 + dezero], rtol=1e-12)
    assert abs(dezero - pytorch) > 0.4 * pytorch


def test_adamw_decays_then_steps():
    w = run(O.AdamW(alpha=0.01, weight_decay=0.1))
    np.testing.assert_allclose(w, [1.0 * 0.999 - 0.01, 2.0 * 0.999 + 0.01], rtol=1e-6)


@pytest.mark.parametrize(
    "opt",
    [
        O.SGD(np.float64(0.1)),
        O.MomentumSGD(np.float64(0.1)),
        O.AdaGrad(np.float64(0.1)),
        O.AdaDelta(),
        O.Adam(np.float64(0.1)),
        O.AdamW(np.float64(0.1)),
    ],
    ids=lambda o: type(o).__name__,
)
def test_float32_kept_and_updated_in_place(opt):
    model = Tiny([1.0, 2.0], dtype=np.float32)
    p = model.ps[0]
    opt.setup(model)
    give_grads(model, G)
    opt.update()  # the first update packs p.data into the flat buffer (a view of it)
    before = p.data
    for _ in range(2):
        give_grads(model, G)
        opt.update()
    assert p.data is before  # in place from then on
    assert as_numpy(p.data).dtype == np.float32
    assert not np.allclose(p.data, [1.0, 2.0])
    for st in opt._state.values():
        assert all(as_numpy(a).dtype == np.float32 for a in st.values())


def test_params_without_grad_are_skipped():
    model = Tiny([1.0], [5.0])
    opt = O.MomentumSGD(lr=0.1).setup(model)
    model.ps[0].grad = Variable(np.array([1.0]))
    opt.update()
    np.testing.assert_allclose(model.ps[0].data, [0.9])
    np.testing.assert_allclose(model.ps[1].data, [5.0])
    assert model.ps[1] not in opt._state


def test_state_is_dropped_with_the_parameter():
    model = Tiny([1.0])
    opt = O.Adam().setup(model)
    give_grads(model, [1.0])
    opt.update()
    assert len(opt._state) == 1
    model.ps.clear()
    import gc

    gc.collect()
    assert len(opt._state) == 0


def test_weight_decay_hook():
    model = Tiny([1.0, 2.0])
    opt = O.SGD(lr=0.1).setup(model)
    opt.add_hook(O.WeightDecay(0.5))
    shared = np.array(G)
    model.ps[0].grad = Variable(shared)
    opt.update()
    # grad = g + 0.5 * w = [1.0, 0.0]
    np.testing.assert_allclose(model.ps[0].data, [0.9, 2.0])
    np.testing.assert_allclose(shared, G)  # gradient arrays may be shared: never written


def test_clip_grad_hook_scales_to_max_norm():
    model = Tiny([0.0, 0.0], [0.0])
    opt = O.SGD(lr=1.0).setup(model)
    opt.add_hook(O.ClipGrad(1.0))
    give_grads(model, [3.0, 0.0], [4.0])  # global norm 5
    opt.update()
    scale = 1.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(model.ps[0].data, [-3 * scale, 0.0])
    np.testing.assert_allclose(model.ps[1].data, [-4 * scale])


def test_clip_grad_leaves_small_grads():
    model = Tiny([0.0])
    opt = O.SGD(lr=1.0).setup(model)
    opt.add_hook(O.ClipGrad(10.0))
    give_grads(model, [3.0])
    opt.update()
    np.testing.assert_allclose(model.ps[0].data, [-3.0])


def test_freeze_param_hook_keeps_frozen_fixed():
    model = Tiny([1.0], [2.0])
    frozen = Tiny()
    frozen.ps = [model.ps[1]]
    opt = O.Adam().setup(model)
    opt.add_hook(O.FreezeParam(frozen))
    give_grads(model, [1.0], [1.0])
    opt.update()
    assert model.ps[1].data[0] == 2.0 and model.ps[0].data[0] != 1.0
    with pytest.raises(TypeError, match="FreezeParam"):
        O.FreezeParam(3)


def test_add_hook_needs_callable():
    with pytest.raises(TypeError, match="must be callable"):
        O.SGD().add_hook(1)


def test_hooks_see_params_before_update():
    seen = []
    model = Tiny([1.0])
    opt = O.SGD(lr=1.0).setup(model)
    opt.add_hook(lambda ps: seen.append([float(p.data[0]) for p in ps]))
    give_grads(model, [0.5])
    opt.update()
    assert seen == [[1.0]]


class Moved(np.ndarray):
    """Stands for an array of another backend (a parameter moved by to_gpu/to_cpu)."""


def test_state_follows_parameter_to_another_backend(monkeypatch):
    calls = []

    def fake_as_array_of(a, backend):
        calls.append(type(a))
        return np.asarray(a).view(Moved)

    monkeypatch.setattr(O.state, "as_array_of", fake_as_array_of)
    model = Tiny([1.0, 2.0])
    opt = O.MomentumSGD(lr=0.1).setup(model)
    give_grads(model, G)
    opt.update()
    p = model.ps[0]
    p.data = p.data.view(Moved)  # the parameter moved
    give_grads(model, G)
    opt.update()
    assert calls == [np.ndarray]  # the state was converted once, then kept
    assert type(opt._state[p]["v"]) is Moved
    np.testing.assert_allclose(np.asarray(p.data), [0.855, 2.29])


@pytest.mark.parametrize(
    "make",
    [
        lambda: O.SGD(0.1),
        lambda: O.MomentumSGD(0.05),
        lambda: O.AdaGrad(0.5),
        lambda: O.AdaDelta(),
        lambda: O.Adam(0.05),
        lambda: O.AdamW(0.05),
    ],
    ids=["SGD", "MomentumSGD", "AdaGrad", "AdaDelta", "Adam", "AdamW"],
)
def test_optimizers_fit_a_linear_layer(make, backend):
    model, opt, losses = _fit(make, backend)
    assert losses[-1] < losses[0] / 10
    assert all(as_numpy(p.data).dtype == np.float32 for p in model.params())
    # the state lives with the parameters (on the GPU after to_gpu()), and the run gives
    # the numbers the numpy backend gives
    for p in model.params():
        assert {
            backend_of(v).name for v in opt._state.get(p, {}).values() if hasattr(v, "shape")
        } <= {backend.name}
        assert backend_of(p.data).name == backend.name
    # the same computation as on numpy, compared in float64 over the first 150 steps: the
    # backends' matrix products and sums round differently in the last bit, and AdaDelta
    # amplifies that chaotically later on (on numpy alone, inputs moved by 1e-15 give
    # weights 1e-16 apart after 200 steps but 2e-3 apart after 500; on an H200 the 500-step
    # float64 runs differed by 6e-5, the float32 ones by 7e-3)
    ours, _, _ = _fit(make, backend, steps=150, dtype="float64")
    reference, _, _ = _fit(make, get_backend("numpy"), steps=150, dtype="float64")
    for p, q in zip(ours.params(), reference.params()):
        assert as_numpy(p.data).dtype == np.float64
        np.testing.assert_allclose(as_numpy(p.data), q.data, rtol=1e-9, atol=1e-12)


def _fit(make, backend, steps=500, dtype="float32"):
    import zerograd_nn.functional as F
    from zerograd_nn.layers import Linear

    rng = np.random.RandomState(0)
    x = rng.rand(64, 3).astype(dtype)
    y = x @ np.array([[1.0], [-2.0], [0.5]], dtype) + np.asarray(0.3, dtype)
    x, y = as_array_of(x, backend), as_array_of(y, backend)
    np.random.seed(0)
    model = Linear(1, in_size=3, dtype=dtype).to(backend)
    opt = make().setup(model)
    losses = []
    for _ in range(steps):
        loss = F.mean_squared_error(model(x), y)
        model.cleargrads()
        loss.backward()
        opt.update()
        losses.append(float(loss.data))
    return model, opt, losses


def test_freeze_param_with_a_layer():
    import zerograd_nn.functional as F
    from zerograd_nn.layers import Linear

    x = np.ones((2, 3), np.float32)
    first, second = Linear(4), Linear(1)
    second(first(x))  # lazy init

    class Two:
        def params(self):
            yield from first.params()
            yield from second.params()

    frozen = [p.data.copy() for p in first.params()]
    trained = [p.data.copy() for p in second.params()]
    opt = O.SGD(0.1).setup(Two())
    opt.add_hook(O.FreezeParam(first))
    loss = F.sum(second(first(x)))
    loss.backward()
    opt.update()
    for p, before in zip(first.params(), frozen):
        np.testing.assert_array_equal(p.data, before)
    assert all(not np.array_equal(p.data, b) for p, b in zip(second.params(), trained))


def test_gradient_of_wrong_shape_is_refused_before_any_change():
    model = Tiny([1.0, 2.0], [3.0])
    opt = O.MomentumSGD(lr=0.1).setup(model)
    model.ps[0].grad = Variable(np.ones(2))
    model.ps[1].grad = Variable(np.ones((2, 1)))
    with pytest.raises(ValueError, match=r"shape \(1,\) has a gradient of shape \(2, 1\)"):
        opt.update()
    np.testing.assert_array_equal(model.ps[0].data, [1.0, 2.0])
    assert len(opt._state) == 0


@pytest.mark.parametrize("make", [O.Adam, O.AdamW], ids=["Adam", "AdamW"])
def test_refused_adam_update_keeps_step_count_and_params(make):
    model = Tiny([1.0, 2.0], [3.0])
    opt = make(alpha=0.01).setup(model)
    model.ps[0].grad = Variable(np.array(G))
    model.ps[1].grad = Variable(np.ones((2, 1)))
    name = type(opt).__name__
    with pytest.raises(
        ValueError,
        match=rf"{name}.update\(\): parameter 1 \(unnamed\) of shape \(1,\) has a gradient of "
        r"shape \(2, 1\); nothing was updated",
    ):
        opt.update()
    assert opt.t == 0 and len(opt._state) == 0
    np.testing.assert_array_equal(model.ps[0].data, [1.0, 2.0])
    np.testing.assert_array_equal(model.ps[1].data, [3.0])
    model.ps[1].grad = Variable(np.array([1.0]))
    opt.update()  # the first real step is still step 1: alpha * sign(grad), bias-corrected
    assert opt.t == 1
    decay = 1 - 0.01 * 0.01 if make is O.AdamW else 1.0  # AdamW: weight_decay * alpha
    np.testing.assert_allclose(model.ps[0].data, [decay - 0.01, 2 * decay + 0.01], rtol=1e-6)


def test_adam_update_without_setup_keeps_step_count():
    opt = O.Adam()
    with pytest.raises(
        RuntimeError,
        match=r"Adam.update\(\): the optimizer has not been set up"
        r" \(no target\)",
    ):
        opt.update()
    assert opt.t == 0


@pytest.mark.parametrize("make", [O.SGD, O.MomentumSGD, O.Adam], ids=["SGD", "Momentum", "Adam"])
@pytest.mark.parametrize("bad", [np.array([True]), np.array([1])], ids=["bool", "int"])
def test_non_float_gradient_is_refused_before_any_change(make, bad):
    model = Tiny([1.0, 2.0], [3.0])
    opt = make().setup(model)
    calls = []
    opt.add_hook(calls.append)
    model.ps[0].grad = Variable(np.array(G))
    model.ps[1].grad = Variable(bad)
    with pytest.raises(
        TypeError,
        match=rf"{make.__name__}.update\(\): parameter 1 \(unnamed\) of shape \(1,\) and dtype "
        rf"float64 has a gradient of dtype {bad.dtype}; nothing was updated.*floating point",
    ):
        opt.update()
    assert calls == []  # the hooks did not run either
    np.testing.assert_array_equal(model.ps[0].data, [1.0, 2.0])
    np.testing.assert_array_equal(model.ps[1].data, [3.0])
    assert len(opt._state) == 0 and getattr(opt, "t", 0) == 0


def test_integer_parameter_is_refused():
    p = Parameter(np.array([1, 2]))
    p.grad = Variable(np.array([0.5, 0.5]))
    with pytest.raises(TypeError, match=r"parameter 0 \(unnamed\).*has data of dtype int64"):
        O.SGD().setup([p]).update()
    np.testing.assert_array_equal(p.data, [1, 2])


def test_error_names_the_parameter_by_its_path_in_the_model():
    from zerograd_nn.models import MLP

    model = MLP([3, 2])
    model(np.ones((1, 4), dtype=np.float32))
    for p in model.params():
        p.grad = Variable(np.zeros_like(p.data))
    model.l1.b.grad = Variable(np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match=r"parameter 3 \('l1.b'\) of shape \(2,\)"):
        O.SGD().setup(model).update()


def test_hook_that_breaks_a_gradient_is_caught_before_any_update():
    model = Tiny([1.0, 2.0], [3.0])
    opt = O.SGD(lr=0.1).setup(model)
    give_grads(model, G, [1.0])

    def bad_hook(params):
        params[1].grad = Variable(np.ones(3))

    opt.add_hook(bad_hook)
    with pytest.raises(ValueError, match=r"parameter 1 \(unnamed\) of shape \(1,\)"):
        opt.update()
    np.testing.assert_array_equal(model.ps[0].data, [1.0, 2.0])


@pytest.mark.parametrize("cls", [O.ClipGrad, O.WeightDecay, O.FreezeParam])
def test_add_hook_refuses_a_hook_class_and_says_to_make_one(cls):
    """add_hook(ClipGrad) took the class: the next update called ClipGrad(params) and
    failed with 'max_norm must be a real number, got [variable(...)]'."""
    opt = O.SGD(lr=1.0).setup(Tiny([1.0]))
    with pytest.raises(TypeError) as e:
        opt.add_hook(cls)
    assert str(e.value) == (
        f"SGD.add_hook(f): f is the class {cls.__name__}, not a hook; give an instance: "
        f"add_hook({cls.__name__}(...))."
    )
    assert opt.hooks == []


def test_clip_grad_at_nan_and_inf_norms_and_without_gradients_as_the_docs_say():
    """from-pytorch.md: a nan norm leaves the gradients (DeZero's ``rate < 1`` is false;
    torch 2.x's clip_grad_norm_ makes them all nan), an inf norm scales them by 0 (torch
    too: [inf, 1], [3, 4] become [nan, 0], [0, 0]), a parameter without a gradient is
    skipped, the hook returns nothing, and WeightDecay before it has the decayed
    gradients clipped."""

    def clipped(grads, max_norm=1.0):
        params = [Parameter(np.zeros(2)) for _ in grads]
        for p, g in zip(params, grads):
            p.grad = None if g is None else Variable(np.array(g, dtype=np.float64))
        with np.errstate(invalid="ignore"):  # inf * 0
            assert O.ClipGrad(max_norm)(params) is None
        return [None if p.grad is None else p.grad.data for p in params]

    a, b = clipped([[np.nan, 1.0], [3.0, 4.0]])
    np.testing.assert_array_equal(a, [np.nan, 1.0])
    np.testing.assert_array_equal(b, [3.0, 4.0])
    a, b = clipped([[np.inf, 1.0], [3.0, 4.0]])
    np.testing.assert_array_equal(a, [np.nan, 0.0])
    np.testing.assert_array_equal(b, [0.0, 0.0])
    a, b = clipped([[3.0, 4.0], None])
    np.testing.assert_allclose(a, np.array([3.0, 4.0]) / (5.0 + 1e-6), rtol=1e-15)
    assert b is None
    p = Parameter(np.array([3.0, 4.0]))
    p.grad = Variable(np.zeros(2))
    opt = O.SGD(lr=1.0).setup([p])
    opt.add_hook(O.WeightDecay(1.0))  # the gradient becomes p itself, of norm 5
    opt.add_hook(O.ClipGrad(1.0))
    opt.update()
    np.testing.assert_allclose(p.data, [3.0, 4.0] - np.array([3.0, 4.0]) / (5.0 + 1e-6))


def _float16_adam_by_hand(p, grads, alpha, b1, b2, eps, wd=0.0, decoupled=False):
    """DeZero's Adam in float32, the parameter and the moments rounded to float16 once
    per step (numpy by hand, in the rule's order of operations)."""
    f32, f16 = np.float32, np.float16
    m = v = np.zeros_like(p)
    for n, g in enumerate(grads, 1):
        p32, g32, m32, v32 = (a.astype(f32) for a in (p, g, m, v))
        if wd and not decoupled:
            g32 = g32 + p32 * f32(wd)
        m32 = m32 + (g32 - m32) * f32(1 - b1)
        v32 = v32 + (g32 * g32 - v32) * f32(1 - b2)
        step = alpha * math.sqrt(1 - b2**n) / (1 - b1**n)
        s = m32 / (np.sqrt(v32) + f32(eps)) * f32(-step)
        if wd and decoupled:
            s = s - p32 * f32(alpha * wd)
        p, m, v = (p32 + s).astype(f16), m32.astype(f16), v32.astype(f16)
    return p, m, v


@pytest.mark.parametrize("cls, wd", [(O.Adam, 0.0), (O.Adam, 0.01), (O.AdamW, 0.01)])
@pytest.mark.parametrize("packed", [True, False])
def test_float16_adam_computes_in_float32_and_rounds_once(monkeypatch, cls, wd, packed):
    """A float16 gradient of 300: its square, 90000, is beyond float16 (65504). The step
    computed in float16 made v inf (the first step 0), then nan (inf - inf) and the
    parameter nan for good; torch.optim.Adam computes each operation in float32 and stays
    finite. zerograd computes a float16 parameter's step in float32 and rounds the
    parameter and its state once."""
    from zerograd_nn.optimizers import flat

    if not packed:
        monkeypatch.setattr(flat, "PACKED_BACKENDS", frozenset())
    p0 = np.array([1.0, 0.5, -2.0, 0.25], np.float16)
    rng = np.random.default_rng(0)
    grads = [np.array([300.0, -1.0, 2e3, 1e-2], np.float16)]
    grads += [rng.standard_normal(4).astype(np.float16) * np.float16(50) for _ in range(5)]
    p = Parameter(p0.copy())
    opt = cls(lr=1e-3, weight_decay=wd).setup([p])
    for g in grads:
        p.grad = Variable(g.copy())
        opt.update()
    want_p, want_m, want_v = _float16_adam_by_hand(
        p0, grads, 1e-3, 0.9, 0.999, 1e-8, wd, decoupled=cls is O.AdamW
    )
    assert p.data.dtype == np.float16 and np.isfinite(p.data).all()
    np.testing.assert_array_equal(p.data, want_p)
    m, v = opt.state(p, "m", "v")
    assert m.dtype == v.dtype == np.float16
    np.testing.assert_array_equal(m, want_m)
    np.testing.assert_array_equal(v, want_v)


@pytest.mark.parametrize("packed", [True, False])
def test_float16_adadelta_and_momentum_compute_in_float32_and_round_once(monkeypatch, packed):
    """AdaDelta's grad**2 of a float16 gradient of 300 overflowed: its step was 0 (PyTorch's
    torch.optim.Adadelta(rho=0.9) moves the parameter from 1 to 0.9966); SGD's momentum
    rounded each operation. Both now compute in float32 and round once (numpy by hand)."""
    from zerograd_nn.optimizers import flat

    if not packed:
        monkeypatch.setattr(flat, "PACKED_BACKENDS", frozenset())
    f16, f32 = np.float16, np.float32
    p0 = np.array([1.0, -0.5, 3.0], f16)
    grads = [np.array([300.0, 1.0, -0.01], f16), np.array([-2.0, 500.0, 0.3], f16)]

    p = Parameter(p0.copy())
    opt = O.AdaDelta(rho=0.9, eps=1e-6).setup([p])
    want, msg, msdx = p0, np.zeros(3, f16), np.zeros(3, f16)
    for g in grads:
        p.grad = Variable(g.copy())
        opt.update()
        g32, msg32, msdx32 = g.astype(f32), msg.astype(f32), msdx.astype(f32)
        msg32 = msg32 * f32(0.9) + g32 * f32(1 - 0.9) * g32
        dx = np.sqrt((msdx32 + f32(1e-6)) / (msg32 + f32(1e-6))) * g32
        msdx32 = msdx32 * f32(0.9) + dx * f32(1 - 0.9) * dx
        want = (want.astype(f32) + dx * f32(-1.0)).astype(f16)
        msg, msdx = msg32.astype(f16), msdx32.astype(f16)
    assert p.data.dtype == f16
    np.testing.assert_array_equal(p.data, want)
    assert not np.array_equal(p.data[:2], p0[:2])  # the steps of 300 and 500 were taken
    np.testing.assert_array_equal(opt.state(p, "msg")[0], msg)

    p = Parameter(p0.copy())
    opt = O.SGD(lr=0.01, momentum=0.9).setup([p])
    want, buf = p0, np.zeros(3, f16)
    for g in grads:
        p.grad = Variable(g.copy())
        opt.update()
        v32 = buf.astype(f32) * f32(0.9) + g.astype(f32)
        want, buf = (want.astype(f32) + v32 * f32(-0.01)).astype(f16), v32.astype(f16)
    np.testing.assert_array_equal(p.data, want)
    np.testing.assert_array_equal(opt.state(p, "v")[0], buf)
