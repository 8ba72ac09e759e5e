"""Layers with state against PyTorch's conventions: BatchNorm's running statistics.

The references are numpy by hand; the values are those torch 2.13's ``nn.BatchNorm2d``
(``momentum=0.1``, ``eps=2e-5``) gives for the same batches (checked outside the suite).
"""

from __future__ import annotations

import numpy as np

from zerograd import test_mode
from zerograd_nn.layers import LSTM, RNN, BatchNorm


def _batches():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 3, 2, 2))
    return x, x * 2.0 + 1.0


def test_batch_norm_running_statistics_move_as_pytorchs_with_momentum_one_minus_decay():
    """decay=0.9 is PyTorch's momentum=0.1; the variance kept is the unbiased batch
    variance (PyTorch's too), the one normalizing the batch is the biased one."""
    bn = BatchNorm()
    mean, var = np.zeros(3), np.ones(3)
    for x in _batches():
        y = bn(x)
        m = x.mean(axis=(0, 2, 3))
        v = x.var(axis=(0, 2, 3))
        want = (x - m[None, :, None, None]) / np.sqrt(v[None, :, None, None] + 2e-5)
        np.testing.assert_allclose(y.data, want, rtol=1e-10, atol=1e-12)
        mean = 0.9 * mean + 0.1 * m
        var = 0.9 * var + 0.1 * x.var(axis=(0, 2, 3), ddof=1)
    np.testing.assert_allclose(bn.avg_mean.data, mean, rtol=1e-12)
    np.testing.assert_allclose(bn.avg_var.data, var, rtol=1e-12)
    x = _batches()[0]
    with test_mode():
        got = bn(x).data
    want = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 2e-5)
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_a_fresh_batch_norm_in_eval_normalizes_with_mean_0_and_variance_1():
    """As PyTorch's fresh module: running_mean 0, running_var 1; nothing is learnt."""
    x = _batches()[0]
    bn = BatchNorm().eval()
    np.testing.assert_allclose(bn(x).data, x / np.sqrt(1.0 + 2e-5), rtol=1e-12)
    np.testing.assert_array_equal(bn.avg_mean.data, np.zeros(3))
    np.testing.assert_array_equal(bn.avg_var.data, np.ones(3))


def test_float16_input_to_a_float32_batch_norm_gives_float32_and_keeps_float32_statistics():
    """numpy's promotion, as every layer's: PyTorch's CPU kernel returns float16 here."""
    x32, _ = (b.astype(np.float32) for b in _batches())
    bn = BatchNorm()
    bn(x32)
    x16 = x32.astype(np.float16)
    y = bn(x16)
    assert y.dtype == np.float32
    assert bn.avg_mean.dtype == np.float32 and bn.avg_var.dtype == np.float32
    m = x16.astype(np.float64).mean(axis=(0, 2, 3))
    want = 0.9 * (0.1 * x32.astype(np.float64).mean(axis=(0, 2, 3))) + 0.1 * m
    np.testing.assert_allclose(bn.avg_mean.data, want, rtol=1e-3, atol=1e-4)


def test_a_recurrent_cells_state_is_not_saved_and_a_load_keeps_it(tmp_path):
    """DeZero's: h (and LSTM's c) is no parameter; reset_state() starts a new sequence."""
    x = np.ones((4, 2), np.float32)
    for cls in (RNN, LSTM):
        cell = cls(3, in_size=2)
        cell(x)
        h = cell.h
        assert not any(k.endswith(("h", "c")) for k in cell.state_dict())
        path = tmp_path / f"{cls.__name__}.npz"
        cell.save_weights(path)
        assert sorted(np.load(path).files) == sorted(k.replace(".", "/") for k in cell.state_dict())
        cell.load_weights(path)
        assert cell.h is h
        cell.reset_state()
        assert cell.h is None
