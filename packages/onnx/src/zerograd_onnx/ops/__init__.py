"""The converters, one module per concept.

:mod:`zerograd_onnx.registry` maps each Function class to one of them.
"""
