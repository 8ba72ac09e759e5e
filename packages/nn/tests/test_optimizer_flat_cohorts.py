"""Groups packed into several segments keep the steady update (flat.Packer.steady).

Adam's parameters of different step counts (a layer frozen for a while, then unfrozen; a
layer added after setup) are packed apart, as are parameters of different dtypes in one
group. From the update after such a change on, each update must run on the kept segments
without the per-parameter checks, and still write the per-parameter update's bytes, refuse
what that update refuses with nothing changed, and follow whatever the user changes. The
reference is the per-parameter update (``flat.PACKED_BACKENDS`` empty) and, for the step
counts, Adam by hand in numpy.
"""

import math

import numpy as np
import pytest
from optimizer_bytes import snapshot

from zerograd import Parameter, Variable
from zerograd_nn import layers as L
from zerograd_nn import optimizers as O
from zerograd_nn.models import MLP

ALL = {
    "SGD": lambda: O.SGD(0.1),
    "SGD-momentum": lambda: O.SGD(0.1, momentum=0.9),
    "AdaGrad": lambda: O.AdaGrad(0.1),
    "AdaDelta": lambda: O.AdaDelta(),
    "Adam": lambda: O.Adam(0.01),
    "AdamW": lambda: O.AdamW(0.01, weight_decay=0.1),
}
ADAMS = {
    "Adam": lambda: O.Adam(0.01),
    "Adam-L2": lambda: O.Adam(0.01, weight_decay=0.1),
    "AdamW": lambda: O.AdamW(0.01, weight_decay=0.1),
}
each = pytest.mark.parametrize("make", list(ALL.values()), ids=list(ALL))
each_adam = pytest.mark.parametrize("make", list(ADAMS.values()), ids=list(ADAMS))

#: (step, parameter index) without a gradient: the model's middle layer (l1.W, l1.b)
#: frozen for the first three updates, as when fine-tuning
FROZEN = {(s, i) for s in range(3) for i in (2, 3)}


@pytest.fixture
def checked(monkeypatch):
    """A list that gets one entry per update() that ran the per-parameter checks."""
    calls = []
    validate = O.Optimizer._validate

    def spy(self, *args, **kwargs):
        calls.append(args[0] if args else None)
        return validate(self, *args, **kwargs)

    monkeypatch.setattr(O.Optimizer, "_validate", spy)
    return calls


def model_of(dtype=np.float32, wide=None):
    """MLP 3-5-4-3; ``wide``: the dtype of its middle layer (l1), if not ``dtype``."""
    model = MLP((5, 4, 3))
    model(np.ones((2, 3), dtype))
    rng = np.random.default_rng(0)
    for p in model.params():
        p.data = rng.standard_normal(p.data.shape).astype(dtype)
    if wide is not None:
        for p in model.l1.params():
            p.data = p.data.astype(wide)
    return model


def run(make, steps, *, skip=(), between=None, model=None, checked=None, grads=None):
    """``make()`` set up on ``model`` after ``steps`` updates from seeded gradients.

    ``skip``: (step, index) pairs without a gradient; ``between(step, model, opt)`` runs
    before each step's gradients; ``checked``: the fixture's list, turned into the steps
    whose update ran the per-parameter checks; ``grads``: a list that gets each step's
    gradients (None where skipped).
    """
    model = model or model_of()
    opt = make().setup(model)
    rng = np.random.default_rng(3)
    ran = []
    for s in range(steps):
        if between is not None:
            between(s, model, opt)
        given = []
        for i, p in enumerate(model.params()):
            g = rng.standard_normal(p.data.shape).astype(p.data.dtype)
            p.grad = None if (s, i) in skip else Variable(g)
            given.append(None if (s, i) in skip else g.copy())
        if grads is not None:
            grads.append(given)
        before = len(checked) if checked is not None else 0
        opt.update()
        if checked is not None and len(checked) != before:
            ran.append(s)
    if checked is not None:
        checked[:] = ran
    return model, opt


