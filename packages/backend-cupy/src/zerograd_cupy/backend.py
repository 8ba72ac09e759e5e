"""The ``CupyBackend``: CuPy arrays on an NVIDIA GPU, as zerograd sees them.

Nothing here imports CuPy at module level: the plugin loads on machines without CuPy (or
without a GPU) and then reports itself unavailable, with the reason.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType
from typing import Any

from zerograd.backends import NoBackendError
from zerograd.backends.numpylike import NumpyLikeBackend

from .fusion import elementwise_kernel
from .random import KEYS, NORMAL, UNIFORM, PhiloxGenerator
from .scatter import scatter_add_rows_gpu

INSTALL_HINT = "pip install 'zerograd-cupy[cuda12]'"
"""The command that installs CuPy for this backend (``[cuda13]`` for CUDA 13 drivers)."""


_ARRAY_TYPE_NAMES = frozenset({"ndarray", "_ndarray_base"})  # CuPy >= 13 has a base class


def _is_cupy_module(module: str) -> bool:
    return module == "cupy" or module.startswith("cupy.")


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _on_device(cp: Any, item: Any) -> Any:
    """One item of an index with its host arrays (numpy arrays, lists) as CuPy arrays."""
    if isinstance(item, list) or (hasattr(item, "__array__") and not isinstance(item, cp.ndarray)):
        return cp.asarray(item)
    return item


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"  # the runtime's 12040 is CUDA 12.4


def _no_device_reason(cp: Any, exc: BaseException) -> str:
    """Why the CUDA runtime found no device, told apart where CuPy can tell.

    CUDA says "driver version is insufficient" both when the driver is too old and when
    there is no driver at all; ``driverGetVersion() == 0`` means the latter.
    """
    head = "CuPy is installed but no CUDA device/driver is usable"
    runtime = cp.cuda.runtime
    try:
        driver = int(runtime.driverGetVersion())
    except Exception:
        driver = None
    if driver == 0:
        return (
            f"{head}: no NVIDIA driver was found ({_describe(exc)}). This needs a machine "
            f"with an NVIDIA GPU and its driver; the numpy backend works without one."
        )
    if driver and "InsufficientDriver" in str(exc):
        try:
            needs = f"CUDA {_cuda_version(int(runtime.runtimeGetVersion()))}"
        except Exception:
            needs = "a newer CUDA"
        return (
            f"{head}: the NVIDIA driver supports CUDA {_cuda_version(driver)} but this CuPy "
            f"needs {needs} ({_describe(exc)}). Update the driver, or install the CuPy that "
            f"matches it (zerograd-cupy[cuda12] or [cuda13])."
        )
    return f"{head}: {_describe(exc)}"


class CupyBackend(NumpyLikeBackend):
    """CuPy arrays on the current CUDA device.

    Availability is asked of CuPy (a device must be visible and a kernel must run), not
    inferred from ``import cupy`` succeeding: CuPy imports fine on machines with no GPU.

    Attributes:
        name: ``"cupy"``, the backend's registered name.
        device: ``"gpu"``.
        cache_scalars: False: zerograd may not reuse one array for a repeated Python
            scalar operand, since arrays live on one of possibly several devices.

    Examples:
        >>> b = CupyBackend()
        >>> b.name, b.device
        ('cupy', 'gpu')
        >>> isinstance(b.is_available(), bool)
        True
    """

    name = "cupy"
    device = "gpu"
    cache_scalars = False  # arrays live on one of possibly several devices

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._probed = False
        self._available = False
        self._reason = ""
        self._generator = PhiloxGenerator()
        self._fused: dict[Any, Any] = {}  # chain -> its kernel (the backend lives as long)

    # -- classification (never imports cupy) -------------------------------------------
    def owns(self, array_type: type) -> bool:
        """Tell whether arrays of ``array_type`` belong to this backend.

        Judged by the type's module and name, so CuPy is never imported here; once it is
        loaded, subclasses of ``cupy.ndarray`` with other names count too. Other CuPy
        types (``cupy.cuda.Stream``, ...) do not.

        Args:
            array_type: the type of an array.

        Returns:
            True for ``cupy.ndarray`` and its subclasses.
        """
        if not _is_cupy_module(getattr(array_type, "__module__", None) or ""):
            return False
        if array_type.__name__ in _ARRAY_TYPE_NAMES:
            return True
        ndarray = getattr(sys.modules.get("cupy"), "ndarray", None)
        return isinstance(ndarray, type) and issubclass(array_type, ndarray)

    # -- availability ------------------------------------------------------------------
    def is_available(self) -> bool:
        """Tell whether CuPy is importable, sees a CUDA device and can run a kernel on it.

        Probed once per backend instance (``zerograd.backends.refresh()`` makes a new one).

        Returns:
            True when the backend can be used here.
        """
        if not self._probed:
            with self._lock:
                if not self._probed:
                    self._available, self._reason = self._probe()
                    self._probed = True
        return self._available

    def unavailable_reason(self) -> str:
        """Say why the backend cannot be used here, with what to do.

        Returns:
            The reason, or ``''`` when the backend is available.
        """
        self.is_available()
        return self._reason

    def _probe(self) -> tuple[bool, str]:
        try:
            cp = importlib.import_module("cupy")
        except ModuleNotFoundError as exc:
            if exc.name in (None, "cupy"):
                return False, f"CuPy is not installed ({INSTALL_HINT})"
            return False, f"CuPy is installed but cannot be imported: {_describe(exc)}"
        except Exception as exc:  # a broken CUDA library can raise anything on import
            return False, f"CuPy is installed but cannot be imported: {_describe(exc)}"
        try:
            count = int(cp.cuda.runtime.getDeviceCount())
        except Exception as exc:  # CUDARuntimeError (no device, driver too old), no libcuda
            return False, _no_device_reason(cp, exc)
        if count < 1:
            return (
                False,
                "CuPy is installed but no CUDA device/driver is usable: "
                "the CUDA runtime reports 0 devices",
            )
        try:
            x = cp.arange(4, dtype=cp.float32)
            ok = float(cp.sum(x * 2)) == 12.0
        except Exception as exc:  # missing NVRTC / CUDA toolkit, out of memory, ...
            return False, (
                f"CuPy sees {count} CUDA device(s) but cannot run a kernel: {_describe(exc)}. "
                f"If the CUDA Toolkit is missing, install CuPy with its pip-packaged toolkit "
                f"(pip install 'cupy-cuda12x[ctk]', or cupy-cuda13x[ctk] for CUDA 13)."
            )
        if not ok:
            return False, f"CuPy sees {count} CUDA device(s) but a test kernel gave a wrong sum"
        return True, ""

    # -- the array module --------------------------------------------------------------
    def load_module(self) -> ModuleType:
        """The array API namespace over CuPy, imported on first use.

        CuPy's own namespace lacks some standard names and ``device=`` arguments, so this
        is ``array_api_compat.cupy``.

        Returns:
            The ``array_api_compat.cupy`` module.

        Raises:
            NoBackendError: CuPy cannot be used here (the message says why).
        """
        self._cupy()
        return importlib.import_module("array_api_compat.cupy")

    def _cupy(self) -> ModuleType:
        """The ``cupy`` module itself (for what the standard lacks); NoBackendError if unusable."""
        if not self.is_available():
            raise NoBackendError(
                f"zerograd: backend 'cupy' cannot be used here: {self.unavailable_reason()}"
            )
        return importlib.import_module("cupy")

    def version(self) -> str:
        """Return CuPy's version.

        Returns:
            The version string, or ``'-'`` when CuPy cannot be imported.
        """
        try:
            return str(importlib.import_module("cupy").__version__)
        except Exception:
            return "-"

    # -- conversions -------------------------------------------------------------------
    def to_numpy(self, x: Any) -> Any:
        """Copy a CuPy array to host memory (``cupy.asnumpy``).

        Args:
            x: a CuPy array.

        Returns:
            A numpy array.
        """
        return self._cupy().asnumpy(x)

    # -- operations --------------------------------------------------------------------
    @property
    def lib(self) -> ModuleType:
        """The ``cupy`` module (NoBackendError where CuPy cannot be used here)."""
        return self._cupy()

    def scatter_operand(self, values: Any, out: Any) -> Any:
        """``values`` as a CuPy array of ``out``'s dtype (CuPy converts no host arrays itself)."""
        return self._cupy().asarray(values, dtype=out.dtype)

    def add_at(self, out: Any, indices: Any, values: Any) -> None:
        """Add ``values`` at ``indices`` of ``out`` in place; repeated indices add up.

        A float32 or float64 ``out`` gets numpy's sums bit for bit, the same on every run
        (:func:`.scatter.scatter_add_rows_gpu`): an integer array indexing the first axis
        (an embedding's gradient) adds whole rows; any other index that can repeat an
        element (arrays in a tuple, a list, a mask) adds at the flat positions it picks,
        found by indexing an ``arange`` of ``out``'s size (a transient int64 array of that
        size). Other dtypes use ``cupy.add.at``, exact for integers in any order. CuPy copies
        numpy or list index arrays to the device itself.

        Args:
            out: a C-contiguous CuPy array (:meth:`scatter_add`'s copy).
            indices: an index that may pick an element more than once.
            values: what to add, broadcast to ``out[indices]``; cast to ``out``'s dtype.
        """
        cp = self._cupy()
        values = cp.asarray(values, dtype=out.dtype)
        if out.dtype.char not in "fd":  # not float32 or float64: integers add exactly
            cp.add.at(out, indices, values)
            return
        items = indices if type(indices) is tuple else (indices,)
        items = tuple(_on_device(cp, i) for i in items)
        rows = items[0] if len(items) == 1 else None
        if out.ndim and getattr(getattr(rows, "dtype", None), "kind", None) in ("i", "u"):
            scatter_add_rows_gpu(out, rows, values)
        else:  # the flat position of each element the index picks: rows of one element
            picked = cp.arange(out.size).reshape(out.shape)[items]
            scatter_add_rows_gpu(out.reshape(-1), picked, values)

    def fuse(self, chain: Any, dtype: Any) -> Any:
        """One ``ElementwiseKernel`` per chain (:mod:`.fusion`), made once and kept.

        Only float32 and float64 chains are fused: CuPy computes float16 operations in
        float32, which a kernel over half values would not repeat step by step.
        """
        if getattr(dtype, "char", None) not in ("f", "d"):
            return None
        kernel = self._fused.get(chain)
        if kernel is None:
            kernel = self._fused[chain] = elementwise_kernel(chain)
        return kernel

    # -- random numbers: zerograd's own Philox stream (its state can be saved) ----------
    @property
    def generator(self) -> PhiloxGenerator:
        """The generator :meth:`randn`, :meth:`rand` and :meth:`permutation` draw from.

        Not ``cupy.random``'s: cuRAND cannot report its state, this one's is two integers
        (see :mod:`zerograd_cupy.random`).
        """
        return self._generator

    def randn(self, *shape: int, dtype: Any = None) -> Any:
        """Standard-normal samples on the current device (float64 unless ``dtype`` says)."""
        self._cupy()
        return self._generator.draw(shape, self.resolve_dtype(dtype or "float64"), NORMAL)

    def rand(self, *shape: int, dtype: Any = None) -> Any:
        """Uniform samples in ``[0, 1)`` on the current device (float64 unless ``dtype`` says)."""
        self._cupy()
        return self._generator.draw(shape, self.resolve_dtype(dtype or "float64"), UNIFORM)

    def permutation(self, n: int) -> Any:
        """A random ordering of ``0 .. n-1`` (int64): the order of ``n`` random 64-bit keys."""
        cp = self._cupy()
        return cp.argsort(self._generator.draw((int(n),), "uint64", KEYS))

    def seed(self, n: int) -> None:
        """Restart the stream of seed ``n`` (no GPU is needed to seed it)."""
        self._generator.seed(n)

    def random_state(self) -> Any:
        """``[seed, offset]`` as a numpy uint64 array."""
        import numpy

        return numpy.array(self._generator.get_state(), dtype=numpy.uint64)

    def set_random_state(self, state: Any) -> None:
        """Continue from ``[seed, offset]`` (what :meth:`random_state` returned)."""
        import numpy

        a = numpy.asarray(state)
        if a.shape != (2,) or a.dtype.kind not in "iu":
            raise ValueError(
                f"zerograd-cupy: a random state is [seed, offset] (2 integers), got shape "
                f"{a.shape} of {a.dtype}"
            )
        self._generator.set_state((int(a[0]), int(a[1])))
