"""What zerograd-distributed does with two ranks on one GPU (run under ``mpiexec -n 2``).

Prints, per rank: whether the NCCL communicator forms, and whether the MPI communicator moves
CuPy arrays (it needs a CUDA-aware MPI, else it says what to do). Each attempt is bounded
by MPIEXEC_TIMEOUT; nothing here is a test, it records what the GPU machine does.
"""

from __future__ import annotations

import sys

import cupy

from zerograd_distributed import create_communicator

mpi = create_communicator("mpi")
me = f"rank {mpi.rank}/{mpi.size}"
try:
    out = mpi.allreduce(cupy.ones(3, dtype=cupy.float32) * (mpi.rank + 1))
    print(f"{me}: MPI allreduce of a CuPy array gave {cupy.asnumpy(out)}", flush=True)
except TypeError as exc:
    print(f"{me}: MPI with a CuPy array refused: {exc}", flush=True)
try:
    nccl = create_communicator("nccl")
    out = nccl.allreduce(cupy.ones(3, dtype=cupy.float32) * (nccl.rank + 1))
    print(f"{me}: NCCL allreduce gave {cupy.asnumpy(out)}", flush=True)
except Exception as exc:  # noqa: BLE001 - recorded, not handled: this is a probe
    print(f"{me}: NCCL failed: {type(exc).__name__}: {exc}", flush=True)
sys.stdout.flush()