def assert_same_bytes(per_param, model_kw=None, **kw):
    """``run(**kw)`` packed and per-parameter (each on ``model_of(**model_kw)``): the same
    bytes. Returns the packed run's model and optimizer."""
    model, opt = run(model=model_of(**(model_kw or {})), **kw)
    checked = kw.pop("checked", None)
    ran = list(checked or ())
    kw.pop("grads", None)
    ref_model, ref_opt = per_param(lambda: run(model=model_of(**(model_kw or {})), **kw))
    if checked is not None:
        checked[:] = ran  # the reference's own checks left out
    assert snapshot(opt, list(model.params())) == snapshot(ref_opt, list(ref_model.params()))
    return model, opt


@each_adam
def test_a_layer_frozen_then_unfrozen_goes_back_to_the_steady_update(make, per_param, checked):
    """It took the checked update at every step after unfreezing (one segment per group
    was all the steady update took)."""
    model, opt = assert_same_bytes(per_param, make=make, steps=8, skip=FROZEN, checked=checked)
    assert checked == [0, 3]  # the first update packs, the unfrozen layer's first repacks
    segments = list(opt._packer.segments)
    assert [k[3] for k in segments] == [0, 3]  # its own segment: 3 steps behind the others
    assert model.l1.W.data.base is model.l1.b.data.base
    assert model.l1.W.data.base is not model.l0.W.data.base
    assert model.l0.W.data.base is model.l2.b.data.base


@each
def test_parameters_of_two_dtypes_in_one_group_take_the_steady_update(make, per_param, checked):
    kw = {"wide": np.float64}
    model, _ = assert_same_bytes(per_param, make=make, steps=5, model_kw=kw, checked=checked)
    assert checked == [0]
    assert model.l1.W.data.dtype == np.float64 and model.l0.W.data.dtype == np.float32
    assert model.l1.W.data.base is model.l1.b.data.base
    assert model.l0.W.data.base is model.l2.W.data.base


def adam_by_hand(make, w0, grads, b1=0.9, b2=0.999, eps=1e-8):
    """Each parameter's trajectory end, with a step count of its own (None: no step)."""
    opt = make()
    lr, wd = opt.lr, opt.weight_decay
    decoupled = isinstance(opt, O.AdamW)
    ws = [w.copy() for w in w0]
    ms = [np.zeros_like(w) for w in w0]
    vs = [np.zeros_like(w) for w in w0]
    ts = [0] * len(w0)
    for given in grads:
        for i, g in enumerate(given):
            if g is None:
                continue
            if wd and not decoupled:
                g = g + ws[i] * wd
            ts[i] += 1
            ms[i] = ms[i] + (g - ms[i]) * (1 - b1)
            vs[i] = vs[i] + (g * g - vs[i]) * (1 - b2)
            step = lr * math.sqrt(1 - b2 ** ts[i]) / (1 - b1 ** ts[i])
            delta = ms[i] / (np.sqrt(vs[i]) + eps) * -step
            if decoupled:
                delta = delta - ws[i] * (lr * wd)
            ws[i] = ws[i] + delta
    return ws


@each_adam
def test_a_parameter_missing_a_step_in_the_steady_update_leaves_its_cohort(
    make, per_param, checked
):
    # l0.W misses step 6 (one behind its cohort from then on), l1.b step 9 (one behind
    # l1.W); each step is bias-corrected with the parameter's own count
    skip = FROZEN | {(6, 0), (9, 3)}
    kw = {"dtype": np.float64}
    grads = []
    model, opt = assert_same_bytes(
        per_param,
        make=make,
        steps=13,
        skip=skip,
        model_kw=kw,
        checked=checked,
        grads=grads,
    )
    assert checked == [0, 3, 6, 7, 9, 10]  # steady again once the cohorts are repacked
    want = adam_by_hand(make, [p.data for p in model_of(**kw).params()], grads)
    for i, (p, w) in enumerate(zip(model.params(), want)):
        np.testing.assert_allclose(p.data, w, rtol=1e-12, atol=1e-15, err_msg=f"param {i}")
    assert opt.t == 13
    counts = {k: e.get("t", 13) for k, e in opt.state_dict()["state"].items()}
    assert sorted(counts.values()) == [9, 10, 12, 13, 13, 13]  # l1.b, l1.W, l0.W, the rest


def _rebind(model, opt, tmp_path):
    model.l1.W.data = (model.l1.W.data * 0.5).copy()  # in the unfrozen layer's segment


