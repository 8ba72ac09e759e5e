"""Forward-time checks of the stateful and lookup layers (RNN, LSTM, EmbedID)."""

import numpy as np
import pytest

from zerograd_nn.layers import LSTM, RNN, EmbedID


@pytest.mark.parametrize("cls", [RNN, LSTM])
def test_a_new_batch_size_asks_for_reset_state_and_changes_nothing(cls):
    np.random.seed(0)
    layer = cls(3)
    layer(np.ones((2, 4), np.float32))
    state = [(k, getattr(layer, k)) for k in ("h", "c") if hasattr(layer, k)]
    with pytest.raises(
        ValueError,
        match=rf"^{cls.__name__}: got a batch of 5 \(x of shape \(5, 4\)\) but the hidden state "
        r"holds a batch of 2 from the previous call; call reset_state\(\)",
    ):
        layer(np.ones((5, 4), np.float32))
    assert all(getattr(layer, k) is v for k, v in state)
    assert layer(np.ones((2, 4), np.float32)).shape == (2, 3)  # the sequence goes on
    layer.reset_state()
    assert layer(np.ones((5, 4), np.float32)).shape == (5, 3)


def test_embed_id_layer_refuses_ids_out_of_range():
    layer = EmbedID(4, 2)
    W = layer.W.data.copy()
    for bad in (-1, 4):
        with pytest.raises(ValueError, match=rf"id {bad} is out of range .* valid ids are 0\.\.3"):
            layer(np.array([0, bad]))
    np.testing.assert_array_equal(layer.W.data, W)
