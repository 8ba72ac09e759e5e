"""ONNX Runtime (CPU) running the file zerograd-onnx exports from fw_zerograd's networks."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import fw_zerograd
import numpy as np
import onnxruntime

import zerograd_onnx

_threads = 1


def setup(threads: int) -> None:
    """Give ONNX Runtime's sessions ``threads`` intra-op threads (and 1 inter-op thread)."""
    global _threads
    _threads = threads


def inference(model: str, weights: list[np.ndarray], act: str, x: np.ndarray):  # noqa: ANN201
    """Export fw_zerograd's network on the example batch ``x``; ONNX Runtime's run of it."""
    net = fw_zerograd.network(model, weights, act)
    folder = tempfile.mkdtemp()
    try:
        path = zerograd_onnx.export(net.forward, x, str(Path(folder) / f"{model}.onnx"))
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = _threads
        options.inter_op_num_threads = 1
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    finally:
        shutil.rmtree(folder)  # the session holds the model in memory
    name = session.get_inputs()[0].name

    def run(x: np.ndarray) -> np.ndarray:
        return session.run(None, {name: x})[0]

    return run
