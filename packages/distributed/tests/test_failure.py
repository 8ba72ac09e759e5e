"""A rank that raises ends the whole run within seconds, saying which rank and why.

Each test launches ``mpiexec -n 2`` on a small script where rank 1 raises while rank 0
waits in a collective that would otherwise never complete.
"""

from __future__ import annotations

import textwrap

import pytest
from mpi_launch import run

from zerograd_distributed import abort_on_error, create_communicator

CONTEXT = """
from zerograd_distributed import abort_on_error, create_communicator
comm = create_communicator("mpi")
with abort_on_error(comm):
    if comm.rank == 1:
        raise ValueError("boom on rank one")
    comm.barrier()  # rank 0 waits here for rank 1, which never comes
print("UNREACHABLE", comm.rank)
"""

HOOK = """
from zerograd_distributed import create_communicator, install_excepthook
comm = create_communicator("mpi")
install_excepthook(comm)
if comm.rank == 1:
    raise KeyError("missing on rank one")
comm.allreduce_obj(1)
print("UNREACHABLE", comm.rank)
"""


@pytest.mark.parametrize(
    "source, message",
    [
        (CONTEXT, "rank 1 of 2 raised ValueError: boom on rank one; aborting every rank"),
        (HOOK, "rank 1 of 2 raised KeyError: 'missing on rank one'; aborting every rank"),
    ],
    ids=["abort_on_error", "install_excepthook"],
)
def test_one_rank_raising_ends_the_run_within_seconds(tmp_path, source, message):
    script = tmp_path / "fails.py"
    script.write_text(textwrap.dedent(source))
    code, out, seconds = run(2, script, timeout=60)
    assert code != 0
    assert message in out
    assert "UNREACHABLE" not in out
    assert seconds < 20, f"took {seconds:.1f} s"


def test_one_rank_reraises_instead_of_aborting():
    comm = create_communicator("mpi")
    with pytest.raises(ValueError, match="alone"):
        with abort_on_error(comm):
            raise ValueError("alone")
    with abort_on_error() as world:
        assert world.size == 1
