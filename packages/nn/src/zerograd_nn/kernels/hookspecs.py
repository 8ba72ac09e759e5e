"""Hook specification of zerograd-nn's kernel contract (pluggy project ``zerograd_nn``).

The core contract (:mod:`zerograd.backends.hookspecs`) is arrays only. Convolution, pooling
and loss kernels are zerograd-nn's: it declares this hook, and a backend distribution that
has faster kernels implements it in a module named by an entry point of the group
``zerograd_nn.kernels``::

    # pyproject.toml
    [project.entry-points."zerograd_nn.kernels"]
    mylib = "zerograd_mylib.nn_kernels"

That module is imported only by zerograd-nn, so it may import ``zerograd_nn`` although the
backend's distribution does not depend on it. A backend with no such module gets the
generic kernels (:class:`~zerograd_nn.kernels.Kernels`), written with array API calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from zerograd.backends import Backend

    from .generic import Kernels

PROJECT = "zerograd_nn"
"""pluggy's project name for zerograd-nn's hooks (the markers below are bound to it)."""

ENTRY_POINT_GROUP = "zerograd_nn.kernels"
"""The entry-point group zerograd-nn loads kernel plugins from."""

hookspec = pluggy.HookspecMarker(PROJECT)
"""Marker for zerograd-nn's hook specifications."""

hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marker for a plugin's hook functions: ``@hookimpl def zerograd_nn_kernels(backend): ...``."""


@hookspec
def zerograd_nn_kernels(backend: Backend) -> Kernels | None:  # type: ignore[empty-body]
    """Return the kernels this plugin has for ``backend``, or None for a backend it does not know.

    **Calling semantics:** called once per backend, the first time zerograd-nn needs a kernel
    for one of its arrays (:func:`~zerograd_nn.kernels.kernels_of`); the result is kept and
    used directly, never through the hook, on the hot path. Each plugin is asked on its own,
    the last registered first (pluggy's order: a plugin registered by hand with
    :func:`zerograd_nn.kernels.register` is asked before the installed ones), and the first
    result that is not None wins. A plugin that
    raises, or returns something other than a :class:`~zerograd_nn.kernels.Kernels`, is
    reported with a :class:`~zerograd.backends.BackendPluginWarning` naming it and skipped
    (a :class:`~zerograd.backends.BackendPluginError` in strict mode); when no plugin answers,
    the generic :class:`~zerograd_nn.kernels.Kernels` serve the backend.

    Args:
        backend: A backend of :mod:`zerograd.backends`.

    Returns:
        A :class:`~zerograd_nn.kernels.Kernels` (usually a subclass overriding the kernels the
        backend does faster) bound to ``backend``, or None.

    Examples:
        >>> from zerograd_nn.kernels import Kernels, hookimpl
        >>> class MyKernels(Kernels):
        ...     def softmax(self, x, axis):
        ...         return super().softmax(x, axis)
        >>> @hookimpl
        ... def zerograd_nn_kernels(backend):
        ...     return MyKernels(backend) if backend.name == "mylib" else None
    """


def kernels_hook(backend_type: type, kernels_type: type) -> Any:
    """Return a ``zerograd_nn_kernels`` hook function serving the backends of one class.

    What a backend's kernel module usually needs, in one line:
    ``zerograd_nn_kernels = kernels_hook(MyBackend, MyKernels)``.

    Args:
        backend_type: The class of the backends served (instances of subclasses too).
        kernels_type: The :class:`~zerograd_nn.kernels.Kernels` subclass made for each.

    Returns:
        A function marked with :data:`hookimpl` that returns ``kernels_type(backend)`` for an
        instance of ``backend_type`` and None for any other backend.
    """

    def zerograd_nn_kernels(backend: Backend) -> Kernels | None:
        return kernels_type(backend) if isinstance(backend, backend_type) else None

    zerograd_nn_kernels.__doc__ = (
        f"The ``zerograd_nn_kernels`` hook: {kernels_type.__name__} for a "
        f"{backend_type.__name__}, None for any other backend."
    )
    return hookimpl(zerograd_nn_kernels)
