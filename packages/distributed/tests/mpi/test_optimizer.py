"""broadcast_params and DataParallelOptimizer on every rank: averaged gradients, packing,
missing gradients, lazy layers, and failures that change nothing on any rank."""

from __future__ import annotations

import copy
import re
import tempfile
import warnings

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Parameter, StaticGraphWarning, static_graph
from zerograd_distributed import DataParallelOptimizer, broadcast_params
from zerograd_nn import DataLoader
from zerograd_nn.layers import Layer, Linear
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import SGD, Adam, ClipGrad, FreezeParam, MomentumSGD, WeightDecay, flat
from zerograd_nn.schedulers import ReduceLROnPlateau
from zerograd_nn.training import Trainer


def _params(comm, seed_offset=0, shapes=((3, 4), (4,)), dtype=np.float32):
    rng = np.random.default_rng(100 * comm.rank + seed_offset)  # different on every rank
    return [Parameter(rng.standard_normal(s).astype(dtype)) for s in shapes]


def _gathered(comm, arrays):
    return [comm.allgather(np.ascontiguousarray(a)) for a in arrays]


def test_broadcast_params_gives_root_values(comm):
    params = _params(comm)
    root = comm.size - 1
    root_values = comm.bcast_obj([p.data.copy() for p in params], root=root)
    assert broadcast_params(params, comm, root=root) == 2
    for p, want in zip(params, root_values):
        np.testing.assert_array_equal(p.data, want)
        assert p.data.dtype == np.float32 and p.data.shape == want.shape


def test_broadcast_params_leaves_unsized_layers_for_later(comm):
    model = MLP((5, 2))  # Linear layers size W at the first call
    assert broadcast_params(model, comm) == 2  # the two biases
    x = np.random.default_rng(comm.rank).random((4, 3), dtype=np.float32)
    model(x)  # sizes W differently on every rank
    assert broadcast_params(model, comm) == 4
    for a in _gathered(comm, [p.data for p in model.params()]):
        for r in range(comm.size):
            np.testing.assert_array_equal(a[r], a[0])


def test_update_averages_gradients(comm):
    params = _params(comm, 1)
    broadcast_params(params, comm)
    start = [p.data.copy() for p in params]
    for i, p in enumerate(params):
        p.grad = Parameter(np.full(p.data.shape, comm.rank + i, np.float32))
    mean_grads = [comm.allreduce(p.grad.data, "mean") for p in params]
    DataParallelOptimizer(SGD(lr=0.5), comm).setup(params).update()
    for p, p0, g in zip(params, start, mean_grads):
        np.testing.assert_allclose(p.grad.data, g, rtol=1e-6)
        np.testing.assert_allclose(p.data, p0 - 0.5 * g, rtol=1e-6)
    for a in _gathered(comm, [p.data for p in params]):
        assert all(np.array_equal(a[r], a[0]) for r in range(comm.size))


def test_one_allreduce_per_dtype_or_bucket(comm, monkeypatch):
    shapes = ((10, 10), (10,), (10, 10), (10,))
    params = _params(comm, 2, shapes) + _params(comm, 3, ((7,),), np.float64)
    broadcast_params(params, comm)
    calls = []
    real = comm.allreduce_sum_inplace
    monkeypatch.setattr(comm, "allreduce_sum_inplace", lambda b: calls.append(b.size) or real(b))
    for p in params:
        p.grad = Parameter(np.ones_like(p.data))
    DataParallelOptimizer(SGD(), comm).setup(params).update()
    expected = [220, 7] if comm.size > 1 else []  # one rank: nothing to send
    assert calls == expected
    calls.clear()
    for p in params:
        p.grad = Parameter(np.ones_like(p.data))
    DataParallelOptimizer(SGD(), comm, bucket_bytes=440).setup(params).update()
    assert calls == ([110, 110, 7] if comm.size > 1 else [])


