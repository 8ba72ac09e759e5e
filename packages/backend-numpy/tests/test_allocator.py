"""The numpy backend keeps freed memory in the process: repeated steps fault no pages in."""

import os
import subprocess
import sys

import pytest

import zerograd_numpy

STEPS = r"""
import resource, numpy as np
import zerograd_numpy
def step():
    a = np.ones((32, 16, 28, 28), np.float32)  # 1.6 MB: the size of a CNN activation
    b = a * 2
    c = b + a
    return float(c.sum())
for _ in range(5):
    step()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):
    step()
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
print(zerograd_numpy.KEEPS_FREED_MEMORY, faults / 40)
"""


def _faults_per_step(keep: str) -> tuple[str, float]:
    env = {"ZEROGRAD_NUMPY_KEEP_MEMORY": keep, "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", STEPS], env=env, capture_output=True, text=True, check=True
    )
    kept, faults = out.stdout.split()
    return kept, float(faults)


def test_steps_fault_no_pages_in_and_the_variable_turns_it_off():
    if not zerograd_numpy.KEEPS_FREED_MEMORY:
        why = (
            "ZEROGRAD_NUMPY_KEEP_MEMORY=0 is set for this run"
            if os.environ.get("ZEROGRAD_NUMPY_KEEP_MEMORY") == "0"
            else "not glibc on Linux: malloc's thresholds cannot be set here"
        )
        pytest.skip(why)
    kept, faults = _faults_per_step("1")
    assert kept == "True" and faults < 50, faults
    kept, faults = _faults_per_step("0")
    assert kept == "False" and faults > 200, faults  # glibc hands the heap back every step
