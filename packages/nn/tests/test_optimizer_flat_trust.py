"""Flat parameters under bad input: whatever a user does is followed or refused, never lost.

Each test runs the same steps packed (the default, and with ``flat.PACK_LIMITS`` empty:
every size packed, as on CuPy) and per-parameter (``flat.PACKED_BACKENDS`` empty, the
per_param), and compares the bytes of the parameters and of the optimizer's state.
"""

import warnings

import numpy as np
import pytest
from optimizer_bytes import snapshot
from test_optimizer_flat import each  # SGD, MomentumSGD, AdaGrad, AdaDelta, Adam, AdamW

from zerograd import Parameter, Variable
from zerograd_nn import optimizers as O
from zerograd_nn.optimizers import flat

packed_modes = pytest.mark.parametrize("limits", [None, {}], ids=["numpy-limit", "every-size"])


@pytest.fixture
def packed(monkeypatch):
    """Call ``packed(f, limits)`` to run ``f()`` packed, under ``limits`` (None: the default)."""

    def run(f, limits):
        with monkeypatch.context() as m:
            if limits is not None:
                m.setattr(flat, "PACK_LIMITS", limits)
            return f()

    return run


def give_grads(params, rng):
    for p in params:
        p.grad = Variable(rng.standard_normal(p.data.shape).astype(p.data.dtype))


def steps(opt, params, n, *, seed=3, no_grad=(), between=None):
    """``n`` updates from seeded gradients; ``params[i]`` for ``i`` in ``no_grad`` get none."""
    rng = np.random.default_rng(seed)
    for s in range(n):
        if between is not None:
            between(s)
        give_grads(params, rng)
        for i in no_grad:
            params[i].grad = None
        opt.update()


# -- parameters sharing memory stay tied --------------------------------------------------
# Packing a parameter gives it a view of a new buffer: another parameter of the optimizer
# that shares its array would keep the old one, and the two would silently part. Ties are
# looked for among all of the optimizer's parameters, whatever their group, gradient or not.


def _tied_params():
    a = Parameter(np.arange(4.0, dtype=np.float32))
    b = Parameter(np.ones(3, np.float32))
    c = Parameter(a.data)  # tied by hand: one array, two Parameters
    d = Parameter(np.linspace(-1, 1, 5).astype(np.float32))
    return [a, b, c, d]


def _tied_view_params():
    base = np.arange(8.0, dtype=np.float32)
    a = Parameter(base[:4])
    b = Parameter(np.ones(3, np.float32))
    c = Parameter(base[2:6])  # overlaps a
    d = Parameter(np.linspace(-1, 1, 5).astype(np.float32))
    return [a, b, c, d]


tied = pytest.mark.parametrize("params", [_tied_params, _tied_view_params], ids=["same", "overlap"])


@each
@packed_modes
@tied
def test_a_tie_with_a_parameter_without_a_gradient_is_kept(make, limits, params, per_param, packed):
    def go():
        ps = params()
        opt = make().setup(ps)
        frozen = {1, 2}  # c, tied to a, has no gradient in steps 1 and 2

        def between(s):
            if s in frozen:
                opt.hooks[:] = [O.FreezeParam(ps[2])]
            else:
                opt.hooks[:] = []

        steps(opt, ps, 5, between=between)
        assert np.shares_memory(ps[0].data, ps[2].data)
        return snapshot(opt, ps)

    assert packed(go, limits) == per_param(go)


@each
@packed_modes
@tied
def test_a_tie_across_parameter_groups_is_kept(make, limits, params, per_param, packed):
    def go():
        ps = params()
        opt = make().setup([{"params": ps[:2], "lr": 0.05}, {"params": ps[2:]}])
        steps(opt, ps, 4)
        assert np.shares_memory(ps[0].data, ps[2].data)
        return snapshot(opt, ps)

    assert packed(go, limits) == per_param(go)


@packed_modes
def test_a_transposed_tie_with_a_frozen_parameter_is_kept(limits, per_param, packed):
    def go():
        a = Parameter(np.arange(6.0, dtype=np.float32).reshape(2, 3))
        b = Parameter(np.ones(3, np.float32))
        c = Parameter(a.data.T)  # a decoder's weight tied to an encoder's
        opt = O.Adam(0.01).setup([a, b, c])
        steps(opt, [a, b, c], 4, no_grad=(2,))
        np.testing.assert_array_equal(c.data, a.data.T)
        return snapshot(opt, [a, b, c])

    assert packed(go, limits) == per_param(go)


@packed_modes
@pytest.mark.parametrize("no_grad", [(), (0,)], ids=["all-with-grads", "long-one-frozen"])
def test_a_view_overlapping_a_long_one_but_not_its_neighbour_stays_tied(
    limits, no_grad, per_param, packed
):
    # sorted by start, c's neighbour is b (apart from it), but a spans them both
    def go():
        base = np.arange(40.0, dtype=np.float32)
        a, b, c = Parameter(base), Parameter(base[10:20]), Parameter(base[30:40])
        ps = [a, b, c, Parameter(np.ones(3, np.float32))]
        opt = O.MomentumSGD(0.1).setup(ps)
        steps(opt, ps, 3, no_grad=no_grad)
        assert np.shares_memory(a.data, c.data)
        return snapshot(opt, ps)

    assert packed(go, limits) == per_param(go)


