"""What a sweep of the layers' constructor arguments against PyTorch and DeZero turned up.

Each test holds a behaviour that once differed from what the layer's documentation says;
the references are numpy by hand.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from zerograd_nn import layers as L
from zerograd_nn.models import Sequential


def _lazy_sequence():
    return Sequential(
        L.Linear(3, dtype="float32"),
        L.Conv2d(2, 1, nobias=True, dtype="float16"),
        L.Deconv2d(2, 1, dtype="float64"),
        L.BatchNorm(),
    )


def _float64_weights():
    return {
        "l0.W": np.full((4, 3), 0.25),
        "l0.b": np.full(3, 0.5),
        "l1.W": np.full((2, 5, 1, 1), 0.125),
        "l2.W": np.full((2, 2, 1, 1), 2.0),
        "l2.b": np.zeros(2),
        "l3.avg_mean": np.zeros(2),
        "l3.avg_var": np.ones(2),
        "l3.gamma": np.ones(2),
        "l3.beta": np.zeros(2),
    }


def _dtypes(model):
    return {k: p.data.dtype for k, p in model.named_params().items()}


# Each layer's dtype= holds for a lazily sized parameter that is loaded rather than sized:
# as a first call would draw it, and as a loaded bias or a sized W is cast.
WANT = {
    **dict.fromkeys(["l0.W", "l0.b"], np.dtype("float32")),
    "l1.W": np.dtype("float16"),
    **dict.fromkeys(["l2.W", "l2.b"], np.dtype("float64")),
    **dict.fromkeys(["l3.avg_mean", "l3.avg_var", "l3.gamma", "l3.beta"], np.dtype("float64")),
}  # BatchNorm has no dtype=: it takes its first batch's, or what is loaded


def test_a_state_dict_loaded_into_unsized_layers_takes_each_layers_dtype():
    model = _lazy_sequence()
    model.load_state_dict(_float64_weights())
    assert _dtypes(model) == WANT
    np.testing.assert_array_equal(model.l0.W.data, np.full((4, 3), 0.25, np.float32))
    assert model.l0.in_size == 4 and model.l1.in_channels == 5


def test_a_weight_file_loaded_into_unsized_layers_takes_each_layers_dtype(tmp_path):
    source = _lazy_sequence()
    source.load_state_dict(_float64_weights())
    arrays = {k.replace(".", "/"): v for k, v in _float64_weights().items()}
    np.savez(tmp_path / "w.npz", **arrays)
    model = _lazy_sequence()
    model.load_weights(tmp_path / "w.npz")
    assert _dtypes(model) == WANT
    x = np.ones((1, 4), np.float32)
    assert model.l0(x).dtype == np.float32  # float32 in, float32 out: no float64 W


def test_a_value_beyond_an_unsized_float16_layers_range_is_refused_and_nothing_changes():
    model = _lazy_sequence()
    weights = _float64_weights()
    weights["l1.W"] = np.full((2, 5, 1, 1), 1e6)  # finite in float64, inf in float16
    with pytest.raises(ValueError, match=r"'l1.W' holds 10 finite value\(s\) beyond the range"):
        model.load_state_dict(weights)
    assert all(p.data is None for p in (model.l0.W, model.l1.W, model.l2.W, model.l3.gamma))


# PyTorch's constructor keywords that zerograd's layers lack are refused with what to write,
# as zerograd_nn.layers.pytorch_names promises: never Python's bare "unexpected keyword
# argument", which named the private base class (_RecurrentCell.__init__()).
@pytest.mark.parametrize(
    "build, keyword, hint",
    [
        (lambda **k: L.RNN(4, **k), "nonlinearity", "tanh"),
        (lambda **k: L.RNN(4, **k), "device", r"layer\.to\('cuda'\)"),
        (lambda **k: L.RNN(4, **k), "dtype", "float32"),
        (lambda **k: L.LSTM(4, **k), "dtype", "float32"),
        (lambda **k: L.LSTM(4, **k), "proj_size", "Linear"),
        (lambda **k: L.EmbedID(10, 3, **k), "dtype", r"W\.data\.astype"),
        (lambda **k: L.EmbedID(10, 3, **k), "device", r"layer\.to\('cuda'\)"),
        (lambda **k: L.EmbedID(10, 3, **k), "max_norm", "renormalized"),
        (lambda **k: L.EmbedID(10, 3, **k), "norm_type", "renormalized"),
        (lambda **k: L.EmbedID(10, 3, **k), "scale_grad_by_freq", "frequency"),
        (lambda **k: L.EmbedID(10, 3, **k), "sparse", "dense"),
        (lambda **k: L.Deconv2d(2, 3, **k), "output_padding", r"F\.deconv2d\(.*outsize="),
    ],
)
def test_pytorchs_other_layer_keywords_are_refused_naming_what_to_write(build, keyword, hint):
    with pytest.raises(TypeError) as info:
        build(**{keyword: 1})
    text = str(info.value)
    assert text.startswith(f"{type(build()).__name__}: {keyword}= is PyTorch's keyword")
    assert "unexpected keyword" not in text
    assert re.search(hint, text), text


@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool"])
def test_a_fresh_batch_norms_integer_first_batch_is_refused_naming_the_cast(dtype):
    """The parameters take the first batch's dtype: an integer one would make integer
    statistics. The error was batch_norm's about a running mean the user never gave."""
    bn = L.BatchNorm()
    with pytest.raises(TypeError) as info:
        bn(np.ones((4, 3), dtype))
    text = str(info.value)
    assert text.startswith(f"BatchNorm: the first batch has dtype {dtype}")
    assert "x.astype('float32')" in text and "running mean" not in text
    assert all(p.data is None for p in bn.params())
    y = bn(np.ones((4, 3), dtype).astype(np.float32))  # the cast it names works
    assert y.dtype == np.float32 and bn.gamma.dtype == np.float32


