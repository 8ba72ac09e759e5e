"""CuPy's elementwise kernels, built from their CUDA source on first use.

Nothing here imports CuPy before a kernel is asked for, so the plugin loads on machines
without it. Each module keeps its kernel as a tuple of :func:`elementwise`'s arguments.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any


@functools.cache
def elementwise(in_params: str, out_params: str, body: str, name: str, preamble: str = "") -> Any:
    """The ``cupy.ElementwiseKernel`` of these arguments, made once per process.

    CuPy compiles it for each dtype on its first launch (and caches the binary on disk).

    Args:
        in_params: the input parameters, as CuPy declares them (``"raw T x, int64 c"``).
        out_params: the output parameters.
        body: the CUDA C run for each index ``i``.
        name: the kernel's name.
        preamble: CUDA C put before the kernel (helper functions).

    Returns:
        The kernel.
    """
    cp = importlib.import_module("cupy")
    return cp.ElementwiseKernel(in_params, out_params, body, name, preamble=preamble)
