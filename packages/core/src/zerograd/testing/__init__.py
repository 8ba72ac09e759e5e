"""Testing helpers: numerical gradients, gradient checks, array comparison.

The backend conformance suite is :mod:`zerograd.testing.conformance` (run it with
``pytest --pyargs zerograd.testing.conformance``).
"""

from .gradcheck import array_allclose, array_equal, check_backward, gradient_check, numerical_grad

__all__ = ["array_allclose", "array_equal", "check_backward", "gradient_check", "numerical_grad"]
