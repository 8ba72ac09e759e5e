"""A model over protobuf's 2 GB limit keeps its weights in ONNX's external data file beside
the model (a model of 2.16 GB does for real in tests/large). Here the limit is lowered, so
that a small MLP passes it."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from conftest import normal
from onnx import numpy_helper

import zerograd_onnx
from zerograd_nn.models import MLP
from zerograd_onnx import ExportError, assemble


@pytest.fixture
def small_limit(monkeypatch):
    """Protobuf's limit lowered to 10 kB: MLP((300, 3)) on 50 features takes 62 kB."""
    monkeypatch.setattr(assemble, "PROTOBUF_LIMIT", 10_000)


def _initializers(path):
    """{name: (whether its data is external, the array)}, the external data loaded."""
    bare = onnx.load(str(path), load_external_data=False)
    outside = onnx.TensorProto.EXTERNAL
    external = {t.name: t.data_location == outside for t in bare.graph.initializer}
    full = onnx.load(str(path))
    return {t.name: (external[t.name], numpy_helper.to_array(t)) for t in full.graph.initializer}


def test_a_model_over_the_limit_keeps_its_weights_beside_it(small_limit, rng, tmp_path):
    """protobuf refused to write a model over 2 GB: a raw EncodeError ('Failed to
    serialize proto') after the whole export."""
    model = MLP((300, 3))
    path = zerograd_onnx.export(model, normal(rng, 4, 50), tmp_path / "m.onnx")
    assert sorted(os.listdir(tmp_path)) == ["m.onnx", "m.onnx.data"]
    assert os.path.getsize(path) < 2_000  # the graph, the metadata, the 12-byte bias of l1
    found = _initializers(path)
    assert {k: e for k, (e, _) in found.items()} == {
        "l0.W": True, "l0.b": True, "l1.W": True, "l1.b": False,  # 1 KiB or more: beside
    }  # fmt: skip
    for name, p in model.named_params().items():
        np.testing.assert_array_equal(found[name][1], p.data)
    bare = onnx.load(str(path), load_external_data=False)
    offsets = [int(e.value) for t in bare.graph.initializer for e in t.external_data
               if e.key == "offset"]  # fmt: skip
    assert offsets == [0, 61440, 65536]  # each array on a 4096-byte boundary
    onnx.checker.check_model(str(path), full_check=True)
    for batch in (1, 9):  # ONNX Runtime reads the data file next to the model
        assert zerograd_onnx.check(model, path, normal(rng, batch, 50)).ok


def test_external_data_on_request_and_refused_on_request(small_limit, rng, tmp_path):
    model, x = MLP((300, 3)), normal(rng, 4, 50)
    old = tmp_path / "m.onnx"
    old.write_bytes(b"the old file")
    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(model, x, old, external_data=False)
    assert str(err.value) == (
        "zerograd_onnx.export: the model takes 0.00 GB, over protobuf's limit of 2 GB for one "
        "ONNX file; export with external_data=None (the default) or True to write its weights "
        "into a file beside it. Nothing was written."
    )
    assert old.read_bytes() == b"the old file"
    assert os.listdir(tmp_path) == ["m.onnx"]
    with pytest.raises(TypeError, match="external_data must be True or False"):
        zerograd_onnx.export(model, x, old, external_data="yes")
    small = MLP((10,))
    path = zerograd_onnx.export(small, x, tmp_path / "s.onnx", external_data=True)
    assert os.path.getsize(tmp_path / "s.onnx.data") == 2000  # l0.W, 50 x 10 float32
    assert zerograd_onnx.check(small, path, x).ok


def test_a_failed_write_leaves_no_data_file(small_limit, rng, tmp_path):
    (tmp_path / "m.onnx").mkdir()  # the model's path is a folder: refused before any write
    with pytest.raises(IsADirectoryError):
        zerograd_onnx.export(MLP((300, 3)), normal(rng, 4, 50), tmp_path / "m.onnx")
    assert os.listdir(tmp_path) == ["m.onnx"]
    assert os.listdir(tmp_path / "m.onnx") == []


def test_check_names_a_missing_external_data_file(small_limit, rng, tmp_path):
    model = MLP((300, 3))
    path = zerograd_onnx.export(model, normal(rng, 4, 50), tmp_path / "m.onnx")
    (tmp_path / "m.onnx.data").rename(tmp_path / "elsewhere.data")
    with pytest.raises(ValueError) as err:
        zerograd_onnx.check(model, path, normal(rng, 4, 50))
    assert str(err.value) == (
        f"zerograd_onnx.check: ONNX Runtime cannot load {str(path)!r}: its weights are in the "
        f"external data file 'm.onnx.data', which is not in {str(tmp_path)!r}. Keep the two "
        f"files together in one folder (export wrote them side by side), or export again."
    )
