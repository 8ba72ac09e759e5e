"""zerograd-jax: a third-party zerograd backend for JAX arrays (an out-of-tree example).

JAX arrays are immutable and JAX draws random numbers from explicit keys, two ways its
semantics differ from numpy's. The plugin is found through the ``zerograd.backends`` entry
point in its ``pyproject.toml``; its array module (``xp``) is ``jax.numpy`` itself.

Dtypes follow JAX: unless 64-bit mode is on (``JAX_ENABLE_X64=1`` in the environment, or
``jax.config.update("jax_enable_x64", True)`` before any array is made), arrays are at most
32 bits wide, so a float64 numpy array arrives as float32 and an int64 one as int32.

>>> import numpy as np
>>> import zerograd
>>> from zerograd.backends import get_backend
>>> b = get_backend("jax")
>>> x = zerograd.Variable(b.from_numpy(np.array([1.0, 2.0], np.float32)))
>>> (x * x).sum().backward()
>>> b.to_numpy(x.grad.data).tolist()
[2.0, 4.0]
"""

from __future__ import annotations

import secrets
import threading
from types import ModuleType
from typing import Any

from zerograd.backends import Backend, hookimpl

from .indexing import check_bounds, lists_as_arrays

__version__ = "0.1.0"
__all__ = ["JaxBackend", "zerograd_backend"]


class JaxBackend(Backend):
    """JAX arrays on JAX's default device, with ``jax.numpy`` as the array module.

    Loading the plugin imports nothing heavy: JAX is imported the first time the array
    module, the device or a conversion is needed.
    """

    name = "jax"
    cache_scalars = True  # immutable arrays on one default device: a shared scalar is safe

    def __init__(self) -> None:
        self._key: Any = None  # the jax.random key; made on the first draw or by seed()
        self._key_lock = threading.Lock()
        self._reason: str | None = None  # unavailable_reason(), once known

    # -- classification, availability ----------------------------------------------------
    def owns(self, array_type: type) -> bool:
        # jax.Array's concrete class lives in jaxlib; decided by module name, no import
        return any(
            t.__name__ in ("Array", "ArrayImpl")
            and (t.__module__ or "").split(".")[0] in ("jax", "jaxlib")
            for t in array_type.__mro__
        )

    def load_module(self) -> ModuleType:
        import jax.numpy

        return jax.numpy

    @property
    def device(self) -> str:  # type: ignore[override]
        """``'gpu'`` when JAX's default device is a GPU, else ``'cpu'``."""
        try:
            import jax

            return "gpu" if jax.default_backend() in ("gpu", "cuda", "rocm") else "cpu"
        except Exception:  # unusable JAX: is_available() says why
            return "cpu"

    def is_available(self) -> bool:
        return not self.unavailable_reason()

    def unavailable_reason(self) -> str:
        if self._reason is None:  # asked on every conversion: find out once
            try:
                import jax

                jax.devices()
                self._reason = ""
            except Exception as e:  # ImportError, or no usable XLA backend
                self._reason = f"JAX cannot run here ({type(e).__name__}: {e}); pip install jax"
        return self._reason

    def version(self) -> str:
        import jax

        return jax.__version__

    # -- conversions ---------------------------------------------------------------------
    def to_numpy(self, x: Any) -> Any:
        """A writable numpy copy of ``x`` (never aliasing JAX's buffer)."""
        import numpy as np

        return np.array(x, copy=True)

    def from_numpy(self, a: Any) -> Any:
        """A JAX copy of ``a``; float64 becomes float32 (int64: int32) unless 64-bit mode is on."""
        return self.xp.array(a, copy=True)

    # -- operations the standard lacks -----------------------------------------------------
    def getitem(self, x: Any, index: Any) -> Any:
        """``x[index]``; an out-of-range integer raises ``IndexError`` (JAX would clamp it).

        A bare list is an integer (or boolean) array index, as in numpy; JAX refuses it.
        """
        index = lists_as_arrays(index)
        check_bounds(x.shape, index)
        return x[index]

    def scatter_add(self, a: Any, indices: Any, values: Any) -> Any:
        """``a`` with ``values`` added at ``indices`` (repeats add up), through ``a.at[]``."""
        indices = lists_as_arrays(indices)
        check_bounds(a.shape, indices)  # .at[].add would drop out-of-range ones silently
        return a.at[indices].add(values)

    # -- random numbers: an explicit key, split for every draw -----------------------------
    def seed(self, n: int) -> None:
        """Restart this backend's random numbers from ``jax.random.key(n)``."""
        import jax.random

        with self._key_lock:
            self._key = jax.random.key(n)

    def _draw(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """``jax.random.<name>(key, *args, **kwargs)`` with a fresh subkey."""
        import jax.random

        with self._key_lock:
            if self._key is None:  # unseeded: fresh entropy, as numpy's unseeded generator
                self._key = jax.random.key(secrets.randbits(32))
            self._key, key = jax.random.split(self._key)
        return getattr(jax.random, name)(key, *args, **kwargs)

    def random_state(self) -> Any:
        """The key's data (``jax.random.key_data``) as a numpy uint32 array: checkpoints save
        it. An unseeded backend draws its key's entropy now, so the state names one."""
        import jax.random
        import numpy as np

        with self._key_lock:
            if self._key is None:
                self._key = jax.random.key(secrets.randbits(32))
            return np.asarray(jax.random.key_data(self._key)).copy()

    def set_random_state(self, state: Any) -> None:
        """Draw on from the key whose data :meth:`random_state` returned, checked first."""
        import jax.numpy as jnp
        import jax.random
        import numpy as np

        a = np.asarray(state)
        want = jax.random.key_data(jax.random.key(0)).shape
        if (
            a.shape != want
            or a.dtype.kind not in "iu"
            or (a.size and (a.min() < 0 or a.max() >= 2**32))
        ):
            raise ValueError(
                f"zerograd-jax: a random state is jax.random.key_data's {want} unsigned 32-bit "
                f"integers, got shape {a.shape} of {a.dtype}"
            )
        key = jax.random.wrap_key_data(jnp.asarray(a.astype(np.uint32)))
        with self._key_lock:
            self._key = key

    def randn(self, *shape: int, dtype: Any = None) -> Any:
        """Standard-normal samples of ``shape``: float32 (float64 in 64-bit mode) unless given."""
        return self._draw("normal", shape, dtype=dtype or float)

    def rand(self, *shape: int, dtype: Any = None) -> Any:
        """Uniform samples in ``[0, 1)`` of ``shape`` (dtype as :meth:`randn`)."""
        return self._draw("uniform", shape, dtype=dtype or float)

    def permutation(self, n: int) -> Any:
        """A random ordering of ``arange(n)``."""
        return self._draw("permutation", n)


@hookimpl
def zerograd_backend() -> Backend:
    """The JAX backend."""
    return JaxBackend()
