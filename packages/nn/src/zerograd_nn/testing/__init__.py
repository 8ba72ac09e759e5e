"""Testing for zerograd-nn's backend side: the kernel conformance suite.

:mod:`zerograd_nn.testing.conformance` checks a backend's nn kernels (its kernel plugin's, or
the generic ones it gets without one) and zerograd-nn's layers on its arrays. Run it after
the core suite, with pytest::

    ZEROGRAD_CONFORMANCE_BACKEND=mybackend pytest --pyargs zerograd_nn.testing.conformance
"""