def test_gradient_missing_on_some_ranks_counts_as_zero(comm):
    params = _params(comm, 4)
    broadcast_params(params, comm)
    start = [p.data.copy() for p in params]
    params[0].grad = Parameter(np.full((3, 4), 2.0 * (comm.rank + 1), np.float32))
    if comm.rank == 0:  # only rank 0 has a gradient for the bias
        params[1].grad = Parameter(np.full(4, 6.0, np.float32))
    DataParallelOptimizer(SGD(lr=1.0), comm).setup(params).update()
    g0 = 2.0 * sum(r + 1 for r in range(comm.size)) / comm.size
    np.testing.assert_allclose(params[0].data, start[0] - g0, rtol=1e-6)
    np.testing.assert_allclose(params[1].data, start[1] - 6.0 / comm.size, rtol=1e-6)
    both = comm.allgather(params[1].data)
    assert all(np.array_equal(both[r], both[0]) for r in range(comm.size))


def test_no_gradient_anywhere_leaves_parameter_alone(comm):
    params = _params(comm, 5)
    broadcast_params(params, comm)
    params[0].grad = Parameter(np.ones((3, 4), np.float32))
    before = params[1].data.copy()
    DataParallelOptimizer(SGD(lr=1.0), comm).setup(params).update()
    assert params[1].grad is None
    np.testing.assert_array_equal(params[1].data, before)


def test_lazy_layer_is_broadcast_at_first_update_which_skips(comm):
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one rank has nothing to broadcast")
    model = MLP((4, 3))
    opt = DataParallelOptimizer(MomentumSGD(lr=0.1), comm).setup(model)
    rng = np.random.default_rng(comm.rank)
    x, t = rng.random((5, 2), dtype=np.float32), rng.integers(0, 3, 5)
    loss = F.softmax_cross_entropy(model(x), t)
    model.cleargrads()
    loss.backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt.update()
    root_values = comm.bcast_obj([p.data.copy() for p in model.params()])
    for p, want in zip(model.params(), root_values):  # rank 0's initial values, not updated
        np.testing.assert_array_equal(p.data, want)
    if comm.rank == 0:
        assert "had not been broadcast from rank 0" in str(caught[0].message)
    loss = F.softmax_cross_entropy(model(x), t)
    model.cleargrads()
    loss.backward()
    opt.update()  # a real step now, identical on every rank
    for a, start in zip(_gathered(comm, [p.data for p in model.params()]), root_values):
        assert all(np.array_equal(a[r], a[0]) for r in range(comm.size))
        assert not np.array_equal(a[0], start)


def test_different_models_raise_on_every_rank_and_change_nothing(comm):
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one rank cannot disagree with itself")
    shapes = ((3, 4), (4,)) if comm.rank == 0 else ((3, 4), (5,))
    params = _params(comm, 6, shapes)
    before = [p.data.copy() for p in params]
    for p in params:
        p.grad = Parameter(np.ones_like(p.data))
    inner = SGD(lr=1.0)
    differ = "; ".join(
        rf"rank {r}: parameter 1 is one of shape \(5,\) and dtype float32 where rank 0 has one "
        rf"of shape \(4,\) and dtype float32"
        for r in range(1, comm.size)
    )
    with pytest.raises(
        ValueError, match=rf"setup\(\): the ranks hold different parameters \({differ}\)"
    ):
        DataParallelOptimizer(inner, comm).setup(params)
    assert inner.target is None and inner.param_groups == []  # the wrapped one is as it was
    # set up before it was wrapped: the first update compares, before anything moves
    opt = DataParallelOptimizer(SGD(lr=1.0).setup(params), comm)
    with pytest.raises(
        ValueError, match=rf"update\(\): the ranks hold different parameters \({differ}"
    ):
        opt.update()
    for p, b in zip(params, before):
        np.testing.assert_array_equal(p.data, b)
        np.testing.assert_array_equal(p.grad.data, np.ones_like(b))
    with pytest.raises(
        ValueError, match=rf"broadcast_params: the ranks hold different parameters \({differ}"
    ):
        broadcast_params(params, comm)
    assert comm.allreduce_obj(1) == comm.size  # every rank is still in step


class _TwoLayers(Layer):
    """Two layers of one shape, defined in the order given: a rank that defines them in
    another order has the same shapes at every position."""

    def __init__(self, order):
        super().__init__()
        for name in order:
            setattr(self, name, Linear(3, in_size=3))

    def forward(self, x):
        return self.second(F.relu(self.first(x)))


