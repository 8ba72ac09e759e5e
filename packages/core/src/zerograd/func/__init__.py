"""Function transforms: derivatives, Jacobians and batching as functions of functions.

``grad(f)`` is the gradient of ``f`` as a function, ``vmap(f)`` runs ``f`` on a batch,
and they compose: ``vmap(grad(loss), in_axes=(None, 0, 0))(params, xs, ts)`` gives
per-sample gradients; ``hessian(f)``, ``jacrev``, ``jacfwd``, ``vjp``, ``jvp`` and ``hvp``
the higher derivatives. The names and semantics follow ``torch.func`` and JAX, both
spellings where they differ (``vmap``'s ``in_axes`` or ``in_dims``, ``value_and_grad`` and
``grad_and_value``). They run on zerograd's engine (any backend) and change nothing
outside them: no Variable's ``grad``, no model's parameters.

>>> import numpy as np
>>> from zerograd.func import grad, hessian, vmap
>>> f = lambda x: (x ** 3).sum()
>>> grad(f)(np.array([1.0, 2.0]))
array([ 3., 12.])
>>> vmap(grad(f))(np.array([[1.0], [2.0]]))
array([[ 3.],
       [12.]])
"""

from . import rules
from .batched import BatchedVariable, VmapFallbackWarning, batch_values
from .gradient import grad, grad_and_value, value_and_grad
from .jacobians import hessian, hvp, jacfwd, jacobian, jacrev
from .model import functional_call
from .products import jvp, vjp
from .rules import Batch, batching_rule
from .vectorize import vmap

__all__ = [
    "Batch",
    "BatchedVariable",
    "VmapFallbackWarning",
    "batch_values",
    "batching_rule",
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "hvp",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jvp",
    "rules",
    "value_and_grad",
    "vjp",
    "vmap",
]