def _rebind_other(model, opt, tmp_path):
    model.l2.b.data = model.l2.b.data + 1.0


def _load_weights(model, opt, tmp_path):
    saved = model_of()
    for p in saved.params():
        p.data = p.data + 1.0
    saved.save_weights(tmp_path / "w.npz")
    model.load_weights(tmp_path / "w.npz")


def _add_layer(model, opt, tmp_path):
    model.extra = L.Linear(2, in_size=3)  # a third step count
    model.extra.W.data = np.full((3, 2), 0.25, np.float32)


def _load_state(model, opt, tmp_path):
    opt.load_state_dict(opt.state_dict())


def _clear_state(model, opt, tmp_path):
    opt.clear_state()


def _write_state(model, opt, tmp_path):
    for a in opt.state(model.l1.b, "m", "v"):
        a *= 0.5  # in place, through the views the next update reads


CHANGES = [_rebind, _rebind_other, _load_weights, _add_layer, _load_state, _clear_state]


@each_adam
@pytest.mark.parametrize("change", [*CHANGES, _write_state], ids=lambda f: f.__name__[1:])
def test_what_the_user_changes_between_steady_updates_of_several_segments_is_followed(
    make, change, per_param, tmp_path
):
    def between(step, model, opt):
        if step == 6:  # after two steady updates on the two cohorts' segments
            change(model, opt, tmp_path)

    assert_same_bytes(per_param, make=make, steps=9, skip=FROZEN, between=between)


@pytest.mark.parametrize("change", CHANGES, ids=lambda f: f.__name__[1:])
def test_what_the_user_changes_in_a_group_of_two_dtypes_is_followed(change, per_param, tmp_path):
    def between(step, model, opt):
        if step == 3:
            change(model, opt, tmp_path)

    kw = {"wide": np.float64}
    make = ALL["SGD-momentum"]
    assert_same_bytes(per_param, make=make, steps=5, between=between, model_kw=kw)


def _two_cohorts(steps=6):
    model, opt = run(ADAMS["Adam"], steps, skip=FROZEN)
    assert len(opt._packer.segments) == 2
    params = list(model.params())
    give = np.random.default_rng(9)
    for p in params:
        p.grad = Variable(give.standard_normal(p.data.shape).astype(np.float32))
    return params, opt


def test_a_gradient_of_the_wrong_shape_in_a_second_segment_is_refused_and_changes_nothing():
    params, opt = _two_cohorts()
    params[3].grad = Variable(np.zeros((5, 1), np.float32))
    before, counts = snapshot(opt, params), opt.state_dict()["state"]
    with pytest.raises(
        ValueError, match=r"Adam.update\(\): parameter 3 \('l1.b'\) of shape .* has a gradient"
    ):
        opt.update()
    assert snapshot(opt, params) == before and opt.t == 6
    after = opt.state_dict()["state"]
    assert {k: e.get("t") for k, e in after.items()} == {k: e.get("t") for k, e in counts.items()}


def test_a_read_only_view_in_a_second_segment_is_refused_and_changes_nothing():
    params, opt = _two_cohorts()
    params[2].data.flags.writeable = False
    before = snapshot(opt, params)
    with pytest.raises(ValueError, match=r"parameter 2 \('l1.W'\) .* holds a read-only array"):
        opt.update()
    assert snapshot(opt, params) == before and opt.t == 6


def test_a_group_reordered_under_segments_that_still_hold_is_laid_out_again(per_param, checked):
    """Its parameters picked by their old places would not be the segments' own."""

    def go():
        rng = np.random.default_rng(0)
        ps = [Parameter(rng.standard_normal(s)) for s in [(3, 2), (4,), (2, 2)]]
        opt = O.Adam(0.01).setup([{"params": list(ps)}])
        ran = []
        for s in range(9):
            if s == 5:  # [a, b, c] -> [b, a, c]: the two cohorts' segments keep their order
                opt.param_groups[0]["params"][:] = [ps[1], ps[0], ps[2]]
            for i, p in enumerate(ps):
                p.grad = None if (s < 2 and i == 1) else Variable(rng.standard_normal(p.shape))
            before = len(checked)
            opt.update()
            if len(checked) != before:
                ran.append(s)
        return [p.data.tobytes() for p in ps], ran

    got, steps = go()
    want, _ = per_param(go)
    assert got == want
    assert steps == [0, 2, 5]  # checked once after the reordering, steady from then on