def test_layers_defined_in_another_order_are_refused_at_setup(comm):
    """Matched by position alone, rank 1's 'second' layer would be averaged with rank 0's
    'first' (same shapes): each rank's model would silently train the other's layer."""
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one rank cannot disagree with itself")
    order = ("second", "first") if comm.rank == 1 else ("first", "second")
    model = _TwoLayers(order)
    want = (
        r"the ranks hold different parameters \(rank 1: parameter 0 is 'second.W' of shape "
        r"\(3, 3\) and dtype float32 where rank 0 has 'first.W' of shape \(3, 3\) and dtype "
        r"float32\)"
    )
    with pytest.raises(ValueError, match=r"DataParallelOptimizer.setup\(\): " + want):
        DataParallelOptimizer(SGD(lr=0.1), comm).setup(model)
    with pytest.raises(ValueError, match=r"broadcast_params: " + want):
        broadcast_params(model, comm)
    same = _TwoLayers(("first", "second"))
    DataParallelOptimizer(SGD(lr=0.1), comm).setup(same)  # the same order: accepted


def test_unsized_layers_are_compared_by_name_at_setup_and_by_shape_at_update(comm):
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one rank cannot disagree with itself")
    model = MLP((5, 2))  # the weights are sized at the first forward
    opt = DataParallelOptimizer(SGD(lr=0.1), comm).setup(model)  # names agree: accepted
    width = 3 if comm.rank == 0 else 4  # the ranks feed different widths
    loss = F.sum(model(np.ones((2, width), np.float32)))
    model.cleargrads()
    loss.backward()
    before = [p.data.copy() for p in model.params()]
    differ = "; ".join(
        rf"rank {r}: parameter 0 is 'l0.W' of shape \(4, 5\) and dtype float32 where rank 0 has "
        rf"'l0.W' of shape \(3, 5\) and dtype float32"
        for r in range(1, comm.size)
    )
    with pytest.raises(
        ValueError, match=rf"update\(\): the ranks hold different parameters \({differ}\)"
    ):
        opt.update()
    for p, b in zip(model.params(), before):
        np.testing.assert_array_equal(p.data, b)


def test_bad_gradient_on_one_rank_raises_on_every_rank(comm):
    params = _params(comm, 7)
    broadcast_params(params, comm)
    before = [p.data.copy() for p in params]
    for p in params:
        p.grad = Parameter(np.ones_like(p.data))
    bad = comm.size - 1
    if comm.rank == bad:
        params[1].grad = Parameter(np.ones(5, np.float32))
    opt = DataParallelOptimizer(SGD(lr=1.0), comm).setup(params)
    pattern = (
        rf"rank {bad}: parameter 1 of shape \(4,\) has a gradient of shape \(5,\)"
        if comm.size > 1
        else r"SGD.update\(\): parameter 1 .* has a gradient of shape \(5,\)"
    )
    with pytest.raises(ValueError, match=pattern):
        opt.update()
    for p, b in zip(params, before):
        np.testing.assert_array_equal(p.data, b)


def test_attributes_are_the_wrapped_optimizers(comm):
    inner = SGD(lr=0.1)
    opt = DataParallelOptimizer(inner, comm)
    opt.lr = 0.25
    assert inner.lr == 0.25 and opt.lr == 0.25
    with pytest.raises(RuntimeError, match=r"SGD.update\(\): the optimizer has not been set up"):
        opt.update()


def test_buffer_is_reused_only_when_no_gradient_still_uses_it(comm):
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one rank averages nothing")
    params = _params(comm, 8)
    broadcast_params(params, comm)
    opt = DataParallelOptimizer(SGD(lr=0.0), comm).setup(params)

    def step(value):
        for p in params:
            p.grad = Parameter(np.full(p.data.shape, value + comm.rank, np.float32))
        opt.update()
        return [p.grad.data for p in params]

    kept = step(1.0)  # the user holds on to step 1's averaged gradients
    want = [g.copy() for g in kept]
    second = step(5.0)
    for g, w in zip(kept, want):  # step 2 did not write into them
        np.testing.assert_array_equal(g, w)
    assert not np.shares_memory(second[0], kept[0])
    del kept, g, want
    base = id(second[0].base)  # the optimizer keeps the buffer alive: its id stays its own
    del second
    third = step(9.0)  # nothing uses step 2's buffer any more: it is reused
    assert id(third[0].base) == base
    np.testing.assert_allclose(third[0], 9.0 + (comm.size - 1) / 2)


