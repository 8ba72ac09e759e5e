"""zerograd-torch: a third-party zerograd backend for PyTorch CPU tensors (an example).

The array module (``xp``) is ``array_api_compat.torch``: PyTorch as the Python array API
standard spells it. What the standard lacks is a method: conversions, random numbers from
PyTorch's global generator, scatter-add through ``index_put_``, in-place arithmetic
through ``out=``. The rest is ``Backend``'s defaults. zerograd differentiates; PyTorch's
autograd stays off.

>>> import numpy as np, zerograd
>>> from zerograd.backends import get_backend
>>> b = get_backend("torch")
>>> x = zerograd.Variable(b.from_numpy(np.array([1.0, 2.0])))
>>> (x * x).sum().backward()
>>> b.to_numpy(x.grad.data).tolist()
[2.0, 4.0]
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from zerograd.backends import Backend, hookimpl, indexing

__version__ = "0.1.0"
__all__ = ["TorchBackend", "zerograd_backend"]


class TorchBackend(Backend):
    """``torch.Tensor`` on the CPU; PyTorch is imported the first time it is needed."""

    name = "torch"
    # a tensor cannot be made read-only, so a shared scalar would change if a forward
    # wrote into it (the conformance suite checks): each operand gets its own tensor
    cache_scalars = False

    def owns(self, array_type: type) -> bool:
        # torch.Tensor and its subclasses (torch.nn.Parameter), by name: nothing imported
        return any(t.__module__ == "torch" and t.__name__ == "Tensor" for t in array_type.__mro__)

    def load_module(self) -> ModuleType:
        import array_api_compat.torch

        return array_api_compat.torch

    def version(self) -> str:
        import torch

        return torch.__version__

    def to_numpy(self, x: Any) -> Any:
        """A numpy copy of ``x`` (never sharing the tensor's memory)."""
        import numpy as np

        return np.array(x.detach().numpy(), copy=True)

    def from_numpy(self, a: Any) -> Any:
        """A tensor copy of the numpy array ``a``, of the same dtype."""
        import numpy as np
        import torch

        return torch.from_numpy(np.array(a, copy=True, order="C"))

    def getitem(self, x: Any, index: Any) -> Any:
        """``x[index]`` with numpy's rules; a slice with a negative step (which PyTorch
        refuses) is gathered through ``xp.take``."""
        items = index if isinstance(index, tuple) else (index,)
        if any(isinstance(i, slice) and i.step is not None and i.step < 0 for i in items):
            return indexing.gather(self, x, index)
        return super().getitem(x, index)

    def scatter_add(self, a: Any, indices: Any, values: Any) -> Any:
        """A copy of ``a`` plus ``values`` at ``indices``; repeats add up (``index_put_``).

        Indices that hold a slice, an int or None take the default.
        """
        import torch

        items = indices if isinstance(indices, tuple) else (indices,)
        if not all(hasattr(i, "dtype") or isinstance(i, list) for i in items):
            return super().scatter_add(a, indices, values)
        index = [torch.as_tensor(i) for i in items]
        index = tuple(i if i.dtype == torch.bool else i.long() for i in index)
        values = torch.as_tensor(values, dtype=a.dtype)
        return a.clone().index_put_(index, values, accumulate=True)

    def compute_into(self, op: str, x1: Any, x2: Any = None, *, out: Any) -> None:
        """``torch.<op>(x1, x2, out=out)``: no temporary tensor."""
        import torch

        args = (x1,) if x2 is None else (x1, x2)
        getattr(torch, op)(*args, out=out)

    def seed(self, n: int) -> None:
        """``torch.manual_seed(n)``: PyTorch's global generator, which the draws use."""
        import torch

        torch.manual_seed(n)

    def random_state(self) -> Any:
        """``torch.get_rng_state()`` as a numpy uint8 array (checkpoints save it)."""
        import torch

        return torch.get_rng_state().numpy().copy()

    def set_random_state(self, state: Any) -> None:
        """``torch.set_rng_state`` of what :meth:`random_state` returned, checked first."""
        import numpy as np
        import torch

        a = np.asarray(state)
        n = torch.get_rng_state().numel()
        if a.shape != (n,) or a.dtype.kind not in "iu" or (n and (a.min() < 0 or a.max() > 255)):
            raise ValueError(
                f"zerograd-torch: a random state is torch.get_rng_state()'s {n} bytes, got "
                f"shape {a.shape} of {a.dtype}"
            )
        torch.set_rng_state(torch.from_numpy(a.astype(np.uint8)))

    def randn(self, *shape: int, dtype: Any = None) -> Any:
        """Standard-normal samples; PyTorch's default float (float32) unless ``dtype``."""
        import torch

        return torch.randn(shape, dtype=dtype and self.resolve_dtype(dtype))

    def rand(self, *shape: int, dtype: Any = None) -> Any:
        """Uniform samples in ``[0, 1)``; dtype as :meth:`randn`."""
        import torch

        return torch.rand(shape, dtype=dtype and self.resolve_dtype(dtype))

    def permutation(self, n: int) -> Any:
        """A random ordering of ``0 .. n-1`` (int64)."""
        import torch

        return torch.randperm(n)


@hookimpl
def zerograd_backend() -> Backend:
    """The PyTorch CPU backend."""
    return TorchBackend()
