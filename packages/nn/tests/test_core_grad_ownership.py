"""Core engine rule seen through nn's optimizers: a gradient belongs to one parameter, so a
hook on one parameter's gradient never reaches another's."""

import numpy as np

import zerograd.functions as F
from zerograd import Parameter
from zerograd.backends import as_numpy
from zerograd_nn import Layer
from zerograd_nn.optimizers import SGD, ClipGrad, WeightDecay


class _Pair(Layer):
    def __init__(self, arr):
        super().__init__()
        self.a = Parameter(arr([1.0, 2.0]))
        self.b = Parameter(arr([10.0, 20.0]))


def _step(model, hook):
    opt = SGD(lr=1.0).setup(model)
    opt.add_hook(hook)
    model.cleargrads()
    F.sum(model.a + model.b).backward()
    opt.update()


def test_weight_decay_uses_each_parameter_alone(arr):
    m = _Pair(arr)
    _step(m, WeightDecay(0.1))
    # each moves by its own 1 + 0.1 * p, not 1 + 0.1 * (a + b)
    np.testing.assert_allclose(as_numpy(m.a.data), [1.0 - 1.1, 2.0 - 1.2])
    np.testing.assert_allclose(as_numpy(m.b.data), [10.0 - 2.0, 20.0 - 3.0])


def test_clip_grad_clips_each_gradient_once(arr):
    m = _Pair(arr)
    _step(m, ClipGrad(1.0))
    rate = 1.0 / (2.0 + 1e-6)  # global norm of four ones is 2
    np.testing.assert_allclose(as_numpy(m.a.data), [1.0 - rate, 2.0 - rate])
    np.testing.assert_allclose(as_numpy(m.b.data), [10.0 - rate, 20.0 - rate])
