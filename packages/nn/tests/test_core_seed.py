"""zerograd.seed(n) makes nn's random draws (initial weights, dropout masks) repeatable."""

import numpy as np

import zerograd
import zerograd_nn.functional as F
from zerograd import Variable
from zerograd.backends import as_numpy
from zerograd_nn.layers import Linear


def _draw():
    w = as_numpy(Linear(4, in_size=3).W.data)
    mask = as_numpy(F.dropout(Variable(np.ones(20)), 0.5).data)
    return w, mask


def test_seed_repeats_initial_weights_and_dropout():
    zerograd.seed(123)
    w1, m1 = _draw()
    zerograd.seed(123)
    w2, m2 = _draw()
    np.testing.assert_array_equal(w1, w2)
    np.testing.assert_array_equal(m1, m2)
    zerograd.seed(124)
    w3, _ = _draw()
    assert not np.array_equal(w1, w3)
