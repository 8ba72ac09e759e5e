"""Exceptions and warnings raised by the backend registry."""


class BackendError(RuntimeError):
    """Base class of the backend registry's errors."""


class NoBackendError(BackendError):
    """No backend plugin is installed, or none is usable for the request."""


class BackendPluginError(BackendError):
    """A backend plugin failed to load or broke the contract (raised in strict mode)."""


class BackendMismatchError(BackendError, TypeError):
    """Arrays of two different backends met in one operation."""


class BackendPluginWarning(UserWarning):
    """A backend plugin was skipped; the others still work."""
