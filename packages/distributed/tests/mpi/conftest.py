"""Tests that run on every rank: ``mpiexec -n 2 python -m pytest tests/mpi`` (and ``-n 3``).

Every rank runs the same tests in the same order. A test failing on one rank would leave
the others waiting in a collective, so a failure prints the rank and the error and aborts
the whole run (MPI_Abort) instead of hanging.
"""

from __future__ import annotations

import sys
import traceback

import pytest

from zerograd_distributed import create_communicator


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs CuPy, NCCL and a GPU (skips, saying why)")


@pytest.fixture(scope="session")
def comm():
    """The MPI communicator over every rank of this run."""
    return create_communicator("mpi")


def pytest_collection_finish(session):
    """Every rank must run the same tests in the same order, or their collectives pair up
    wrongly and wait forever (e.g. a test file edited while the ranks were starting)."""
    c = create_communicator("mpi")
    ids = [item.nodeid for item in session.items]
    every = c.allgather_obj(ids)
    if any(other != every[0] for other in every):
        differ = [r for r, other in enumerate(every) if other != every[0]]
        print(
            f"\nranks {differ} collected other tests than rank 0 ({len(ids)} here); aborting "
            f"every rank: run again with the same files on every rank.",
            file=sys.stderr,
            flush=True,
        )
        c.abort(1)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    outcome = yield
    excinfo = outcome.excinfo
    if excinfo is None or issubclass(excinfo[0], (pytest.skip.Exception, pytest.xfail.Exception)):
        return
    c = create_communicator("mpi")
    if c.size == 1:
        return  # one rank: pytest reports the failure as usual
    traceback.print_exception(*excinfo, file=sys.stderr)
    print(
        f"\nFAILED {item.nodeid} on rank {c.rank} of {c.size}: {excinfo[0].__name__}: "
        f"{excinfo[1]}; aborting every rank so that none waits forever.",
        file=sys.stderr,
        flush=True,
    )
    c.abort(1)
