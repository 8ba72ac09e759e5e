"""The collective timeout: its default, the environment variable, the argument and the
attribute, and the errors for values that are not seconds (one process, no mpiexec).

What the timeout does between ranks is tested under mpiexec in test_stragglers.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from zerograd_distributed import MpiCommunicator, create_communicator
from zerograd_distributed.timeouts import DEFAULT_TIMEOUT, TIMEOUT_ENV, resolve_timeout


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)


def test_the_default_is_ten_minutes():
    assert DEFAULT_TIMEOUT == 600.0
    assert TIMEOUT_ENV == "ZEROGRAD_DISTRIBUTED_TIMEOUT"
    assert create_communicator("mpi").timeout == 600.0


@pytest.mark.parametrize(
    "raw, seconds", [("30", 30.0), (" 2.5 ", 2.5), ("inf", math.inf), ("", 600.0)]
)
def test_the_environment_variable_sets_it(monkeypatch, raw, seconds):
    monkeypatch.setenv(TIMEOUT_ENV, raw)
    assert create_communicator("mpi").timeout == seconds
    assert create_communicator("mpi", timeout=7).timeout == 7.0  # the argument wins


@pytest.mark.parametrize("raw", ["0", "-5", "nan", "ten", "10s"])
def test_a_bad_environment_variable_is_refused_by_name(monkeypatch, raw):
    monkeypatch.setenv(TIMEOUT_ENV, raw)
    with pytest.raises(
        ValueError,
        match=rf"ZEROGRAD_DISTRIBUTED_TIMEOUT='{raw}': give the seconds a collective may wait "
        r"for every rank \(a positive number such as 600\), or 'inf' to wait forever",
    ):
        create_communicator("mpi")


def test_the_argument_and_the_attribute(monkeypatch):
    comm = create_communicator("mpi", timeout=np.float32(1.5))
    assert comm.timeout == 1.5 and type(comm.timeout) is float
    comm.timeout = 45
    assert comm.timeout == 45.0
    comm.timeout = math.inf
    assert comm.timeout == math.inf
    monkeypatch.setenv(TIMEOUT_ENV, "12")
    comm.timeout = None  # back to the default, which the environment now sets
    assert comm.timeout == 12.0
    assert MpiCommunicator(timeout=3).timeout == 3.0


@pytest.mark.parametrize(
    "value, kind, message",
    [
        (0, ValueError, r"timeout must be a positive number of seconds \(math.inf waits forever\)"),
        (-1.0, ValueError, r"timeout must be a positive number of seconds .*, got -1.0"),
        (-math.inf, ValueError, r"timeout must be a positive number of seconds .*, got -inf"),
        (math.nan, ValueError, r"timeout must be a number, not nan, got nan"),
        ("60", TypeError, r"timeout must be a real number, got '60' \(str\)"),
        (True, TypeError, r"timeout must be a real number, got True \(bool\)"),
    ],
)
def test_values_that_are_not_seconds(value, kind, message):
    with pytest.raises(kind, match=r"create_communicator: " + message):
        resolve_timeout("create_communicator", value)
    comm = create_communicator("mpi", timeout=5)
    with pytest.raises(kind, match=r"MpiCommunicator.timeout: " + message):
        comm.timeout = value
    assert comm.timeout == 5.0  # unchanged by the refusal
    with pytest.raises(kind, match=message):
        create_communicator("mpi", timeout=value)


def test_collectives_run_on_one_rank_with_any_timeout():
    comm = create_communicator("mpi", timeout=1e-9)  # nothing to wait for on one rank
    with comm.during("a check"):
        comm.barrier()
        assert comm.allgather_obj("x") == ["x"]
        assert comm.bcast_obj({"a": 1}) == {"a": 1}
        assert comm.scatter_obj([5]) == 5
        assert comm.allreduce_obj(3, "mean") == 3.0
    buf = np.arange(3.0)
    comm.allreduce_sum_inplace(buf)
    np.testing.assert_array_equal(buf, np.arange(3.0))
