"""zerograd-onnx: export a zerograd model's forward to ONNX, checked against ONNX Runtime.

:func:`export` runs the forward once on example inputs (test mode, no gradients),
records each Function as it is applied, and writes the ONNX graph, parameters as
initializers named by their dotted paths. :func:`check` runs the file in ONNX Runtime
(``pip install 'zerograd-onnx[check]'``) and compares it with zerograd's forward.

Examples:
    >>> import numpy as np, tempfile, os
    >>> import zerograd_onnx
    >>> from zerograd_nn.models import MLP
    >>> model = MLP((16, 3))
    >>> path = zerograd_onnx.export(model, np.ones((4, 8), np.float32),
    ...                             os.path.join(tempfile.mkdtemp(), "mlp.onnx"))
    >>> zerograd_onnx.check(model, path, np.ones((7, 8), np.float32)).ok
    True
"""

from importlib.metadata import version as _distribution_version

__version__ = _distribution_version("zerograd-onnx")  # the repository's VERSION file

from . import context, errors, exporter, parity, registry
from .context import *  # noqa: F403
from .errors import *  # noqa: F403
from .exporter import *  # noqa: F403
from .parity import *  # noqa: F403
from .registry import *  # noqa: F403

# each module's __all__ names its part of the package's API, next to the definitions
__all__: list[str] = []
__all__ += context.__all__
__all__ += errors.__all__
__all__ += exporter.__all__
__all__ += parity.__all__
__all__ += registry.__all__
