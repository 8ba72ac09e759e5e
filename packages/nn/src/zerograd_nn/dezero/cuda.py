"""DeZero's ``dezero.cuda``: array modules and GPU transfers of :mod:`zerograd.backends`.

``gpu_enable`` is read from :mod:`zerograd.backends` each time (True where a GPU backend,
zerograd-cupy, can run here), and ``cupy`` (also ``cp``) is that backend's array module,
there only when ``gpu_enable`` is True, as DeZero's is only where CuPy imports.
"""

from typing import Any

from zerograd import Variable, backends
from zerograd.backends import NoBackendError, as_cupy, as_numpy, get_array_module, gpu_backend

from .missing import missing_attribute

__all__ = ["Variable", "as_cupy", "as_numpy", "get_array_module"]


def __getattr__(name: str) -> Any:
    """``gpu_enable`` as it is now; ``cupy`` and ``cp``, the GPU backend's array module."""
    if name == "gpu_enable":
        return backends.gpu_enable
    if name in ("cupy", "cp"):
        try:
            return gpu_backend().xp
        except NoBackendError as exc:
            raise AttributeError(
                f"module {__name__!r} has no attribute {name!r}: DeZero's dezero.cuda.{name} "
                f"is CuPy, there only where it can be used, and here {exc} Test "
                f"zerograd_nn.dezero.cuda.gpu_enable first, as the book does."
            ) from None
    raise missing_attribute(__name__, name)
