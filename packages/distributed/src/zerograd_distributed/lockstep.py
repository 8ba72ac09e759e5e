"""Every collective of one MPI communicator numbered, checked, and waited for with a deadline.

MPI pairs the ranks' collectives by their order alone. A rank that calls one more (an extra
``update()``) or one fewer (it left its loop early) leaves the others waiting forever, or
pairs two unrelated calls. So each collective of an ``MpiCommunicator`` starts with a
*stamp*, exchanged by every rank: the collective's number on this communicator and its
name (``"allgather_obj in DataParallelOptimizer.update()"``). Ranks whose stamps differ
raise together, each error naming where every rank is. Every wait polls a nonblocking MPI
operation against a deadline (the communicator's ``timeout``): a rank that never arrives
makes the others raise ``TimeoutError`` naming it, once they have asked every rank, over a
side channel (a duplicate of the communicator), where it is.

After such an error the communicator cannot be used again (MPI cannot call off a
collective a rank has entered), and when the program ends every rank ends through
``MPI_Abort``, with a nonzero status. A program that ends normally first meets the other
ranks at a last stamp, :data:`END`: a rank still inside a collective learns at once that
this one has finished.
"""

from __future__ import annotations

import atexit
import itertools
import math
import os
import sys
import time
import zlib
from typing import Any

import numpy as np

from .pipes import flush_and_wait

__all__ = ["END", "Lockstep"]

END = "the end of the program"
"""The name of the stamp every rank exchanges when its program ends."""

POLLS_BEFORE_YIELD = 1000  # MPICH's MPIR_CVAR_POLLS_BEFORE_YIELD: lets 3 ranks share 2 cores
LOOK_S = 0.01  # how often a waiting rank reads the side channel and the clock
SPIN_S = 0.05  # a stamp's wait polls this long without pause (as quick as MPI's own wait),
MAX_PAUSE_S = 0.005  # then sleeps between polls, up to this long: a rank waiting idles
GRACE_S = 2.0  # how long a rank that timed out waits for the others to say where they are
_QUERY, _ANSWER, _VERDICT = 1, 2, 3  # the side channel's message tags

ADVICE = (
    "Every rank must call the same collectives in the same order. Ranks that stop at "
    "different times leave the others waiting: one more update() on one rank, training on "
    "scatter_dataset(..., pad=False) shards of unequal length (train on the default "
    "pad=True shards, or drop_last=True), or early stopping decided on each rank's own "
    "metric (decide on a value every rank shares, such as its mean_over_ranks)."
)
AFTER = (
    "This communicator cannot be used again (MPI cannot call off a collective); when the "
    "program ends, every rank ends with a nonzero exit status (MPI_Abort)."
)
RAISE_TIMEOUT = (
    "If a rank works alone this long on purpose (rank 0 writing a large checkpoint, say), "
    "raise the timeout: create_communicator(..., timeout=seconds), comm.timeout = seconds, "
    "or the environment variable ZEROGRAD_DISTRIBUTED_TIMEOUT."
)

_yield = getattr(os, "sched_yield", lambda: time.sleep(0))  # Windows has no sched_yield
_registry: dict[int, Lockstep] = {}
_abandoned: list = []  # requests a failure left pending, with the buffers MPI may still use


