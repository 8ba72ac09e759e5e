"""The full-size models: VGG16 (138 M parameters) and ResNet-50 on 224 x 224 images, exported
and run in ONNX Runtime at batch sizes 1 and 2 within rtol = atol = 1e-5 of zerograd; and
a model of 2.16 GB, over protobuf's 2 GB limit for one file, whose weights go into the
external data file beside it.

Slow (1 to 2 minutes on the shared 2-core machine) and memory-hungry (a 553 MB file for
VGG16, 3.1 GB of peak memory; 9.5 GB with the 2.16 GB model): run by ``nox -s onnx_large``,
not by the default ``nox`` run, whose ``onnx`` session checks the same layers on small
images (tests/test_models.py) and external data under a lowered limit
(tests/test_external_data.py). Set ZEROGRAD_ONNX_LARGE=1 to run them with plain pytest.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_models import assert_round_trip, randomize_batch_norms, scale_outputs  # noqa: E402

import zerograd_nn.functional as F  # noqa: E402
import zerograd_nn.layers as L  # noqa: E402
import zerograd_onnx  # noqa: E402
from zerograd_nn.models import VGG16, ResNet50, Sequential  # noqa: E402

pytestmark = pytest.mark.skipif(
    os.environ.get("ZEROGRAD_ONNX_LARGE") != "1",
    reason="full-size VGG16 and ResNet-50 run in `nox -s onnx_large` (ZEROGRAD_ONNX_LARGE=1)",
)


def test_vgg16_full_size(rng, tmp_path):
    model = VGG16()
    example = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
    scale_outputs(model, model.fc8.W, example)
    assert model.count_params() == 138_357_544
    other = rng.standard_normal((2, 3, 224, 224)).astype(np.float32)
    proto, results = assert_round_trip(model, example, other, tmp_path / "vgg16.onnx")
    assert os.path.getsize(tmp_path / "vgg16.onnx") > 138_357_544 * 4
    print(f"VGG16: {[str(r) for r in results]}")


def test_resnet50_full_size(rng, tmp_path):
    model = ResNet50()
    example = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
    scale_outputs(model, model.fc6.W, example)
    randomize_batch_norms(model, rng)
    scale_outputs(model, model.fc6.W, example)
    other = rng.standard_normal((2, 3, 224, 224)).astype(np.float32)
    proto, results = assert_round_trip(model, example, other, tmp_path / "resnet50.onnx")
    print(f"ResNet-50: {[str(r) for r in results]}")


def test_a_model_over_2_gb_keeps_its_weights_beside_the_file(rng, tmp_path):
    """protobuf refused it: a raw EncodeError ('Failed to serialize proto')."""
    model = Sequential(L.Linear(23_000, in_size=23_500), F.relu, L.Linear(8, in_size=23_000))
    assert model.count_params() * 4 > 2**31  # 540.7 M float32 parameters
    x = rng.standard_normal((1, 23_500)).astype(np.float32)
    path = zerograd_onnx.export(model, x, tmp_path / "big.onnx")
    assert os.path.getsize(path) < 10_000
    assert os.path.getsize(tmp_path / "big.onnx.data") >= model.count_params() * 4 - 8 * 4
    for batch in (1, 2):
        other = rng.standard_normal((batch, 23_500)).astype(np.float32)
        assert zerograd_onnx.check(model, path, other).ok
