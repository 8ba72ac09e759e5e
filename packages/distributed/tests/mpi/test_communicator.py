"""Collectives of Python objects and of arrays, checked against values computed by hand."""

from __future__ import annotations

import threading

import numpy as np
import pytest


def test_rank_and_size(comm):
    ranks = comm.allgather_obj(comm.rank)
    assert ranks == list(range(comm.size))


def test_barrier_then_objects(comm):
    comm.barrier()
    assert comm.bcast_obj({"from": comm.rank}, root=comm.size - 1) == {"from": comm.size - 1}
    assert comm.allgather_obj(("r", comm.rank)) == [("r", r) for r in range(comm.size)]
    assert comm.scatter_obj([f"item{r}" for r in range(comm.size)]) == f"item{comm.rank}"


@pytest.mark.parametrize(
    "op, expected",
    [
        ("sum", lambda n: sum(r + 1 for r in range(n))),
        ("prod", lambda n: int(np.prod([r + 1 for r in range(n)]))),
        ("max", lambda n: n),
        ("min", lambda n: 1),
        ("mean", lambda n: sum(r + 1 for r in range(n)) / n),
    ],
)
def test_allreduce_obj(comm, op, expected):
    assert comm.allreduce_obj(comm.rank + 1, op) == expected(comm.size)


def test_scatter_obj_wrong_length_raises_on_every_rank(comm):
    with pytest.raises(ValueError, match=rf"scatter_obj: objs must hold {comm.size} items"):
        comm.scatter_obj(list(range(comm.size + 1)) if comm.rank == 0 else None)
    assert comm.allreduce_obj(1) == comm.size  # everyone is still in step


def _rank_array(rank, dtype=np.float32):
    return (np.arange(6, dtype=dtype).reshape(2, 3) + 10 * rank).astype(dtype)


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "mean"])
def test_allreduce_array(comm, op):
    parts = np.stack([_rank_array(r, np.float64) for r in range(comm.size)])
    expected = {
        "sum": parts.sum(0),
        "prod": parts.prod(0),
        "max": parts.max(0),
        "min": parts.min(0),
        "mean": parts.mean(0),
    }[op]
    x = _rank_array(comm.rank, np.float64)
    before = x.copy()
    out = comm.allreduce(x, op)
    np.testing.assert_allclose(out, expected)
    np.testing.assert_array_equal(x, before)  # not in place unless asked


def test_allreduce_inplace_and_noncontiguous(comm):
    x = _rank_array(comm.rank)
    out = comm.allreduce(x, inplace=True)
    assert out is x
    np.testing.assert_allclose(x, sum(_rank_array(r) for r in range(comm.size)))
    y = np.asfortranarray(_rank_array(comm.rank)).T  # a strided view
    out = comm.allreduce(y, inplace=True)
    assert out is y
    np.testing.assert_allclose(y, sum(_rank_array(r) for r in range(comm.size)).T)


def test_allreduce_integer_mean_is_float(comm):
    out = comm.allreduce(np.array([comm.rank, 1], dtype=np.int64), "mean")
    assert out.dtype.kind == "f"
    np.testing.assert_allclose(out, [(comm.size - 1) / 2, 1.0])


def test_allreduce_shape_mismatch_raises_on_every_rank(comm):
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one rank cannot disagree with itself")
    x = np.zeros(3 if comm.rank == 1 else 2, dtype=np.float32)
    with pytest.raises(ValueError, match=r"same shape and dtype, got rank 0: \(\(2,\), '<f4'\)"):
        comm.allreduce(x)
    assert comm.allreduce_obj(1) == comm.size


@pytest.mark.parametrize("root", [0, -1])
def test_bcast_array(comm, root):
    root = root % comm.size
    x = _rank_array(comm.rank, np.int64) if comm.rank == root else None
    out = comm.bcast(x, root=root)
    np.testing.assert_array_equal(out, _rank_array(root, np.int64))
    assert out.dtype == np.int64
    zero_d = comm.bcast(np.float32(comm.rank + 7) * np.ones((), np.float32), root=root)
    assert zero_d.shape == () and zero_d == root + 7


def test_allgather_array(comm):
    out = comm.allgather(_rank_array(comm.rank))
    assert out.shape == (comm.size, 2, 3)
    for r in range(comm.size):
        np.testing.assert_array_equal(out[r], _rank_array(r))


@pytest.mark.parametrize("n", [7, 1 + 2 * 3])
def test_scatter_array_uneven_rows(comm, n):
    whole = np.arange(n * 2, dtype=np.float64).reshape(n, 2)
    out = comm.scatter(whole if comm.rank == 0 else None)
    np.testing.assert_array_equal(out, np.array_split(whole, comm.size)[comm.rank])


def test_scatter_0d_refused_on_every_rank(comm):
    with pytest.raises(ValueError, match=r"scatter: root passed a 0-d array"):
        comm.scatter(np.float64(1.0) * np.ones(()) if comm.rank == 0 else None)


