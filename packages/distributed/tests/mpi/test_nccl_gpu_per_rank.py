"""NCCL's need for a GPU per rank, checked by all ranks together before NCCL is asked.

Two ranks on one GPU make NCCL fail with ``NCCL_ERROR_INVALID_USAGE`` and nothing more (seen
on an H200 with ``mpiexec -n 2``); ``nccl_problem`` says why first, and ``auto`` then picks
MPI on every rank. The node's GPU count is set here, through zerograd's own probe: every
rank of these runs is on one node.
"""

from __future__ import annotations

import pytest

import zerograd_distributed.nccl as nccl_module
from zerograd_distributed import create_communicator


@pytest.fixture
def one_gpu(monkeypatch):
    """The node shows one GPU and NCCL counts as usable on every rank (zerograd's own probes
    answer so; nothing of CuPy is touched)."""
    monkeypatch.setattr(nccl_module, "gpus_here", lambda: 1)
    monkeypatch.setattr(nccl_module, "nccl_unavailable_reason", lambda: None)


def test_ranks_sharing_a_gpu_are_named_on_every_rank(comm, one_gpu):
    problem = nccl_module.nccl_problem(comm)
    if comm.size == 1:
        assert problem is None
        return
    every = "; ".join(
        f"rank {r}: {comm.size} ranks on this node share 1 GPU(s) and NCCL needs one GPU per "
        f"rank; start at most 1 rank(s) per node"
        for r in range(comm.size)
    )
    assert problem == every
    with pytest.raises(RuntimeError, match=r"create_communicator\('nccl'\): NCCL cannot be used"):
        create_communicator("nccl")


def test_auto_picks_the_same_transport_on_every_rank(comm, one_gpu, monkeypatch):
    if comm.size == 1:
        pytest.skip("one rank on one GPU: auto would start NCCL, which needs a real GPU")
    picked = create_communicator("auto").name
    assert comm.allgather_obj(picked) == ["mpi"] * comm.size
