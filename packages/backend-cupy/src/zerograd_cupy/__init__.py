"""zerograd-cupy: the CuPy backend plugin (NVIDIA GPUs through CUDA).

Registered through the ``zerograd.backends`` entry point; zerograd finds it once it is
installed. It imports nothing from CuPy until a GPU is actually used, so installing it on
a machine without CuPy or without a GPU is harmless: the backend is then listed as
unavailable, with the reason, and ``Variable.to_gpu()`` says that reason.

```sh
pip install 'zerograd-cupy[cuda12]'   # or [cuda13]
```

Examples:
    >>> from zerograd_cupy import CupyBackend
    >>> CupyBackend().device
    'gpu'
"""

from __future__ import annotations

from importlib.metadata import version as _distribution_version

from zerograd.backends import Backend, hookimpl

from .backend import INSTALL_HINT, CupyBackend
from .kernels import col2im_gpu, im2col_gpu

__version__ = _distribution_version("zerograd-cupy")  # the repository's VERSION file
__all__ = ["INSTALL_HINT", "CupyBackend", "col2im_gpu", "im2col_gpu", "zerograd_backend"]


@hookimpl
def zerograd_backend() -> Backend:
    """Give zerograd this plugin's backend (the ``zerograd_backend`` hook).

    Returns:
        A ``CupyBackend``, available only where CuPy can run a kernel on a CUDA device.
    """
    return CupyBackend()