def test_bad_op_and_root(comm):
    with pytest.raises(ValueError, match=r"op must be one of sum, prod, max, min, mean, got 'avg'"):
        comm.allreduce(np.zeros(2), "avg")
    with pytest.raises(ValueError, match=rf"root must be a rank in 0..{comm.size - 1}, got 99"):
        comm.bcast_obj(1, root=99)


class _Foreign:
    """An array of a backend MPI has no transport for."""

    __module__ = "jax"
    shape, dtype = (2,), "float32"


def test_an_array_refused_on_one_rank_raises_on_every_rank(comm):
    last = comm.size - 1
    x = _Foreign() if comm.rank == last else np.zeros(2, np.float32)
    theirs = rf"rank {last}: MpiCommunicator.allreduce: got a jax._Foreign"
    with pytest.raises(TypeError, match=r"got a jax._Foreign" if comm.rank == last else theirs):
        comm.allreduce(x)
    root_x = _Foreign() if comm.rank == last else None
    with pytest.raises(TypeError, match=r"MpiCommunicator.bcast: got a jax._Foreign"):
        comm.bcast(root_x, root=last)
    with pytest.raises(TypeError, match=r"MpiCommunicator.scatter: got a jax._Foreign"):
        comm.scatter(root_x, root=last)
    assert comm.allreduce_obj(1) == comm.size  # everyone is still in step


def test_the_declared_in_place_collectives(comm):
    buf = np.arange(4, dtype=np.float32) + comm.rank
    comm.allreduce_sum_inplace(buf)
    total = sum(np.arange(4, dtype=np.float32) + r for r in range(comm.size))
    np.testing.assert_array_equal(buf, total)
    root = comm.size - 1
    data = np.full(3, 7.0 if comm.rank == root else -1.0)
    comm.bcast_inplace(data, root)
    np.testing.assert_array_equal(data, [7.0, 7.0, 7.0])
    assert comm.transport_problem(np.zeros(2, np.float32)) is None


def test_synced_parameters_are_remembered_weakly(comm):
    import gc
    import weakref

    from zerograd import Parameter

    p, q = Parameter(np.zeros(2)), Parameter(np.ones(2))
    assert not comm.is_synced(p)
    comm.mark_synced([p])
    assert comm.is_synced(p) and not comm.is_synced(q)
    ref = weakref.ref(p)
    del p
    gc.collect()
    assert ref() is None  # the communicator does not keep it alive
    fresh = [Parameter(np.zeros(2)) for _ in range(20)]  # some may reuse p's id
    assert not any(comm.is_synced(r) for r in fresh)


def test_a_root_that_cannot_pickle_tells_every_rank(comm):
    """The other ranks used to wait forever for the root's bytes."""
    root = comm.size - 1
    lock = threading.Lock()  # pickle refuses locks
    want = (
        rf"MpiCommunicator.bcast_obj: rank {root} cannot pickle the object it broadcasts "
        r"\(TypeError: cannot pickle '_thread.lock' object\); nothing was sent, on any rank"
    )
    with pytest.raises(TypeError, match=want) as caught:
        comm.bcast_obj({"lock": lock} if comm.rank == root else None, root=root)
    if comm.rank == root:  # the root's own error carries pickle's as its cause
        assert isinstance(caught.value.__cause__, TypeError)
    with pytest.raises(TypeError, match=r"rank 0 cannot pickle the object it broadcasts \("):
        comm.bcast_obj(lambda: 1 if comm.rank == 0 else None)  # a lambda of this test
    assert comm.bcast_obj("fine", root=root) == "fine"  # every rank is still in step


def test_a_rank_that_cannot_pickle_its_part_tells_every_rank(comm):
    last = comm.size - 1
    mine = threading.Lock() if comm.rank == last else comm.rank
    want = (
        rf"allgather_obj: not every rank can pickle its object \(rank {last}: TypeError: "
        r"cannot pickle '_thread.lock' object\); nothing was sent, on any rank"
    )
    with pytest.raises(TypeError, match=want):
        comm.allgather_obj(mine)
    with pytest.raises(TypeError, match=want.replace("allgather_obj", r"allreduce_obj")):
        comm.allreduce_obj(mine)
    items = [threading.Lock() if r == last else r for r in range(comm.size)]
    with pytest.raises(TypeError, match=r"scatter_obj: rank 0 cannot pickle an item \(TypeErr"):
        comm.scatter_obj(items if comm.rank == 0 else None)
    assert comm.allgather_obj(comm.rank) == list(range(comm.size))  # still in step


def test_allreduce_obj_of_floats_is_the_same_on_every_rank(comm):
    values = [0.1, 0.2, 0.3][: comm.size] + [1e-17] * max(0, comm.size - 3)
    out = comm.allreduce_obj(values[comm.rank])
    everyone = comm.allgather_obj(out)
    assert everyone == [out] * comm.size
    assert out == sum(values)  # rank order, as Python's sum adds them
    assert comm.allreduce_obj([comm.rank], "sum") == list(range(comm.size))  # any + works


def test_collectives_named_by_during_run_as_usual(comm):
    with comm.during("a step of this test"):
        assert comm.allgather_obj(comm.rank) == list(range(comm.size))
        with comm.during("an inner step"):
            comm.barrier()
    assert comm.allreduce_obj(2, "max") == 2
