"""The NCCL communicator on a GPU: arrays of CuPy over NCCL, host arrays over MPI.

These run where CuPy, NCCL and one GPU per rank are usable: one process on one GPU runs
them, ``mpiexec -n 2`` on one GPU skips them (NCCL refuses ranks that share a GPU, and
``nccl_problem`` says so). Elsewhere they skip and print why.
"""

from __future__ import annotations

import numpy as np
import pytest

from zerograd_distributed import create_communicator, nccl_problem, nccl_unavailable_reason

REASON = nccl_unavailable_reason()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(REASON is not None, reason=f"NCCL not usable here: {REASON}"),
]


@pytest.fixture(scope="module")
def nccl(comm):
    problem = nccl_problem(comm)  # every rank together: ranks sharing one GPU cannot use NCCL
    if problem is not None:
        pytest.skip(f"NCCL cannot connect these ranks: {problem}")
    return create_communicator("nccl")


def test_auto_picks_nccl(nccl):
    assert create_communicator("auto").name == "nccl"


def test_auto_asks_every_rank_about_nccl_once(nccl, monkeypatch):
    import importlib

    calls = []

    def counted(mpi, real=nccl_problem):
        calls.append(mpi)
        return real(mpi)

    for module in ("zerograd_distributed.nccl", "zerograd_distributed.transports"):
        monkeypatch.setattr(importlib.import_module(module), "nccl_problem", counted)
    assert create_communicator("auto").name == "nccl"
    assert len(calls) == 1  # two allgathers and a split: not again in NcclCommunicator


def test_allreduce_bcast_allgather_scatter_on_the_gpu(nccl):
    import cupy

    x = cupy.arange(6, dtype=cupy.float32).reshape(2, 3) + 10 * nccl.rank
    parts = np.stack(
        [np.arange(6, dtype=np.float32).reshape(2, 3) + 10 * r for r in range(nccl.size)]
    )
    np.testing.assert_allclose(cupy.asnumpy(nccl.allreduce(x)), parts.sum(0))
    np.testing.assert_allclose(cupy.asnumpy(nccl.allreduce(x, "mean")), parts.mean(0))
    np.testing.assert_array_equal(cupy.asnumpy(nccl.allgather(x)), parts)
    out = nccl.bcast(x if nccl.rank == 0 else None)
    np.testing.assert_array_equal(cupy.asnumpy(out), parts[0])
    whole = cupy.arange(7.0) if nccl.rank == 0 else None
    np.testing.assert_array_equal(
        cupy.asnumpy(nccl.scatter(whole)), np.array_split(np.arange(7.0), nccl.size)[nccl.rank]
    )


def test_host_arrays_go_over_mpi(nccl):
    out = nccl.allreduce(np.ones(3) * (nccl.rank + 1))
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, sum(range(1, nccl.size + 1)))


def test_data_parallel_step_on_the_gpu(nccl):
    import cupy

    from zerograd import Parameter
    from zerograd_distributed import DataParallelOptimizer, broadcast_params
    from zerograd_nn.optimizers import SGD

    p = Parameter(cupy.full((4,), float(nccl.rank), dtype=cupy.float32))
    broadcast_params([p], nccl)
    p.grad = Parameter(cupy.full((4,), float(nccl.rank + 1), dtype=cupy.float32))
    DataParallelOptimizer(SGD(lr=1.0), nccl).setup([p]).update()
    mean = sum(range(1, nccl.size + 1)) / nccl.size
    np.testing.assert_allclose(cupy.asnumpy(p.data), np.full(4, -mean), rtol=1e-6)