def test_integer_gradient_is_refused_not_cast(comm):
    params = _params(comm, 9)
    broadcast_params(params, comm)
    before = [p.data.copy() for p in params]
    for p in params:
        p.grad = Parameter(np.ones_like(p.data))
    params[0].grad = Parameter(np.ones((3, 4), np.int64))
    opt = DataParallelOptimizer(SGD(lr=1.0), comm).setup(params)
    pattern = (
        r"rank 0: parameter 0 has a gradient of dtype int64; it must be floating"
        if comm.size > 1
        else r"SGD.update\(\): parameter 0 .* dtype int64"
    )
    with pytest.raises((ValueError, TypeError), match=pattern):
        opt.update()
    for p, b in zip(params, before):
        np.testing.assert_array_equal(p.data, b)


def test_ranks_whose_parameters_differ_in_dtype_raise_on_every_rank(comm):
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one rank cannot disagree with itself")
    last = comm.size - 1
    dtype = np.float64 if comm.rank == last else np.float32
    params = _params(comm, 10, dtype=dtype)
    before = [p.data.copy() for p in params]
    want = (
        rf"rank {last}: parameter 0 is one of shape \(3, 4\) and dtype float64 where rank 0 has "
        r"one of shape \(3, 4\) and dtype float32\)"
    )
    with pytest.raises(ValueError, match=want):
        broadcast_params(params, comm)
    for p in params:
        p.grad = Parameter(np.ones_like(p.data))
    with pytest.raises(ValueError, match=want):
        DataParallelOptimizer(SGD(lr=1.0), comm).setup(params)
    for p, b in zip(params, before):
        np.testing.assert_array_equal(p.data, b)


@pytest.mark.parametrize("bad_value", [np.nan, np.inf])
def test_a_nonfinite_gradient_on_one_rank(comm, bad_value):
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one rank averages nothing")
    params = _params(comm, 11)
    broadcast_params(params, comm)
    before = [p.data.copy() for p in params]
    bad = comm.size - 1

    def grads():
        for p in params:
            p.grad = Parameter(np.ones_like(p.data))
        if comm.rank == bad:
            params[1].grad.data[2] = bad_value

    grads()
    checked = DataParallelOptimizer(SGD(lr=1.0), comm, check_finite=True).setup(params)
    with pytest.raises(
        ValueError,
        match=rf"rank {bad}: parameter 1 of shape \(4,\) has a "
        r"gradient holding nan or inf\)\. Nothing was updated on any rank",
    ):
        checked.update()
    for p, b in zip(params, before):
        np.testing.assert_array_equal(p.data, b)

    grads()  # unchecked, the average carries it to every rank's weights
    with np.errstate(invalid="ignore"):
        DataParallelOptimizer(SGD(lr=1.0), comm).setup(params).update()
    assert not np.isfinite(params[1].data[2]) and np.isfinite(params[0].data).all()


