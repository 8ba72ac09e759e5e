"""The package's API: each module's ``__all__``, gathered by the package."""

import zerograd_onnx
from zerograd_onnx import context, errors, exporter, parity, registry


def test_the_package_exports_exactly_its_modules_public_names_each_once():
    assert sorted(zerograd_onnx.__all__) == [
        "CheckResult", "DEFAULT_OPSET", "ExportError", "MIN_OPSET", "OpContext",
        "OutputComparison", "ParityError", "check", "export", "register", "supported",
        "unregister",
    ]  # fmt: skip
    assert len(set(zerograd_onnx.__all__)) == len(zerograd_onnx.__all__)
    for module in (context, errors, exporter, parity, registry):
        for name in module.__all__:
            assert getattr(zerograd_onnx, name) is getattr(module, name)
    namespace = {}
    exec("from zerograd_onnx import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(zerograd_onnx.__all__)