@each
def test_a_whole_group_frozen_keeps_the_steady_update_of_the_others(make, per_param, checked):
    """A group without segments was one segment short of the steady update's count."""

    def go():
        model = model_of()
        ps = list(model.params())
        opt = make().setup([{"params": ps[:4]}, {"params": ps[4:], "lr": 0.05}])
        rng = np.random.default_rng(3)
        ran = []
        for s in range(8):
            for i, p in enumerate(ps):
                g = Variable(rng.standard_normal(p.data.shape).astype(np.float32))
                p.grad = None if (2 <= s < 5 and i >= 4) else g
            before = len(checked)
            opt.update()
            if len(checked) != before:
                ran.append(s)
        return snapshot(opt, ps), ran

    got, ran = go()
    want, _ = per_param(go)
    assert got == want
    assert ran == [0, 2, 5]  # steady while group 1 is frozen, and after it comes back


@each_adam
def test_unpacked_parameters_losing_their_gradients_leave_a_layout_of_two_segments_valid(
    make, per_param, checked, monkeypatch
):
    """A group packed into two segments (l1.b a step count behind, having been frozen),
    with parameters no segment packs before them (l0.W and l1.W, over PACK_LIMITS). The
    segments were laid out by places among the parameters with a gradient, the unpacked
    ones counted; once those had no gradient, the count matched and the update picked
    places past the end: an IndexError at every update from then on."""
    from zerograd_nn.optimizers import flat

    monkeypatch.setattr(flat, "PACK_LIMITS", {"numpy": 12})  # l0.W (15), l1.W (20) left out
    skip = FROZEN | {(s, i) for s in range(5, 8) for i in (0, 2)}
    _, opt = assert_same_bytes(per_param, make=make, steps=10, skip=skip, checked=checked)
    assert [k[3] for k in opt._packer.segments] == [0, 3]
    # while every parameter with a gradient is packed, the two segments take the steady
    # update; with the unpacked ones, every update is checked
    assert checked == [0, 1, 2, 3, 4, 8, 9]


def test_a_gradient_of_another_dtype_dropped_before_two_segments_is_no_index_error():
    """The same with a group of two dtypes (two segments) and two parameters whose
    gradients come in float64 (never packed): a step without those gradients failed."""
    x, y = Parameter(np.ones(3, np.float32)), Parameter(np.ones(3, np.float32))
    a, b = Parameter(np.ones(2, np.float32)), Parameter(np.ones(2, np.float64))
    opt = O.SGD(lr=0.5).setup([x, y, a, b])
    for s in range(4):
        x.grad = y.grad = Variable(np.ones(3)) if s < 2 else None
        a.grad, b.grad = Variable(np.ones(2, np.float32)), Variable(np.ones(2))
        opt.update()
    np.testing.assert_array_equal(x.data, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(a.data, [-1.0, -1.0])
    np.testing.assert_array_equal(b.data, [-1.0, -1.0])


def test_tied_parameters_of_two_step_counts_are_updated_in_the_groups_order(per_param):
    """Two Parameters holding one array (tied weights) keep the per-parameter update, one
    after the other, in their group's order. With the bias and the decoder a step behind
    (no gradient at the first update), the packed update took the left-out parameters
    cohort by cohort (the decoder's first): the tied array got the two steps in the other
    order, rounded otherwise, and the bytes were not the per-parameter update's."""

    def go():
        rng = np.random.default_rng(0)
        w = rng.standard_normal((4, 3))
        b, enc, dec = Parameter(rng.standard_normal(3)), Parameter(w), Parameter(w)
        opt = O.Adam(0.01).setup([b, enc, dec])
        for s in range(6):
            b.grad = None if s == 0 else Variable(rng.standard_normal(3))
            enc.grad = Variable(rng.standard_normal((4, 3)))
            dec.grad = None if s == 0 else Variable(rng.standard_normal((4, 3)))
            opt.update()
        assert enc.data is dec.data
        return snapshot(opt, [b, enc, dec])

    assert go() == per_param(go)
