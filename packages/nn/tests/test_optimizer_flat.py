"""Flat parameters: one buffer per group and dtype, the same bytes as per-parameter updates.

The reference is the per-parameter update, forced by packing no backend
(``flat.PACKED_BACKENDS`` empty): every test runs the same steps both ways and compares the
bytes of the parameters and of the optimizer's state.
"""

import pickle

import numpy as np
import pytest
from optimizer_bytes import snapshot, state_bytes

from zerograd import Parameter, Variable
from zerograd_nn import layers as L
from zerograd_nn import optimizers as O
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import flat

ALL = {
    "SGD": lambda **k: O.SGD(0.1, **k),
    "SGD-momentum": lambda **k: O.SGD(0.1, momentum=0.9, **k),
    "MomentumSGD": lambda **k: O.MomentumSGD(0.1, **k),
    "AdaGrad": lambda **k: O.AdaGrad(0.1, **k),
    "AdaDelta": lambda **k: O.AdaDelta(**k),
    "Adam": lambda **k: O.Adam(0.01, **k),
    "AdamW": lambda **k: O.AdamW(0.01, **k),
}
each = pytest.mark.parametrize("make", list(ALL.values()), ids=list(ALL))


def give_grads(params, rng, dtype=None):
    for p in params:
        g = rng.standard_normal(p.data.shape).astype(dtype or p.data.dtype)
        p.grad = Variable(g)


def model_of(dtype=np.float32, sizes=(5, 4, 3)):
    model = MLP(sizes)
    model(np.ones((2, 3), dtype))
    rng = np.random.default_rng(0)  # the same start for the packed and the reference run
    for p in model.params():
        p.data = rng.standard_normal(p.data.shape).astype(dtype)
    return model


def train(make, steps, *, wd=0.0, dtype=np.float32, hooks=(), groups=False, between=None):
    """A model and optimizer after ``steps`` updates from seeded gradients.

    ``between(step, model, opt)`` runs before each step's gradients (the user's doings).
    """
    model = model_of(dtype)
    params = list(model.params())
    if groups:
        target = [{"params": params[:2], "lr": 0.05}, {"params": params[2:]}]
    else:
        target = model
    opt = make(weight_decay=wd).setup(target)
    for h in hooks:
        opt.add_hook(h)
    rng = np.random.default_rng(3)
    for s in range(steps):
        if between is not None:
            between(s, model, opt)
        give_grads(model.params(), rng)
        opt.update()
    return model, opt


def assert_same_run(per_param, **kw):
    """Run ``train(**kw)`` packed and per-parameter; both end with the same bytes."""
    model, opt = train(**kw)
    ref_model, ref_opt = per_param(lambda: train(**kw))
    got = snapshot(opt, list(model.params()))
    want = snapshot(ref_opt, list(ref_model.params()))
    assert got == want
    return model, opt


