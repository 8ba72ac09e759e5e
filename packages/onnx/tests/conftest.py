"""Shared by zerograd-onnx's tests: a round trip through a file, and seeded arrays."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import zerograd_onnx
from zerograd import no_grad, test_mode

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def normal(rng, *shape):
    """float32 standard-normal draws."""
    return rng.standard_normal(shape).astype(np.float32)


def forward(model, *xs):
    """The model's output arrays in test mode, without gradients."""
    with no_grad(), test_mode():
        out = model(*xs)
    outs = out if isinstance(out, tuple) else (out,)
    return [np.asarray(y.data) for y in outs]


def round_trip(model, example, other, path, **kwargs):
    """Export ``model`` on ``example`` to ``path``, check the file with onnx's full checker,
    and compare ONNX Runtime with zerograd (rtol = atol = 1e-5) on ``example`` and on
    ``other`` (another batch size). Returns the loaded model and the two CheckResults."""
    zerograd_onnx.export(model, example, path, **kwargs)
    onnx.checker.check_model(str(path), full_check=True)
    results = [zerograd_onnx.check(model, path, x) for x in (example, other)]
    for result in results:
        assert result.ok and result.rtol == result.atol == 1e-5
    return onnx.load(str(path)), results


def op_types(proto):
    """The set of ONNX operators a model's graph uses."""
    return {n.op_type for n in proto.graph.node}


def load_example(name):
    """``examples/<name>.py`` as a module; the test skips, saying why, outside the checkout."""
    path = EXAMPLES / f"{name}.py"
    if not path.is_file():
        pytest.skip(f"{path} not found (tests run outside the repository checkout)")
    if str(EXAMPLES) not in sys.path:  # the examples import their siblings (_args.py)
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
