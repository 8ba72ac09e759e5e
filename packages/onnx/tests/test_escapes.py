"""Values that leave the graph are refused at export, never frozen into the file: the
model's own code reading a traced value's array, an input the graph never reads, a
recurrent state left by an earlier call."""

from __future__ import annotations

import os
import types

import numpy as np
import pytest
from conftest import load_example, normal

import zerograd_nn.functional as F
import zerograd_nn.layers as L
import zerograd_onnx
from zerograd import Variable
from zerograd_onnx import ExportError


def _branchy(x):
    return F.exp(x) if x.data.sum() > 0 else F.tanh(x)  # a branch on the values


@pytest.mark.parametrize("dynamic_batch", [True, False])
def test_a_branch_on_x_data_is_refused(dynamic_batch, rng, tmp_path):
    positive = np.abs(normal(rng, 3, 4))
    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(
            _branchy, positive, tmp_path / "b.onnx", dynamic_batch=dynamic_batch
        )  # the file took exp for every input, where zerograd takes tanh on negative ones
    line = _branchy.__code__.co_firstlineno + 1
    assert str(err.value).startswith(
        f"zerograd_onnx.export: the forward reads a Variable's value into Python (x.data at "
        f"{__file__}, line {line}, outside any layer of the model)"
    )
    assert "x.shape and x.dtype need no .data" in str(err.value)
    assert os.listdir(tmp_path) == []


def test_an_array_from_x_data_both_runs_share_is_refused(rng, tmp_path):
    def shifted(x):
        return x - np.asarray(x.data).max()  # the extra row repeats row 0: the same maximum

    with pytest.raises(ExportError, match=r"reads a Variable's value into Python \(x.data at"):
        zerograd_onnx.export(shifted, normal(rng, 3, 4), tmp_path / "s.onnx")
    assert os.listdir(tmp_path) == []