def test_saving_an_rnn_after_one_step_names_the_second_step_and_in_size(tmp_path):
    """DeZero's lazy RNN sizes h2h at its second step (the first reads no state): after
    one step the message said to run a forward pass, which the user had done."""
    from zerograd_nn.checkpoint import CheckpointError, save_checkpoint
    from zerograd_nn.weights import WeightFileError

    rnn = L.RNN(3)
    rnn(np.ones((2, 4), np.float32))
    with pytest.raises(WeightFileError) as info:
        rnn.save_weights(tmp_path / "rnn.npz")
    assert "['h2h/W'] have no data yet" in str(info.value)
    assert "an RNN sizes h2h at its second step" in str(info.value)
    assert "in_size" in str(info.value)
    with pytest.raises(CheckpointError, match=r"an RNN sizes h2h at its second step.*in_size"):
        save_checkpoint(tmp_path / "ck.npz", model=rnn)
    assert not list(tmp_path.iterdir())
    assert L.RNN(3, in_size=4).h2h.W.data is not None  # what the message names


# from-pytorch.md names these keywords one by one: each must meet the one error that says
# what to write (never Python's "unexpected keyword argument")
FROM_PYTORCH_PAGE_KEYWORDS = [
    *[(L.Conv2d, (4, 3), k) for k in ("padding", "dilation", "groups", "device")],
    *[(L.Deconv2d, (4, 3), k) for k in ("padding", "dilation", "groups", "output_padding")],
    (L.Deconv2d, (4, 3), "device"),
    *[
        (cell, (4,), k)
        for cell in (L.RNN, L.LSTM)
        for k in ("input_size", "num_layers", "nonlinearity", "dtype", "device")
    ],
    *[
        (L.EmbedID, (10, 3), k)
        for k in ("num_embeddings", "padding_idx", "max_norm", "sparse", "dtype")
    ],
    (L.BatchNorm, (), "momentum"),
    (L.BatchNorm, (), "eps"),
]


@pytest.mark.parametrize(
    "cls, args, keyword",
    FROM_PYTORCH_PAGE_KEYWORDS,
    ids=[f"{c.__name__}-{k}" for c, _, k in FROM_PYTORCH_PAGE_KEYWORDS],
)
def test_every_layer_keyword_the_from_pytorch_page_names_is_refused_saying_what_to_write(
    cls, args, keyword
):
    with pytest.raises(TypeError) as info:
        cls(*args, **{keyword: 1})
    text = str(info.value)
    prefix = f"{cls.__name__}: {keyword}= is PyTorch's keyword, not zerograd's (DeZero's): "
    assert text.startswith(prefix), text
    assert len(text) > len(prefix) + 10  # the hint itself follows
    assert "unexpected keyword" not in text