# -- update_one checks what update checks -------------------------------------------------
# DeZero's update_one(param) wrote the rule straight into the parameter and its state: a
# gradient of the wrong shape failed half-way (the velocity already scaled) with numpy's
# broadcasting message.


@each
@packed_modes
def test_update_one_with_a_gradient_of_the_wrong_shape_is_refused_and_changes_nothing(
    make, limits, packed
):
    def go():
        ps = [Parameter(np.arange(4.0, dtype=np.float32)), Parameter(np.ones(3, np.float32))]
        opt = make().setup(ps)
        steps(opt, ps, 2)
        give_grads(ps, np.random.default_rng(9))
        ps[1].grad = Variable(np.zeros(9, np.float32))
        before = snapshot(opt, ps)
        with pytest.raises(
            ValueError,
            match=r"update_one\(param\): parameter 1 \(unnamed\) of shape \(3,\) has a gradient",
        ):
            opt.update_one(ps[1])
        assert snapshot(opt, ps) == before

    packed(go, limits)


def test_update_one_of_a_read_only_parameter_is_refused_and_changes_nothing():
    ps = [Parameter(np.arange(4.0, dtype=np.float32)), Parameter(np.ones(3, np.float32))]
    opt = O.MomentumSGD(0.1).setup(ps)
    steps(opt, ps, 2)
    give_grads(ps, np.random.default_rng(9))
    ps[0].data.flags.writeable = False
    before = snapshot(opt, ps)
    with pytest.raises(ValueError, match=r"update_one\(param\): parameter 0 .* holds a read-only"):
        opt.update_one(ps[0])
    assert snapshot(opt, ps) == before


def test_update_one_of_a_parameter_without_a_gradient_says_so():
    ps = [Parameter(np.arange(4.0, dtype=np.float32)), Parameter(np.ones(3, np.float32))]
    opt = O.SGD(0.1).setup(ps)
    with pytest.raises(ValueError, match=r"SGD.update_one\(param\): parameter 1 \(unnamed\) .*"):
        opt.update_one(ps[1])
    np.testing.assert_array_equal(ps[1].data, np.ones(3, np.float32))


# -- a packed parameter reshaped in place -------------------------------------------------
# numpy lets ``p.data.shape = ...`` reshape a contiguous view in place: the same object, so
# the segment's identity check passed and a steady step took a gradient of the old shape.


def reshape_in_place(a, shape):
    """``a.shape = shape``: numpy 2.5 deprecates it, but users can still do it, so the
    optimizer must still catch it; skips, saying why, once numpy refuses it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            a.shape = shape
        except AttributeError as e:
            pytest.skip(f"numpy {np.__version__} no longer sets an array's shape ({e})")


@each
@packed_modes
def test_a_parameter_reshaped_in_place_with_a_gradient_of_the_old_shape_is_refused(
    make, limits, per_param, packed
):
    def go():
        ps = [Parameter(np.arange(6.0, dtype=np.float32).reshape(2, 3))]
        ps.append(Parameter(np.ones(3, np.float32)))
        opt = make().setup(ps)
        steps(opt, ps, 3)
        reshape_in_place(ps[0].data, (3, 2))
        give_grads(ps, np.random.default_rng(9))
        ps[0].grad = Variable(np.ones((2, 3), np.float32))  # the old shape
        before = snapshot(opt, ps)
        with pytest.raises(ValueError, match=r"parameter 0 .* of shape \(3, 2\) has a gradient"):
            opt.update()
        assert snapshot(opt, ps) == before
        return before

    assert packed(go, limits) == per_param(go)


@each
@packed_modes
def test_a_parameter_reshaped_in_place_goes_on_as_per_parameter(make, limits, per_param, packed):
    # with a gradient of its new shape: stateless rules go on, the others refuse the state
    # made for the old shape, both as the per-parameter update does
    def go():
        ps = [Parameter(np.arange(6.0, dtype=np.float32).reshape(2, 3))]
        ps.append(Parameter(np.ones(3, np.float32)))
        opt = make().setup(ps)
        steps(opt, ps, 2)
        reshape_in_place(ps[0].data, (3, 2))
        try:
            steps(opt, ps, 2, seed=9)
        except ValueError as e:
            assert "was made for shape (2, 3)" in str(e)
        return snapshot(opt, ps)

    assert packed(go, limits) == per_param(go)


@packed_modes
def test_an_array_the_parameter_views_stops_following_it_at_the_first_update(limits, packed):
    # documented (how-to-train, "Flat parameters"): memory shared with an array the
    # optimizer does not see is not looked for; packing gives the parameter its own view
    def go():
        mine = np.arange(8.0, dtype=np.float32)
        a, b = Parameter(mine[:4]), Parameter(np.ones(3, np.float32))
        opt = O.SGD(0.5).setup([a, b])
        steps(opt, [a, b], 1)
        assert not np.shares_memory(a.data, mine)
        return mine, a.data.copy()

    mine, a = packed(go, limits)
    np.testing.assert_array_equal(mine, np.arange(8.0, dtype=np.float32))  # never updated
    assert not np.array_equal(a, np.arange(4.0, dtype=np.float32))  # the parameter was