def test_reading_metadata_or_parameters_through_data_is_no_read(rng, tmp_path):
    w = np.arange(4, dtype=np.float32)

    def model(x):
        n, d = x.data.shape  # metadata: no value (nor .dtype, .ndim, .size, is None)
        y = x * w.astype(x.data.dtype)
        return F.reshape(y, (n, d * x.data.ndim // 2)) if x.data is not None else x

    path = zerograd_onnx.export(model, normal(rng, 3, 4), tmp_path / "m.onnx", dynamic_batch=False)
    assert zerograd_onnx.check(model, path, normal(rng, 3, 4)).ok


@pytest.mark.parametrize(
    "loss, t",
    [(F.softmax_cross_entropy, np.array([[1], [0], [1]]))],  # (N, 1) labels made (N,)
    ids=["softmax_cross_entropy_column"],
)
def test_an_input_made_an_array_outside_the_graph_is_refused(loss, t, rng, tmp_path):
    """The loss converts the targets outside the graph: with a static batch, the file held
    them as a constant and ignored its second input in silence."""
    x = rng.uniform(0.1, 0.9, (3, 2)).astype(np.float32)
    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(loss, (x, t), tmp_path / "l.onnx", dynamic_batch=False)
    assert str(err.value).startswith(
        f"zerograd_onnx.export: input 'input_1' (shape {t.shape}, int64) reaches no node of the "
        f"graph: no function whose result the outputs need takes it. Either the forward made "
        f"an array of it outside zerograd's functions"
    )
    assert os.listdir(tmp_path) == []
    # labels of shape (N,) are an input of the graph, and the file follows them
    labels = np.array([1, 0, 1])
    path = zerograd_onnx.export(
        F.softmax_cross_entropy, (x, labels), tmp_path / "l.onnx", dynamic_batch=False
    )
    assert zerograd_onnx.check(F.softmax_cross_entropy, path, (x, 1 - labels)).ok


@pytest.mark.parametrize(
    "loss", [F.sigmoid_cross_entropy, F.binary_cross_entropy], ids=lambda f: f.__name__
)
def test_the_binary_losses_targets_are_an_input_of_the_graph(loss, rng, tmp_path):
    """The 0/1 targets are converted to the scores' dtype by a Function (``Cast``), so a
    file with a static batch takes them as its second input and follows them (it was
    refused: the conversion happened outside the graph)."""
    x = rng.uniform(0.1, 0.9, (3, 2)).astype(np.float32)
    t = np.array([[0, 1], [1, 1], [1, 0]])
    path = zerograd_onnx.export(loss, (x, t), tmp_path / "l.onnx", dynamic_batch=False)
    assert zerograd_onnx.check(loss, path, (x, 1 - t)).ok


def test_an_input_the_outputs_do_not_need_is_refused(rng, tmp_path):
    def first(x, unused):
        return F.tanh(x)

    with pytest.raises(ExportError, match="input 'mask' .* reaches no node of the graph"):
        zerograd_onnx.export(
            first, (normal(rng, 3, 2), normal(rng, 3, 2)), tmp_path / "f.onnx",
            input_names=["x", "mask"],
        )  # fmt: skip
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("dynamic_batch", [True, False])
@pytest.mark.parametrize("example", ["lstm_sine", "char_rnn"])
def test_a_recurrent_state_an_earlier_call_left_is_refused(example, dynamic_batch, rng, tmp_path):
    """The state of the call before was frozen into the file (static batch), or the LSTM
    refused the second run's batch, telling to reset_state but not why (dynamic)."""
    if example == "lstm_sine":
        model = load_example(example).BetterRNN(6, 1)
        x = normal(rng, 2, 1)
    else:
        model = load_example(example).CharLSTM(7, embed_size=4, hidden_size=6)
        x = rng.integers(0, 7, 2)
    model(x)  # one step: the LSTM keeps h and c for the next
    state = model.rnn.h, model.rnn.c
    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(model, x, tmp_path / "r.onnx", dynamic_batch=dynamic_batch)
    assert str(err.value).startswith(
        "zerograd_onnx.export: the forward reads the state 'rnn.h' of shape (2, 6) that an "
        "earlier call left (in layer 'rnn' (LSTM)); the file would hold it as a constant, the "
        "same at every run, where the layer's state moves on with each call. Call "
        "reset_state() on the model (or that layer) before exporting"
    )
    assert (model.rnn.h, model.rnn.c) == state  # the model is as it was
    assert os.listdir(tmp_path) == []
    model.reset_state()  # one step from no state exports
    path = zerograd_onnx.export(model, x, tmp_path / "r.onnx", dynamic_batch=dynamic_batch)
    assert zerograd_onnx.check(model, path, x).ok
    assert model.rnn.h is None


def _raw_maxima_softmax(x):
    y = F.exp(x - np.max(x.data, axis=1, keepdims=True))
    return y / F.sum(y, axis=1, keepdims=True)


# A softmax subtracting each row's maximum read from the raw array, as zerograd's own code
# (what softmax_simple did until it took it with zerograd's max): the read is zerograd's,
# so the export finds the array it makes, not the read
_softmax_of_raw_maxima = types.FunctionType(
    _raw_maxima_softmax.__code__,
    {**globals(), "__name__": "zerograd_nn.functional"},
    "softmax_of_raw_maxima",
)


def test_a_static_export_finds_arrays_made_from_the_input_s_values(rng, tmp_path):
    """A softmax subtracting each row's maximum made outside the graph: a static export
    froze the example's maxima, and the file gave nan where the inputs are 100 larger (exp
    overflows) while zerograd stays exact. softmax_simple takes it with zerograd's max,
    which exports."""
    x = normal(rng, 3, 4)
    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(_softmax_of_raw_maxima, x, tmp_path / "s.onnx", dynamic_batch=False)
    assert str(err.value).startswith(
        "zerograd_onnx.export: input 1 of Sub (applied outside any layer of the model) is an "
        "array made outside zerograd's functions from the input's values: Constant shape "
        "(3, 1) on the example, Constant shape (3, 1) on the example's rows in another order "
        "(the first row last). ONNX would freeze it at its example value."
    )
    assert os.listdir(tmp_path) == []
    for softmax in (F.softmax, F.softmax_simple):
        path = zerograd_onnx.export(softmax, x, tmp_path / "s.onnx", dynamic_batch=False)
        assert zerograd_onnx.check(softmax, path, x + 100.0).ok


def test_a_static_export_runs_the_forward_again_on_reordered_rows(rng, tmp_path):
    seen = []

    def model(x):
        seen.append(np.array(x.shape))  # x.shape: no read of the values
        return F.tanh(x) * 2.0

    x = normal(rng, 3, 2)
    zerograd_onnx.export(model, x, tmp_path / "m.onnx", dynamic_batch=False)
    assert len(seen) == 2  # the example, then its rows 1, 2, 0
    seen.clear()
    zerograd_onnx.export(model, x[:1], tmp_path / "m.onnx", dynamic_batch=False)
    assert len(seen) == 1  # one row: no other order

    def fussy(x):
        if len(seen) == 1:
            raise RuntimeError("no")
        seen.append(1)
        return F.tanh(x)

    seen.clear()
    with pytest.raises(RuntimeError) as err:
        zerograd_onnx.export(fussy, x, tmp_path / "f.onnx", dynamic_batch=False)
    if hasattr(err.value, "__notes__"):  # Python 3.11+
        assert err.value.__notes__ == [
            "zerograd_onnx.export ran the model's forward on the example's rows in another "
            "order (the first row last), to find arrays computed from the input outside the "
            "graph (test mode, no gradients)"
        ]


def test_a_variable_a_layer_sets_again_unchanged_is_no_state(rng, tmp_path):
    class Scaled(L.Linear):
        def forward(self, x):
            self.scale = self.scale  # set, not replaced: a constant of the layer
            return super().forward(x) * self.scale

    layer = Scaled(3)
    layer.scale = Variable(np.float32(2.0))
    path = zerograd_onnx.export(layer, normal(rng, 2, 4), tmp_path / "s.onnx")
    assert zerograd_onnx.check(layer, path, normal(rng, 5, 4)).ok


def test_a_forward_whose_path_depends_on_the_batch_size_is_refused_for_a_dynamic_batch(
    rng, tmp_path
):
    def by_size(x):
        return F.exp(x) if x.shape[0] == 3 else F.tanh(x)

    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(by_size, normal(rng, 3, 4), tmp_path / "d.onnx")
    assert str(err.value) == (
        "zerograd_onnx.export: the forward takes another path on a batch one row larger: "
        "call 0 is Exp (applied outside any layer of the model) on the example inputs but "
        "Tanh (applied outside any layer of the model) then. A forward whose functions depend "
        "on the batch size cannot be exported with a dynamic batch; export with "
        "dynamic_batch=False."
    )
    assert os.listdir(tmp_path) == []
    path = zerograd_onnx.export(
        by_size, normal(rng, 3, 4), tmp_path / "d.onnx", dynamic_batch=False
    )
    assert zerograd_onnx.check(by_size, path, normal(rng, 3, 4)).ok


def test_a_forward_that_takes_another_path_on_its_second_run_is_refused_for_a_static_batch(
    rng, tmp_path
):
    """Python state the forward keeps between calls (a counter): its second run, on the
    reordered rows, applies other functions, which a file cannot follow."""
    calls = []

    def alternating(x):
        calls.append(1)
        return F.exp(x) if len(calls) % 2 else F.tanh(x)

    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(
            alternating, normal(rng, 3, 4), tmp_path / "a.onnx", dynamic_batch=False
        )
    assert str(err.value) == (
        "zerograd_onnx.export: the forward takes another path on the example's rows in "
        "another order (the first row last): call 0 is Exp (applied outside any layer of the "
        "model) on the example inputs but Tanh (applied outside any layer of the model) then. "
        "A forward whose functions depend on the input's values cannot be exported: ONNX "
        "would keep one path."
    )
    assert os.listdir(tmp_path) == []