def _trained(comm, static):
    rng = np.random.default_rng(comm.rank)  # each rank its own batches
    x = rng.random((24, 3), dtype=np.float32)
    data = list(zip(x, (x.sum(axis=1) > 1.5).astype(np.int64)))
    np.random.seed(0)
    model = MLP((4, 2))
    model(np.zeros((1, 3), np.float32))
    broadcast_params(model, comm)
    opt = DataParallelOptimizer(SGD(lr=0.1), comm).setup(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = Trainer(
            model,
            opt,
            DataLoader(data, 8, shuffle=False),
            max_iterations=6,
            static=static,
            out=tempfile.mkdtemp(),
        )
        trainer.run()
    said = [str(w.message) for w in caught if w.category.__name__ == "StaticGraphWarning"]
    return [p.data.copy() for p in model.params()], said


def test_trainer_static_with_several_ranks_runs_eagerly_and_says_so_once(comm):
    """It ran eagerly after one recorded call, with a warning that blamed "another
    library" for the averaging; now the Trainer says why before the first step."""
    eager, none = _trained(comm, static=False)
    static, said = _trained(comm, static=True)
    assert none == []
    if comm.size == 1:  # nothing is averaged on one rank: the replay runs, silently
        assert said == []
    else:
        assert said == [
            f"zerograd_nn.training.Trainer(static=True): DataParallelOptimizer averages the "
            f"gradients over {comm.size} ranks between backward() and the update, outside "
            f"zerograd's functions, which a static-graph replay cannot record; every step "
            f"runs eagerly (the same results, no replay)."
        ]
    for a, b in zip(eager, static):
        np.testing.assert_array_equal(a, b)


def _stepped(comm, deco, x, t):
    np.random.seed(0)
    model = MLP((4, 2))
    model(x)
    broadcast_params(model, comm)
    opt = DataParallelOptimizer(SGD(lr=0.1), comm).setup(model)

    @deco
    def step(xb, tb):
        loss = F.softmax_cross_entropy(model(xb), tb)
        model.cleargrads()
        loss.backward()
        opt.update()
        return loss

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(5):
            step(x, t)
    said = [str(w.message) for w in caught if issubclass(w.category, StaticGraphWarning)]
    return [p.data.copy() for p in model.params()], said


def test_a_static_graph_step_of_several_ranks_runs_eagerly_with_a_warning(comm):
    x = np.random.default_rng(comm.rank).random((8, 3), dtype=np.float32)
    t = (x.sum(axis=1) > 1.5).astype(np.int64)
    eager, _ = _stepped(comm, lambda f: f, x, t)
    static, said = _stepped(comm, static_graph, x, t)
    if comm.size == 1:  # the flat buffer is averaged in place with itself: nothing changes
        assert said == []
    else:
        assert len(said) == 1 and "were changed between backward and the update" in said[0]
    for a, b in zip(eager, static):
        np.testing.assert_array_equal(a, b)


def test_the_optimizers_flat_gradient_buffer_is_averaged_in_place_in_buckets(comm, monkeypatch):
    params = _params(comm, 11, ((6, 5), (5,), (5, 3)))  # 50 float32: 200 bytes
    broadcast_params(params, comm)
    opt = DataParallelOptimizer(Adam(0.01), comm, bucket_bytes=48).setup(params)
    rng = np.random.default_rng(comm.rank)
    grads = [rng.standard_normal(p.data.shape).astype(np.float32) for p in params]
    mean_grads = [comm.allreduce(g, "mean") for g in grads]
    sent = []
    real = comm.allreduce_sum_inplace
    monkeypatch.setattr(comm, "allreduce_sum_inplace", lambda b: sent.append(b) or real(b))
    for p, g in zip(params, grads):
        p.grad = Parameter(g.copy())
    opt.update()
    for p, g in zip(params, mean_grads):
        np.testing.assert_allclose(p.grad.data, g, rtol=1e-6)
    if comm.size == 1:
        assert sent == []  # one rank: nothing to average
        return
    (segment,) = opt.optimizer._packer.segments.values()  # one group, dtype and cohort
    flat_grads = segment.grad
    for p in params:  # each gradient: its view of the averaged buffer the update read
        assert np.shares_memory(p.grad.data, flat_grads)
    # slices of that buffer, 12 float32 (48 bytes) at most: no packing copy
    assert [b.size for b in sent] == [12, 12, 12, 12, 2]
    assert all(np.shares_memory(b, flat_grads) for b in sent)


@pytest.mark.parametrize("make", [lambda: Adam(0.01), lambda: MomentumSGD(0.1)])
def test_averaging_on_the_flat_buffer_gives_the_bytes_of_per_parameter_packing(
    comm, monkeypatch, make
):
    def run():
        params = _params(comm, 12, ((4, 3), (3,), (3, 2), (2,)))
        broadcast_params(params, comm)
        opt = DataParallelOptimizer(make(), comm, bucket_bytes=40).setup(params)
        rng = np.random.default_rng(7 + comm.rank)
        for step in range(3):
            for i, p in enumerate(params):
                if step == 1 and i == 1 and comm.rank == 0:  # missing on one rank: zeros
                    p.grad = None
                    continue
                p.grad = Parameter(rng.standard_normal(p.data.shape).astype(np.float32))
            opt.update()
        return [p.data.tobytes() for p in params]

    packed = run()
    with monkeypatch.context() as m:
        m.setattr(flat, "PACKED_BACKENDS", frozenset())
        reference = run()
    assert packed == reference
    every = comm.allgather_obj(packed)
    assert all(r == every[0] for r in every)


def _by_hand(comm, grads):
    """The mean of every rank's ``grads`` as the averaging computes it: each rank's gradient
    cast to its parameter's float32 and divided by the ranks, summed in rank order."""
    every = comm.allgather_obj([np.asarray(g) for g in grads])
    scale = np.float32(1.0 / comm.size)
    out = []
    for i in range(len(grads)):
        acc = (every[0][i] * scale).astype(np.float32)
        for r in range(1, comm.size):
            acc = acc + (every[r][i] * scale).astype(np.float32)
        out.append(acc)
    return out


@pytest.mark.parametrize("bucket_bytes", [None, 24])
@pytest.mark.parametrize("grouped", [False, True])
def test_a_gradient_of_another_dtype_than_its_parameter_on_one_rank(
    comm, monkeypatch, bucket_bytes, grouped
):
    """Rank 0's batch was float64, so its gradient of one float32 parameter is float64.

    Its optimizer leaves that parameter out of its flat gradient buffer, the other ranks'
    do not: their allreduces had other sizes (and another count), so MPI paired rank 0's
    second allreduce with the others' next message. The run crashed with garbage sizes
    (or waited the whole timeout); now every rank sends the same layout."""
    monkeypatch.setattr(comm, "timeout", 30)  # before the fix: fail in 30 s, not 600
    params = _params(comm, 13, ((4, 3), (3,), (3, 2), (2,)))
    broadcast_params(params, comm)
    target = [{"params": params[:2]}, {"params": params[2:], "lr": 0.05}] if grouped else params
    opt = DataParallelOptimizer(Adam(0.01), comm, bucket_bytes=bucket_bytes).setup(target)
    for step in range(3):
        rng = np.random.default_rng(50 * step + comm.rank)
        grads = [rng.standard_normal(p.data.shape).astype(np.float32) for p in params]
        if comm.rank == 0:
            grads[1] = grads[1].astype(np.float64) / 3  # not a float32 value
        want = _by_hand(comm, grads)
        for p, g in zip(params, grads):
            p.grad = Parameter(g.copy())
        opt.update()
        for p, w, g in zip(params, want, grads):
            np.testing.assert_allclose(p.grad.data, w, rtol=1e-6)
            # averaged, a gradient takes its parameter's dtype; one rank averages nothing
            assert p.grad.data.dtype == (np.float32 if comm.size > 1 else g.dtype)
        for a in _gathered(comm, [p.data for p in params]):
            assert all(np.array_equal(a[r], a[0]) for r in range(comm.size))


def test_a_read_only_parameter_on_one_rank_raises_on_every_rank(comm, monkeypatch):
    """A read-only parameter array on one rank (``np.load(..., mmap_mode="r")``, say) made
    that rank's averaging differ from the others' (a crash or a wait of the whole timeout),
    then its update raise alone while the others updated."""
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one rank's own update says it")
    monkeypatch.setattr(comm, "timeout", 30)
    params = _params(comm, 14)
    broadcast_params(params, comm)
    opt = DataParallelOptimizer(SGD(lr=1.0), comm).setup(params)
    last = comm.size - 1
    if comm.rank == last:
        params[0].data.flags.writeable = False
    for p in params:
        p.grad = Parameter(np.full(p.data.shape, comm.rank + 1.0, np.float32))
    before = [(p.data.copy(), p.grad.data.copy()) for p in params]
    with pytest.raises(
        ValueError,
        match=rf"cannot average the gradients \(rank {last}: parameter 0 of shape \(3, 4\) "
        r"holds a read-only array; give it a writable copy \(param.data = param.data.copy\(\)\)"
        r"\)\. Nothing was updated on any rank",
    ):
        opt.update()
    for p, (data, grad) in zip(params, before):
        np.testing.assert_array_equal(p.data, data)
        np.testing.assert_array_equal(p.grad.data, grad)
    assert comm.allreduce_obj(1) == comm.size  # every rank is still in step


def test_ranks_with_different_bucket_bytes_raise_on_every_rank(comm, monkeypatch):
    """Buckets of other sizes mean another number of allreduces: MPI paired them wrongly."""
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one rank cannot disagree with itself")
    monkeypatch.setattr(comm, "timeout", 30)
    params = _params(comm, 15)
    broadcast_params(params, comm)
    bucket_bytes = 16 if comm.rank == 0 else None
    opt = DataParallelOptimizer(SGD(lr=1.0), comm, bucket_bytes=bucket_bytes).setup(params)
    for p in params:
        p.grad = Parameter(np.ones_like(p.data))
    before = [p.data.copy() for p in params]
    others = "; ".join(f"rank {r}: None" for r in range(1, comm.size))
    with pytest.raises(
        ValueError,
        match=rf"update\(\): the ranks were given different bucket_bytes \(rank 0: 16; "
        rf"{others}\); pass the same value on every rank\. Nothing was updated on any rank",
    ):
        opt.update()
    for p, b in zip(params, before):
        np.testing.assert_array_equal(p.data, b)
        np.testing.assert_array_equal(p.grad.data, np.ones_like(b))
    assert comm.allreduce_obj(1) == comm.size


def test_ranks_whose_hyperparameters_differ_raise_on_every_rank(comm):
    """A ReduceLROnPlateau stepped on each rank's own validation loss lowered the lr on
    some ranks only: every rank took another step from the same averaged gradients, and
    the ranks' parameters silently drifted apart."""
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one rank cannot disagree with itself")
    params = _params(comm, 16)
    broadcast_params(params, comm)
    opt = DataParallelOptimizer(MomentumSGD(lr=0.1), comm).setup(params)
    scheduler = ReduceLROnPlateau(opt, patience=0, factor=0.5)
    for p in params:
        p.grad = Parameter(np.ones_like(p.data))
    opt.update()
    own_validation_loss = [1.0, 2.0 if comm.rank == 0 else 0.5]  # worse on rank 0 only
    for loss in own_validation_loss:
        scheduler.step(loss)
    before = [p.data.copy() for p in params]
    others = "; ".join(f"rank {r}: lr=0.1 where rank 0 has 0.05" for r in range(1, comm.size))
    with pytest.raises(
        ValueError,
        match=rf"update\(\): the ranks' optimizers have different hyperparameters \({others}\), "
        r"so their parameters would drift apart from the same averaged gradients\. .*"
        r"ReduceLROnPlateau\) must see a value every rank shares, such as the metric's "
        r"mean_over_ranks\. Nothing was updated on any rank\.",
    ):
        opt.update()
    for p, b in zip(params, before):
        np.testing.assert_array_equal(p.data, b)
        np.testing.assert_array_equal(p.grad.data, np.ones_like(b))
    opt.lr = 0.05  # alike again: the next update runs, the same on every rank
    opt.update()
    for a in _gathered(comm, [p.data for p in params]):
        assert all(np.array_equal(a[r], a[0]) for r in range(comm.size))


@pytest.mark.parametrize("hooks", ["clip", "missing", "frozen"])
def test_ranks_whose_optimizers_have_different_hooks_raise_on_every_rank(comm, hooks):
    """A hook runs on the averaged gradients inside the wrapped update: a ClipGrad with
    another max_norm, a WeightDecay on one rank only, or FreezeParam of other parameters
    made every rank take another step from the same average, and the ranks silently drifted
    apart."""
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one rank cannot disagree with itself")
    params = _params(comm, 17)
    broadcast_params(params, comm)
    inner = SGD(lr=0.1)
    if hooks == "clip":
        inner.add_hook(ClipGrad(0.01 if comm.rank == 0 else 10.0))
        mine, rank0 = "[ClipGrad(max_norm=10.0)]", "[ClipGrad(max_norm=0.01)]"
    elif hooks == "missing":
        if comm.rank > 0:
            inner.add_hook(WeightDecay(0.5))
        mine, rank0 = "[WeightDecay(rate=0.5)]", "[]"
    else:
        inner.add_hook(FreezeParam(params[0 if comm.rank == 0 else 1]))
        mine, rank0 = (
            "[FreezeParam(freeze_params=('params', (1,)))]",
            "[FreezeParam(freeze_params=('params', (0,)))]",
        )
    opt = DataParallelOptimizer(inner, comm).setup(params)
    for p in params:
        p.grad = Parameter(np.full_like(p.data, comm.rank + 1.0))
    before = [p.data.copy() for p in params]
    others = "; ".join(
        f"rank {r}: {re.escape(mine)} where rank 0 has {re.escape(rank0)}"
        for r in range(1, comm.size)
    )
    with pytest.raises(
        ValueError,
        match=rf"update\(\): the ranks' optimizers have different hooks \({others}\), so their "
        r"parameters would drift apart from the same averaged gradients\. Add the same hooks, "
        r"with the same settings and in the same order, on every rank\. Nothing was updated "
        r"on any rank\.$",
    ):
        opt.update()
    for p, b in zip(params, before):
        np.testing.assert_array_equal(p.data, b)
        np.testing.assert_array_equal(p.grad.data, np.full_like(b, comm.rank + 1.0))
    inner.hooks[:] = [ClipGrad(0.01)]  # alike again: the next update runs, the same everywhere
    opt.update()
    for a, p, b in zip(_gathered(comm, [p.data for p in params]), params, before):
        assert all(np.array_equal(a[r], a[0]) for r in range(comm.size))
        assert not np.array_equal(p.data, b)


def test_ranks_whose_optimizers_group_the_parameters_differently_raise(comm):
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one rank cannot disagree with itself")
    params = _params(comm, 17, ((3, 4), (3, 4), (4,)))
    broadcast_params(params, comm)
    cut = 1 if comm.rank == 0 else 2
    groups = [{"params": params[:cut]}, {"params": params[cut:]}]
    opt = DataParallelOptimizer(SGD(lr=1.0), comm).setup(groups)
    for p in params:
        p.grad = Parameter(np.ones_like(p.data))
    before = [p.data.copy() for p in params]
    others = "; ".join(f"rank {r}: 2, 1" for r in range(1, comm.size))
    with pytest.raises(
        ValueError,
        match=rf"the ranks' optimizers group the parameters differently \(parameters per "
        rf"group: rank 0: 1, 2; {others}\); set every rank's optimizer up with the same groups",
    ):
        opt.update()
    for p, b in zip(params, before):
        np.testing.assert_array_equal(p.data, b)


def test_a_deep_copy_of_model_and_wrapper_trains_on_as_the_original(comm):
    # the copy's parameters were not known as broadcast: its first update broadcast them
    # again and skipped its step (with a warning), so it drifted from the original
    rng = np.random.default_rng(comm.rank)  # each rank its own batch
    x, t = rng.random((6, 3), dtype=np.float32), rng.integers(0, 2, 6)
    model = MLP((4, 2))
    model(x)
    broadcast_params(model, comm)
    opt = DataParallelOptimizer(Adam(alpha=0.05), comm).setup(model)

    def train(model, opt, n):
        for _ in range(n):
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            opt.update()

    train(model, opt, 2)
    twin, twin_opt = copy.deepcopy((model, opt))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no broadcast, no skipped step
        train(twin, twin_opt, 3)
    train(model, opt, 3)
    assert [p.data.tobytes() for p in twin.params()] == [p.data.tobytes() for p in model.params()]
    for a in _gathered(comm, [p.data for p in twin.params()]):
        assert all(np.array_equal(a[r], a[0]) for r in range(comm.size))
