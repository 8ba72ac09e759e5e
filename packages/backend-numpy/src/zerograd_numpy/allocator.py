"""Keeping freed memory in the process (glibc), so training steps do not fault pages in.

A training step frees its large temporaries (activations, im2col buffers, gradients) at
its end, and glibc's malloc returns the freed top of the heap to the system; the next step
allocates the same sizes again and the kernel maps and zeroes every page anew. Measured on
the CNN step of ``nox -s bench``, those page faults were about half of the step's time.
PyTorch avoids them with its own allocator; numpy allocates through malloc, so the numpy
backend sets glibc's thresholds once, at import: blocks under 32 MiB come from the heap
(glibc's own dynamic maximum) and up to 256 MiB of free heap stays in the process.

Set the environment variable ``ZEROGRAD_NUMPY_KEEP_MEMORY=0`` before zerograd loads the
numpy backend to leave malloc as it is.
"""

from __future__ import annotations

import ctypes
import os
import sys

ENV = "ZEROGRAD_NUMPY_KEEP_MEMORY"
_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3


def keep_freed_memory(mmap_threshold: int = 32 << 20, trim_threshold: int = 256 << 20) -> bool:
    """Set glibc malloc's mmap and trim thresholds; do nothing elsewhere.

    Args:
        mmap_threshold: Blocks at least this large are mapped (and unmapped when freed).
        trim_threshold: Free memory at the top of the heap beyond this goes back to the
            system.

    Returns:
        Whether the thresholds were set (False off Linux, or with a libc that is not glibc).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 (only glibc has it)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold)) and bool(
        mallopt(_M_TRIM_THRESHOLD, trim_threshold)
    )


def apply_default() -> bool:
    """Keep freed memory unless ``ZEROGRAD_NUMPY_KEEP_MEMORY`` is ``0``.

    Returns:
        Whether the thresholds were set.
    """
    if os.environ.get(ENV, "1").strip() == "0":
        return False
    return keep_freed_memory()
