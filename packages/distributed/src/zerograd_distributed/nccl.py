"""The NCCL communicator: CuPy arrays over NCCL (``cupy.cuda.nccl``), the rest over MPI.

NCCL needs every rank to share one unique id before it can connect: rank 0 makes it and MPI
broadcasts it. Each rank drives the GPU ``local_rank % gpus_on_this_node``. Python objects and
host (numpy) arrays keep going over MPI, so one communicator serves a whole training script.
"""

from __future__ import annotations

from typing import Any

from .communicator import Communicator, describe
from .mpi import MpiCommunicator

__all__ = ["NcclCommunicator", "nccl_problem", "nccl_unavailable_reason"]


def nccl_unavailable_reason() -> str | None:
    """Tell why NCCL cannot be used in this process, if it cannot.

    Returns:
        None when CuPy, its NCCL bindings and a GPU are all usable here, else a sentence
            saying what is missing.

    Examples:
        >>> reason = nccl_unavailable_reason()
        >>> reason is None or isinstance(reason, str)
        True
    """
    try:
        import cupy
    except Exception as e:  # ImportError, or a broken CUDA install failing at import
        return f"CuPy cannot be imported ({type(e).__name__}: {e})"
    try:
        from cupy.cuda import nccl
    except Exception as e:
        return f"this CuPy {getattr(cupy, '__version__', '?')} has no NCCL bindings ({e})"
    if not getattr(nccl, "available", False):
        return f"this CuPy {getattr(cupy, '__version__', '?')} was built without NCCL"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no driver, or a driver too old for this CuPy
        return f"no usable GPU ({type(e).__name__}: {e})"
    if count < 1:
        return "no GPU is visible to CUDA (CUDA_VISIBLE_DEVICES?)"
    return None


def nccl_problem(mpi: MpiCommunicator) -> str | None:
    """Why NCCL cannot connect these ranks, agreed by all of them (a collective call).

    Adds to :func:`nccl_unavailable_reason` what only the ranks together can tell: NCCL
    needs a GPU of its own per rank, so more ranks on a node than it has GPUs fail inside
    NCCL (``NCCL_ERROR_INVALID_USAGE``) without saying why.

    Args:
        mpi: the MPI communicator of the ranks.

    Returns:
        None when every rank can use NCCL, else a sentence naming the ranks and why.
    """
    reasons = mpi.allgather_obj(nccl_unavailable_reason())
    if not any(reasons):
        from mpi4py import MPI

        local = mpi.mpi_comm.Split_type(MPI.COMM_TYPE_SHARED)
        ranks_here = local.Get_size()
        local.Free()
        gpus = gpus_here()
        mine = None
        if ranks_here > gpus:
            mine = (
                f"{ranks_here} ranks on this node share {gpus} GPU(s) and NCCL needs one GPU "
                f"per rank; start at most {gpus} rank(s) per node"
            )
        reasons = mpi.allgather_obj(mine)
    if not any(reasons):
        return None
    return "; ".join(f"rank {r}: {w}" for r, w in enumerate(reasons) if w)


def gpus_here() -> int:
    """The number of GPUs CUDA shows this process (CuPy must be usable)."""
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