def _ranks(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(map(str, ranks))


def _uncaught() -> str:
    """What ended the program, when an uncaught exception did (read at exit)."""
    exc = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    return "" if exc is None else f", after an uncaught {type(exc).__name__}: {exc}"


class Lockstep:
    """The collectives of one MPI communicator: numbered, stamped, and waited for.

    One object per MPI communicator (:meth:`of`), shared by every ``MpiCommunicator``
    over it, since MPI orders collectives per communicator.

    Args:
        MPI: mpi4py's ``MPI`` module.
        mpi_comm: the mpi4py communicator.

    Attributes:
        comm: the mpi4py communicator.
        rank: this process's rank in it.
        size: its number of ranks.
        seq: how many collectives were begun on it.
        current: ``(number, name)`` of the collective begun last.
        broken: None, or ``(exception type, message)`` once a collective failed.
    """

    def __init__(self, MPI: Any, mpi_comm: Any) -> None:
        self.MPI = MPI
        self.comm = mpi_comm
        self.rank, self.size = mpi_comm.Get_rank(), mpi_comm.Get_size()
        self.seq = 0
        self.current: tuple[int, str] = (-1, "create_communicator")
        self.broken: tuple[type, str] | None = None
        self.side: Any = None
        self._sends: list = []
        self._status = MPI.Status()
        self._stamps = (np.empty(4, np.int64), np.empty((self.size, 4), np.int64))
        self._pid = os.getpid()

    @classmethod
    def of(cls, MPI: Any, mpi_comm: Any, timeout: float) -> Lockstep:
        """The lockstep of ``mpi_comm``, created (a collective) on first use.

        Args:
            MPI: mpi4py's ``MPI`` module.
            mpi_comm: the mpi4py communicator.
            timeout: seconds to wait for every rank to create it.

        Returns:
            The one ``Lockstep`` of ``mpi_comm`` in this process.

        Raises:
            TimeoutError: not every rank created a communicator over ``mpi_comm`` in time.
        """
        key = mpi_comm.py2f()
        lock = _registry.get(key)
        if lock is None or lock.comm == MPI.COMM_NULL:  # new, or a freed one's handle reused
            lock = _registry[key] = cls(MPI, mpi_comm)
            lock._start(timeout)
        return lock

    def _start(self, timeout: float) -> None:
        """Duplicate the communicator for the side channel; register :meth:`at_exit`."""
        if self.size == 1:
            return
        atexit.register(self.at_exit)
        side, request = self.comm.Idup()
        self.wait(request, timeout, (side,), patient=True)
        self.side = side

    # -- the stamps ---------------------------------------------------------------------

    def begin(self, name: str) -> int:
        """Number the next collective ``name`` (and hear whether another rank gave up).

        Args:
            name: what it is, for the error messages.

        Returns:
            Its number on this communicator.

        Raises:
            RuntimeError: an earlier collective failed: this one cannot run.
            TimeoutError: another rank timed out and stopped.
        """
        if self.broken is not None:
            raise RuntimeError(
                f"{name}: this communicator cannot be used again: an earlier collective "
                f"failed ({self.broken[1]})"
            )
        seq = self.seq
        self.current = (seq, name)
        self.seq += 1
        if self.side is not None:
            self._serve(0.0)
        return seq

    def stamp(
        self, name: str, timeout: float, status: int = 0, nbytes: int = 0, note: str = ""
    ) -> list[list[int]]:
        """Begin the collective ``name`` by exchanging every rank's stamp.

        Args:
            name: what the collective is; every rank must be at the same one.
            timeout: seconds to wait for every rank.
            status: a number the collective wants every rank to know (a failure code).
            nbytes: another (the size of what this rank sends next).
            note: said about this rank when the ranks are out of step, not compared.

        Returns:
            Each rank's ``[number, checksum of name, status, nbytes]``, in rank order.

        Raises:
            RuntimeError: the ranks are at different collectives (on every rank).
            TimeoutError: not every rank arrived within ``timeout``.
        """
        seq = self.begin(name)
        crc = zlib.crc32(name.encode())
        if self.size == 1:
            return [[seq, crc, status, nbytes]]
        mine, table = self._stamps  # reused: a failure leaves them to MPI and ends all use
        mine[:] = (seq, crc, status, nbytes)
        self.wait(self.comm.Iallgather(mine, table), timeout, (mine, table), patient=True)
        rows = table.tolist()
        if any(row[0] != seq or row[1] != crc for row in rows):
            self._out_of_step(timeout, note)
        return rows

    def allgatherv(self, data: Any, timeout: float, counts: Any = None) -> list:
        """Every rank's bytes (part of the collective begun last).

        Args:
            data: this rank's bytes (anything with the buffer protocol).
            timeout: seconds to wait for every rank.
            counts: every rank's byte count when known (a stamp carried them), else None.

        Returns:
            Each rank's bytes, in rank order (uint8 arrays).
        """
        send = np.frombuffer(data, np.uint8)
        if self.size == 1:
            return [send]
        if counts is None:
            mine = np.array([send.size], np.int64)
            counts = np.empty(self.size, np.int64)
            self.wait(self.comm.Iallgather(mine, counts), timeout, (mine, counts))
        counts = [int(c) for c in counts]
        displs = [0, *itertools.accumulate(counts[:-1])]
        recv = np.empty(sum(counts), np.uint8)
        request = self.comm.Iallgatherv(send, [recv, counts, displs, self.MPI.BYTE])
        self.wait(request, timeout, (send, recv))
        return [recv[d : d + c] for d, c in zip(displs, counts)]

    def _out_of_step(self, timeout: float, note: str) -> None:
        """Tell every rank where each is (they all saw the stamps differ), then raise."""
        seq, name = self.current
        mine = f"{name} (its collective #{seq}{note})".encode()
        where: dict[str, list[int]] = {}
        for r, text in enumerate(self.allgatherv(mine, timeout)):
            where.setdefault(text.tobytes().decode(errors="replace"), []).append(r)
        listed = "; ".join(f"{_ranks(ranks)}: {text}" for text, ranks in where.items())
        message = (
            f"the ranks are out of step: they reached different collectives ({listed}). "
            f"{ADVICE} {AFTER}"
        )
        self._break(RuntimeError, message, tell=False)
        raise RuntimeError(message)

    # -- waiting ------------------------------------------------------------------------

    def wait(self, request: Any, timeout: float, keep: tuple = (), patient: bool = False) -> None:
        """Wait for ``request`` to complete, at most ``timeout`` seconds.

        Args:
            request: an mpi4py request of the collective begun last.
            timeout: seconds (``inf``: no limit).
            keep: the buffers ``request`` uses, kept alive if it is left pending.
            patient: sleep between polls once the wait is long (for small messages, where
                the wait is for the other ranks to arrive; MPI moves data only while it is
                polled, so a transfer is polled without pause).

        Raises:
            TimeoutError: the time ran out (this rank's, or another rank's that gave up).
            RuntimeError: another rank's collective failed and it stopped.
        """
        try:
            if not request.Test():
                self._poll(request, timeout, patient)
        except BaseException as e:
            _abandoned.append((request, keep))  # MPI may still write into keep
            if self.broken is None:  # Ctrl-C, an MPI error: the others must not wait on
                seq, name = self.current
                self._break(
                    RuntimeError,
                    f"{name} (collective #{seq}) failed on rank {self.rank}: "
                    f"{type(e).__name__}: {e}",
                    tell=True,
                )
            raise

    def _poll(self, request: Any, timeout: float, patient: bool) -> None:
        test = request.Test
        start = time.monotonic()
        deadline, look = start + timeout, start + LOOK_S
        pause = 0.0
        while True:  # as MPICH's own blocking wait: poll, giving the core away now and then
            for _ in range(POLLS_BEFORE_YIELD):
                if test():
                    return
            now = time.monotonic()
            if now >= look:  # now and then: the other ranks' messages, the deadline
                self._serve(now - start)
                if now >= deadline and self._give_up(request, now - start):
                    return
                look = now + LOOK_S
            if patient and now - start > SPIN_S:  # a long wait for a stamp: idle
                pause = min(MAX_PAUSE_S, 2 * pause or 5e-5)
                time.sleep(pause)
            else:  # data may be moving, and MPI moves it only while polled
                _yield()

    def _serve(self, waited: float, answers: dict | None = None) -> None:
        """Handle what the other ranks sent on the side channel.

        Answers where this rank is, collects answers (into ``answers``), and raises when
        another rank gave up.
        """
        side, status, MPI = self.side, self._status, self.MPI
        if side is None:
            return
        while side.iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status):
            source, tag = status.Get_source(), status.Get_tag()
            message = side.recv(source=source, tag=tag)
            if tag == _QUERY:
                self._send(source, _ANSWER, (*self.current, waited))
            elif tag == _ANSWER and answers is not None:
                answers[source] = message
            elif tag == _VERDICT:
                timed_out, text = message
                seq, name = self.current
                kind = TimeoutError if timed_out else RuntimeError
                mine = (
                    f"{name} (collective #{seq}) stopped on rank {self.rank}: rank {source} "
                    f"gave up on the ranks and stopped, so this rank stops too. Rank "
                    f"{source} said: {text}"
                )
                self.broken = (kind, mine)
                raise kind(mine)

    def _send(self, dest: int, tag: int, message: Any) -> None:
        self._sends = [r for r in self._sends if not r.Test()]
        self._sends.append(self.side.isend(message, dest=dest, tag=tag))

    def _give_up(self, request: Any, waited: float) -> bool:
        """Ask every rank where it is, then raise the timeout naming those not here.

        Returns True instead when ``request`` completes meanwhile (a late arrival).
        """
        seq, name = self.current
        answers: dict[int, tuple] = {}
        if self.side is not None:
            for r in range(self.size):
                if r != self.rank:
                    self._send(r, _QUERY, (seq, name))
            until = time.monotonic() + GRACE_S
            while len(answers) < self.size - 1 and time.monotonic() < until:
                if request.Test():
                    return True
                self._serve(waited, answers)
                time.sleep(0.001)
        if request.Test():
            return True
        message = self._timeout_message(seq, name, waited, answers)
        self._break(TimeoutError, message, tell=True)
        raise TimeoutError(message)

    def _timeout_message(self, seq: int, name: str, waited: float, answers: dict) -> str:
        if self.side is None:  # the side channel is what was being set up
            return (
                f"{name} timed out on rank {self.rank} after {waited:.1f} s: not every rank "
                f"created its communicator; every rank must call create_communicator (or "
                f"MpiCommunicator) at the same point. {RAISE_TIMEOUT}"
            )
        here = [self.rank] + [r for r, a in answers.items() if tuple(a[:2]) == (seq, name)]
        missing = []
        for r in range(self.size):
            if r in here:
                continue
            if r in answers:
                s, other, w = answers[r]
                missing.append(f"rank {r} waits in {other} (its collective #{s}, for {w:.1f} s)")
            else:
                missing.append(
                    f"rank {r} did not answer (it is still computing, has ended, or waits "
                    f"outside this communicator's collectives)"
                )
        return (
            f"{name} (collective #{seq} of this communicator) timed out on rank {self.rank} "
            f"after {waited:.1f} s. Did not arrive: {'; '.join(missing)}. Arrived: "
            f"{_ranks(sorted(here))}. {ADVICE} {RAISE_TIMEOUT} {AFTER}"
        )

    def abandon(self, reason: str) -> None:
        """Give up the collectives the ranks agreed on: tell them, and refuse any later one.

        Args:
            reason: what went wrong on this rank; the other ranks' errors quote it.
        """
        if self.broken is None:
            seq, name = self.current
            message = f"rank {self.rank} stopped after {name} (collective #{seq}): {reason}"
            self._break(RuntimeError, message, tell=True)

    def _break(self, kind: type, message: str, tell: bool) -> None:
        """Mark the communicator unusable; ``tell`` the other ranks to stop too."""
        self.broken = (kind, message)
        if tell and self.side is not None:
            for r in range(self.size):
                if r != self.rank:
                    self._send(r, _VERDICT, (kind is TimeoutError, message))

    # -- the end ------------------------------------------------------------------------

    def at_exit(self) -> None:
        """Meet the other ranks at :data:`END`, or end every rank if that cannot be.

        Registered with ``atexit``. A rank whose communicator failed, or that finds
        another rank still inside a collective, calls ``MPI_Abort``: the program then ends
        on every rank, with a nonzero status, instead of leaving one waiting.
        """
        if os.getpid() != self._pid or self.MPI.Is_finalized():
            return  # a forked child, or the program finalized MPI itself
        who = f"zerograd_distributed: rank {self.rank} of {self.size}"
        if self.broken is None:
            try:
                self.stamp(END, math.inf, note=_uncaught())
                return
            except BaseException as e:
                print(f"{who}: {e}", file=sys.stderr)
        else:
            seq, name = self.current
            print(
                f"{who} ends every rank (MPI_Abort): its communicator failed at collective "
                f"#{seq}, {name} (the error is above).",
                file=sys.stderr,
            )
        flush_and_wait()
        self.comm.Abort(1)
