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

from .context import OpContext
from .errors import ExportError, ParityError
from .exporter import DEFAULT_OPSET, MIN_OPSET, export
from .parity import CheckResult, OutputComparison, check
from .registry import register, supported, unregister

__version__ = _distribution_version("zerograd-onnx")  # the repository's VERSION file

__all__ = [
    "DEFAULT_OPSET",
    "MIN_OPSET",
    "CheckResult",
    "ExportError",
    "OpContext",
    "OutputComparison",
    "ParityError",
    "check",
    "export",
    "register",
    "supported",
    "unregister",
]