def _is_cupy(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "cupy"


class NcclCommunicator(Communicator):
    """CuPy arrays over NCCL; Python objects and numpy arrays over ``mpi``.

    Each rank drives the GPU ``local_rank % gpus_on_this_node``. NCCL moves float16/32/64,
    int8, uint8, int32 and int64 arrays.

    Args:
        mpi: the MPI communicator used for the bootstrap, objects and host arrays.
        checked: True when every rank has just had :func:`nccl_problem` answer None for
            ``mpi`` (``create_communicator("auto")`` has): it is not asked again.

    Attributes:
        mpi: the ``MpiCommunicator`` given.
        local_rank: this process's rank among the ranks on its node.
        device: the GPU this rank uses.
        nccl_comm: CuPy's ``NcclCommunicator``.

    Raises:
        RuntimeError: where NCCL cannot be used on some rank (raised on every rank; the
            message says why and what works).
    """

    name = "nccl"

    def __init__(self, mpi: MpiCommunicator, *, checked: bool = False) -> None:
        why = None if checked else nccl_problem(mpi)  # agreed: else the others would wait
        if why:
            raise RuntimeError(
                f"create_communicator('nccl'): NCCL cannot be used ({why}). Use "
                f"create_communicator('mpi') for numpy arrays, or 'auto', which picks NCCL "
                f"only where it works."
            )
        import cupy
        from cupy.cuda import nccl
        from mpi4py import MPI

        super().__init__(mpi.rank, mpi.size)
        self.mpi = mpi
        self._cupy, self._nccl = cupy, nccl
        local = mpi.mpi_comm.Split_type(MPI.COMM_TYPE_SHARED)
        self.local_rank = local.Get_rank()
        local.Free()
        self.device = self.local_rank % gpus_here()
        cupy.cuda.Device(self.device).use()
        uid = nccl.get_unique_id() if self.rank == 0 else None
        self.nccl_comm = nccl.NcclCommunicator(self.size, mpi.bcast_obj(uid), self.rank)
        self._ops = {"sum": nccl.NCCL_SUM, "prod": nccl.NCCL_PROD, "max": nccl.NCCL_MAX}
        self._ops.update(min=nccl.NCCL_MIN, mean=nccl.NCCL_SUM)
        self._dtypes = {
            "float16": nccl.NCCL_FLOAT16,
            "float32": nccl.NCCL_FLOAT32,
            "float64": nccl.NCCL_FLOAT64,
            "int8": nccl.NCCL_INT8,
            "uint8": nccl.NCCL_UINT8,
            "int32": nccl.NCCL_INT32,
            "int64": nccl.NCCL_INT64,
        }

    @property
    def timeout(self) -> float:
        """The MPI communicator's (see ``Communicator.timeout``).

        Every NCCL collective here starts after an MPI exchange that carries the stamp
        and the deadline, so a rank that is elsewhere is caught there.
        """
        return self.mpi.timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        self.mpi.timeout = value

    def during(self, what: str) -> Any:
        """See ``Communicator.during``: names the MPI collectives (NCCL's follow them)."""
        return self.mpi.during(what)

    def _device_buffer(self, method: str, x: Any) -> tuple[Any, int]:
        """Contiguous ``x`` and its NCCL dtype code, or a TypeError naming what NCCL takes."""
        code = self._dtypes.get(str(x.dtype))
        if code is None:
            raise TypeError(
                f"NcclCommunicator.{method}: got a {describe(x)}; NCCL moves "
                f"{', '.join(self._dtypes)}. Cast the array with x.astype(...) first."
            )
        return (x if x.flags.c_contiguous else self._cupy.ascontiguousarray(x)), code

    def _root_on_gpu(self, method: str, x: Any, root: int) -> bool:
        """Check ``root``, then tell every rank whether ``root``'s ``x`` is a CuPy array."""
        self.check_root(method, root)
        return self.mpi.bcast_obj(_is_cupy(x) if self.rank == root else None, root)

    def _stream(self) -> int:
        return self._cupy.cuda.get_current_stream().ptr

    # -- Python objects: over MPI --------------------------------------------------------

    def barrier(self) -> None:
        """Wait until every rank (and this GPU's queued work) has reached ``barrier``."""
        self._cupy.cuda.get_current_stream().synchronize()
        self.mpi.barrier()

    def bcast_obj(self, obj: Any, root: int = 0) -> Any:
        """See ``Communicator.bcast_obj``; goes over MPI."""
        return self.mpi.bcast_obj(obj, root)

    def allreduce_obj(self, obj: Any, op: str = "sum") -> Any:
        """See ``Communicator.allreduce_obj``; goes over MPI."""
        return self.mpi.allreduce_obj(obj, op)

    def allgather_obj(self, obj: Any) -> list:
        """See ``Communicator.allgather_obj``; goes over MPI."""
        return self.mpi.allgather_obj(obj)

    def scatter_obj(self, objs: Any, root: int = 0) -> Any:
        """See ``Communicator.scatter_obj``; goes over MPI."""
        return self.mpi.scatter_obj(objs, root)

    # -- arrays: CuPy over NCCL, the rest over MPI ---------------------------------------

    def bcast(self, x: Any, root: int = 0) -> Any:
        """See ``Communicator.bcast``; CuPy arrays go over NCCL, other arrays over MPI."""
        if not self._root_on_gpu("bcast", x, root):
            return self.mpi.bcast(x, root)
        meta = (tuple(x.shape), str(x.dtype)) if self.rank == root else None
        shape, dtype = self.mpi.bcast_obj(meta, root)
        if self.rank != root:
            x = self._cupy.empty(shape, dtype=dtype)
        buf, code = self._device_buffer("bcast", x)
        self.nccl_comm.bcast(buf.data.ptr, buf.size, code, root, self._stream())
        return buf

    def allreduce(self, x: Any, op: str = "sum", *, inplace: bool = False) -> Any:
        """See ``Communicator.allreduce``; CuPy arrays go over NCCL, others over MPI."""
        if not _is_cupy(x):
            return self.mpi.allreduce(x, op, inplace=inplace)
        self._check_op("allreduce", op)
        buf, code = self._device_buffer("allreduce", x)
        self._agree("allreduce", "shape and dtype", (tuple(buf.shape), str(buf.dtype)))
        out = buf if inplace and buf is x else self._cupy.empty_like(buf)
        self.nccl_comm.allReduce(
            buf.data.ptr, out.data.ptr, buf.size, code, self._ops[op], self._stream()
        )
        if inplace and out is not x:
            x[...] = out
            out = x
        return self._mean(out) if op == "mean" else out

    def transport_problem(self, x: Any) -> str | None:
        """See ``Communicator.transport_problem``: CuPy arrays of NCCL's dtypes, else MPI's."""
        if _is_cupy(x):
            return None if str(x.dtype) in self._dtypes else f"NCCL cannot move {x.dtype}"
        return self.mpi.transport_problem(x)

    def allreduce_sum_inplace(self, buf: Any) -> None:
        """See ``Communicator.allreduce_sum_inplace``: CuPy over NCCL, host arrays over MPI."""
        if not _is_cupy(buf):
            return self.mpi.allreduce_sum_inplace(buf)
        code = self._dtypes[str(buf.dtype)]
        p = buf.data.ptr
        self.nccl_comm.allReduce(p, p, buf.size, code, self._ops["sum"], self._stream())

    def bcast_inplace(self, buf: Any, root: int = 0) -> None:
        """See ``Communicator.bcast_inplace``: CuPy over NCCL, host arrays over MPI."""
        if not _is_cupy(buf):
            return self.mpi.bcast_inplace(buf, root)
        code = self._dtypes[str(buf.dtype)]
        self.nccl_comm.bcast(buf.data.ptr, buf.size, code, root, self._stream())

    def allgather(self, x: Any) -> Any:
        """See ``Communicator.allgather``; CuPy arrays go over NCCL, others over MPI."""
        if not _is_cupy(x):
            return self.mpi.allgather(x)
        buf, code = self._device_buffer("allgather", x)
        self._agree("allgather", "shape and dtype", (tuple(buf.shape), str(buf.dtype)))
        out = self._cupy.empty((self.size, *buf.shape), dtype=buf.dtype)
        self.nccl_comm.allGather(buf.data.ptr, out.data.ptr, buf.size, code, self._stream())
        return out

    def scatter(self, x: Any, root: int = 0) -> Any:
        """See ``Communicator.scatter``.

        NCCL has no scatter: a CuPy array is broadcast whole and each rank keeps its part.
        Other arrays go over MPI.
        """
        if not self._root_on_gpu("scatter", x, root):
            return self.mpi.scatter(x, root)
        whole = self.bcast(x, root)
        return _part(whole, self.rank, self.size).copy()

    def abandon(self, reason: str) -> None:
        """See ``Communicator.abandon``: said over the MPI communicator's side channel.

        NCCL collectives are queued on the GPU, not waited for in Python: a rank whose
        NCCL allreduce waits for this one hears it at its next MPI exchange, and raises there.
        """
        self.mpi.abandon(reason)

    def abort(self, code: int = 1) -> None:
        """See ``Communicator.abort``; aborts NCCL's pending work, then ``MPI_Abort``."""
        try:
            self.nccl_comm.abort()
        finally:
            self.mpi.abort(code)


def _part(x: Any, rank: int, size: int) -> Any:
    n = x.shape[0]
    start = rank * (n // size) + min(rank, n % size)
    return x[start : start + n // size + (1 if rank < n % size else 0)]