@each
@pytest.mark.parametrize("wd", [0.0, 0.1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_packed_updates_write_the_bytes_of_per_parameter_updates(make, wd, dtype, per_param):
    model, opt = assert_same_run(per_param, make=make, steps=4, wd=wd, dtype=dtype)
    params = list(model.params())
    bufs = {id(p.data.base) for p in params}
    assert len(bufs) == 1 and params[0].data.base is not None  # views of one buffer
    flat_buf = params[0].data.base
    at = 0
    for p in params:  # one after another, in the order the optimizer updates them
        assert np.shares_memory(p.data, flat_buf[at : at + p.data.size])
        at += p.data.size
    assert at == flat_buf.size


@each
def test_groups_with_their_own_hyperparameters_and_hooks(make, per_param):
    hooks = (O.WeightDecay(0.01), O.ClipGrad(0.5))
    model, opt = assert_same_run(per_param, make=make, steps=3, groups=True, hooks=hooks)
    params = list(model.params())
    assert params[0].data.base is params[1].data.base  # group 0
    assert params[2].data.base is params[3].data.base  # group 1
    assert params[0].data.base is not params[2].data.base


@each
def test_rebinding_param_data_is_followed(make, per_param):
    def rebind(step, model, opt):
        if step == 2:  # what load_weights, to() and the user's hands do: a new array
            w = model.l0.W
            w.data = (w.data * 0.5).copy()

    model, opt = assert_same_run(per_param, make=make, steps=4, between=rebind)
    assert model.l0.W.data.base is model.l1.W.data.base  # packed again, with the new values


@each
def test_load_weights_is_followed(make, per_param, tmp_path):
    saved = model_of()
    for p in saved.params():
        p.data = p.data + 1.0
    path = tmp_path / "w.npz"
    saved.save_weights(path)

    def load(step, model, opt):
        if step == 2:
            model.load_weights(path)

    model, _ = assert_same_run(per_param, make=make, steps=4, between=load)
    assert model.l0.W.data.base is model.l0.b.data.base


@each
def test_a_layer_added_after_setup_is_packed_in(make, per_param):
    def grow(step, model, opt):
        if step == 2:
            model.extra = L.Linear(2, in_size=3)
            model.extra.W.data = np.full((3, 2), 0.25, np.float32)

    model, opt = assert_same_run(per_param, make=make, steps=4, between=grow)
    if isinstance(opt, O.Adam):  # its step count is behind the others': a buffer of its own
        packed = [seg.data for seg in opt._packer.segments.values()]
        assert any(model.extra.W.data.base is b for b in packed)
        assert model.extra.W.data.base is not model.l0.W.data.base
    else:
        assert model.extra.W.data.base is model.l0.W.data.base


@each
def test_frozen_parameters_stay_as_they_were(make, per_param):
    frozen = {}

    def freeze(step, model, opt):
        if step == 1:
            opt.add_hook(O.FreezeParam(model.l1))
        if step == 2:
            frozen["W"] = model.l1.W.data.copy()
            frozen["state"] = state_bytes(opt, [model.l1.W])
        if step == 3:
            opt.hooks.pop()  # unfrozen: packed in again, its state carried over

    model, opt = assert_same_run(per_param, make=make, steps=5, between=freeze)
    model2, opt2 = train(make, 3, between=freeze)
    np.testing.assert_array_equal(model2.l1.W.data, frozen["W"])
    assert state_bytes(opt2, [model2.l1.W]) == frozen["state"]


@each
def test_parameters_without_a_gradient_are_not_moved(make):
    model, opt = train(make, 2)
    w = model.l0.W
    before = w.data.copy()
    st = state_bytes(opt, [w])
    rng = np.random.default_rng(9)
    give_grads(model.params(), rng)
    w.cleargrad()
    opt.update()
    np.testing.assert_array_equal(w.data, before)
    assert state_bytes(opt, [w]) == st


@each
def test_load_state_dict_and_clear_state_are_followed(make, per_param):
    def reload(step, model, opt):
        if step == 2:
            opt.load_state_dict(opt.state_dict())
        if step == 3:
            opt.clear_state()

    assert_same_run(per_param, make=make, steps=5, between=reload)


@each
def test_state_written_through_optimizer_state_between_steady_steps_is_followed(make, per_param):
    # state() may add a state name to a packed parameter's dict: packed segments trust the
    # dicts they left, so the next update must pack again (the per-parameter bytes)
    def touch(step, model, opt):
        p = list(model.params())[1]
        if step == 2:
            opt.state(p, *opt._state_for(opt.defaults), "extra")
        if step == 3:
            m = opt.state(p, *opt._state_for(opt.defaults))
            for a in m:
                a *= 0.5  # written in place: the segment's views, read by the next update

    assert_same_run(per_param, make=make, steps=5, between=touch)


@each
def test_pickled_optimizer_goes_on_with_the_same_bytes(make, per_param):
    def go():
        model, opt = train(make, 2)
        model, opt = pickle.loads(pickle.dumps((model, opt)))
        rng = np.random.default_rng(11)
        for _ in range(2):
            give_grads(model.params(), rng)
            opt.update()
        return snapshot(opt, list(model.params()))

    assert go() == per_param(go)


def test_a_float64_gradient_of_a_float32_parameter_takes_the_per_parameter_update(per_param):
    def go():
        model, opt = train(ALL["Adam"], 2)
        rng = np.random.default_rng(5)
        give_grads(model.params(), rng)
        model.l0.W.grad = Variable(model.l0.W.grad.data.astype(np.float64))
        opt.update()
        return model, opt

    model, opt = go()
    ref_model, ref_opt = per_param(go)
    assert snapshot(opt, list(model.params())) == snapshot(ref_opt, list(ref_model.params()))
    assert model.l0.W.data.dtype == np.float32


def test_parameters_sharing_one_array_stay_tied(per_param):
    def go():
        a = Parameter(np.arange(4.0, dtype=np.float32))
        b = Parameter(np.ones(3, np.float32))
        c = Parameter(a.data)  # tied by hand: one array, two Parameters
        opt = O.Adam(0.1).setup([a, b, c])
        rng = np.random.default_rng(2)
        for _ in range(3):
            give_grads([a, b, c], rng)
            opt.update()
        assert a.data is c.data
        return snapshot(opt, [a, b, c])

    assert go() == per_param(go)


def test_dtypes_are_packed_apart(per_param):
    def go():
        a = Parameter(np.arange(4.0, dtype=np.float32))
        b = Parameter(np.ones(3, np.float64))
        d = Parameter(np.ones(2, np.float32))
        opt = O.MomentumSGD(0.1).setup([a, b, d])
        rng = np.random.default_rng(4)
        for _ in range(3):
            give_grads([a, b, d], rng)
            opt.update()
        return a, b, d, snapshot(opt, [a, b, d])

    a, b, d, got = go()
    assert a.data.base is d.data.base and a.data.base is not b.data.base
    assert got == per_param(go)[3]


@each
def test_parameters_over_the_backend_s_limit_take_the_per_parameter_update(
    make, per_param, monkeypatch
):
    # model_of's MLP (5, 4, 3) on 3 inputs: l1.W has 15 elements, l2.W 20, l3.W 12, the
    # biases 5, 4 and 3; a limit of 12 leaves l1.W and l2.W out of the flat buffer
    monkeypatch.setattr(flat, "PACK_LIMITS", {"numpy": 12})
    model, opt = assert_same_run(per_param, make=make, steps=4)
    big = [p for p in model.params() if p.data.size > 12]
    small = [p for p in model.params() if p.data.size <= 12]
    assert sorted(p.data.size for p in big) == [15, 20]
    assert all(p.data.base is None for p in big)  # their own arrays, updated in place
    assert len({id(p.data.base) for p in small}) == 1 and small[0].data.base is not None
    assert small[0].data.base.size == sum(p.data.size for p in small)


def test_the_numpy_limit_packs_small_parameters_and_leaves_large_ones_out():
    # an MLP 784-1000-1000-10's weight matrices take the per-parameter update on numpy (a
    # gather of 7 MB per step cost more than the calls it saved); its biases are packed
    big = Parameter(np.zeros((300, 300), np.float32))  # 90,000 elements, over 65,536
    small = [Parameter(np.zeros(n, np.float32)) for n in (1000, 10)]
    opt = O.SGD(0.1).setup([big, *small])
    for p in (big, *small):
        p.grad = Variable(np.ones(p.data.shape, np.float32))
    opt.update()
    assert big.data.base is None and float(big.data[0, 0]) == np.float32(-0.1)
    assert small[0].data.base is small[1].data.base is not None


@each
def test_update_one_writes_through_the_views(make, per_param):
    def go():
        model, opt = train(make, 2)
        rng = np.random.default_rng(8)
        give_grads(model.params(), rng)
        opt.update_one(model.l1.b)
        opt.update()
        return snapshot(opt, list(model.params()))

    assert go() == per_param(go)


def test_lent_gradient_buffers_are_what_the_update_reads(per_param):
    def go(lend):
        model, opt = train(ALL["Adam"], 2)
        rng = np.random.default_rng(6)
        give_grads(model.params(), rng)
        if lend:
            bufs, covered = opt.lend_gradients(0.5)
            assert len(bufs) == 1 and [id(p) for p in covered] == [id(p) for p in model.params()]
            for p in covered:
                assert np.shares_memory(p.grad.data, bufs[0])
            bufs[0] *= 2.0  # what an allreduce does in place: the update reads it
        opt.update()
        return snapshot(opt, list(model.params()))

    assert go(True) == per_param(lambda: go(False))  # 0.5 * 2 is exact: the same steps


def test_lending_gradients_packs_parameters_of_every_size(per_param, monkeypatch):
    # data-parallel training gathers every gradient as it scales it: no size is left out
    monkeypatch.setattr(flat, "PACK_LIMITS", {"numpy": 12})

    def go(lend):
        model, opt = train(ALL["SGD-momentum"], 2)
        big = [p for p in model.params() if p.data.size > 12]
        assert len(big) == 2 and all(p.data.base is None for p in big)  # left out so far
        rng = np.random.default_rng(6)
        bases = []
        for _ in range(2):
            give_grads(model.params(), rng)
            if lend:
                bufs, covered = opt.lend_gradients(0.5)
                assert len(covered) == 6 and len(bufs) == 1
                bufs[0] *= 2.0
            opt.update()
            bases.append(model.l1.W.data.base)
        if lend:  # all in one buffer, and the second step reused the first one's
            assert all(p.data.base is model.l1.b.data.base is not None for p in big)
            assert bases[0] is bases[1]
        return snapshot(opt, list(model.params()))

    assert go(True) == per_param(lambda: go(False))


def test_a_lent_gradient_kept_by_the_user_is_never_written_again():
    model, opt = train(ALL["SGD"], 1)
    rng = np.random.default_rng(10)
    give_grads(model.params(), rng)
    opt.lend_gradients()
    opt.update()
    kept = model.l0.W.grad.data  # a view of the gradient buffer
    want = kept.copy()
    for _ in range(2):
        give_grads(model.params(), rng)
        opt.lend_gradients()
        opt.update()
        assert not np.shares_memory(model.l0.W.grad.data, kept)
    np.testing.assert_array_equal(kept, want)


def test_an_optimizer_written_dezero_s_way_lends_nothing():
    class Plain(O.Optimizer):
        def update_one(self, param):
            param.data -= 0.1 * param.grad.data

    p = Parameter(np.ones(3, np.float32))
    p.grad = Variable(np.ones(3, np.float32))
    opt = Plain().setup([p])
    assert opt.lend_gradients() == ([], [])
    opt.update()
    np.testing.assert_array_equal(p.data, np.full(3, 0.9, np.float32))


# From the second update on, a step whose packed parameters and gradients match the last
# one's runs on the kept segments without the per-parameter checks (flat.Packer.steady):
# anything that would fail those checks must still fail them, changing nothing.


@each
def test_switching_weight_decay_on_between_steady_steps_writes_the_per_parameter_bytes(
    make, per_param
):
    def between(step, model, opt):
        if step == 3:
            opt.weight_decay = 0.05  # one scratch buffer more from here on

    assert_same_run(per_param, make=make, steps=5, between=between)


def test_a_gradient_of_the_wrong_shape_after_steady_steps_is_refused_and_changes_nothing():
    model, opt = train(ALL["Adam"], 3)
    params = list(model.params())
    give_grads(params, np.random.default_rng(9))
    params[1].grad = Variable(np.zeros(params[1].data.shape + (1,), np.float32))
    before = snapshot(opt, params)
    with pytest.raises(
        ValueError,
        match=r"Adam.update\(\): parameter 1 \('l0.b'\) of shape .* "
        r"has a gradient of shape",
    ):
        opt.update()
    assert snapshot(opt, params) == before and opt.t == 3


def test_a_parameter_view_made_read_only_after_steady_steps_is_refused_and_changes_nothing():
    model, opt = train(ALL["SGD-momentum"], 3)
    params = list(model.params())
    give_grads(params, np.random.default_rng(9))
    params[2].data.flags.writeable = False
    before = snapshot(opt, params)
    with pytest.raises(ValueError, match=r"parameter 2 \('l1.W'\) .* holds a read-only array"):
        opt.update()
    assert snapshot(opt, params) == before
