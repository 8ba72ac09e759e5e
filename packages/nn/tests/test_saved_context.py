"""A built-in Function's forward leaves its attributes (its settings) as ``__init__`` made them.

What a forward computes for its derivative goes into the Function's ``ctx`` slot (not in
``vars()``). Every registered op, core's and
nn's, is called here, forward and backward, while each Function's ``vars()`` is compared
before and after its forward.
"""

from __future__ import annotations

import numpy as np
import pytest

import zerograd.functions as ZF
import zerograd_nn.functional as F
from zerograd import Function, Variable, no_grad, static_graph
from zerograd.function import settings_of
from zerograd.functions import ops

_R = np.random.default_rng(0)


def _v(*shape):
    return Variable(_R.uniform(0.5, 1.5, shape))


def _v16(*shape):
    return Variable(_R.uniform(0.5, 1.5, shape).astype(np.float16))


_LABELS = np.array([0, 2])
_IMAGE = (1, 2, 4, 4)


def _pooling_gradient():
    """x's gradient through max pooling, as a graph: its backward runs the third function."""
    x = _v(*_IMAGE)
    ZF.sum(F.pooling(x, 2, 2) ** 2).backward(create_graph=True)
    return x.grad


CALLS = {
    "add": lambda: _v(2, 3) + _v(3),
    "sub": lambda: _v(2, 3) - _v(2, 1),
    "rsub": lambda: 1.0 - _v(3),
    "mul": lambda: _v(2, 3) * _v(3),
    "div": lambda: _v(2, 3) / _v(3),
    "rdiv": lambda: 2.0 / _v(3),
    "neg": lambda: -_v(3),
    "pow": lambda: _v(3) ** 3 + _v(3) ** _v(3),
    "rpow": lambda: 2.0 ** _v(3),
    "broadcast_to": lambda: ZF.broadcast_to(_v(3), (2, 3)),
    "sum_to": lambda: ZF.sum_to(_v(2, 3), (1, 3)),
    "exp": lambda: ZF.exp(_v(3)),
    "log": lambda: ZF.log(_v(3)),
    "sin": lambda: ZF.sin(_v(3)),
    "cos": lambda: ZF.cos(_v(3)),
    "tanh": lambda: ZF.tanh(_v(3)),
    "sqrt": lambda: ZF.sqrt(_v(3)),
    "square": lambda: ZF.square(_v(3)),
    "clip": lambda: ZF.clip(_v(3), 0.7, 1.2),
    "concatenate": lambda: ZF.concatenate([_v(2, 3), _v(1, 3)], axis=-2),
    "stack": lambda: ZF.stack([_v(3), _v(3)], axis=-1),
    "matmul": lambda: ZF.matmul(_v(2, 3), _v(3, 4)),
    "dot": lambda: ZF.dot(_v(3), _v(3)),
    "sum": lambda: ZF.sum(_v(2, 3), axis=-1),
    "max": lambda: ZF.max(_v(2, 3), axis=-1),
    "min": lambda: ZF.min(_v(2, 3), axis=(0, -1)),
    # float32 and float64: a sum times 1 / n; float16: Mean, numpy's mean (adds in float32)
    "mean": lambda: ZF.mean(_v(2, 3), axis=0) + ZF.mean(_v16(2, 3), axis=0),
    "reshape": lambda: ZF.reshape(_v(2, 3), (3, 2)),
    "transpose": lambda: ZF.transpose(_v(2, 3, 4), (-1, 0, 1)),
    "get_item": lambda: ZF.get_item(_v(4, 3), np.array([0, 0, 2])),
    "expand_dims": lambda: ZF.expand_dims(_v(3), -1),
    "flatten": lambda: ZF.flatten(_v(2, 3, 4)),
    "sigmoid": lambda: F.sigmoid(_v(3)),
    "relu": lambda: F.relu(_v(3) - 1.0),
    "leaky_relu": lambda: F.leaky_relu(_v(3) - 1.0, 0.1),
    "softmax": lambda: F.softmax(_v(2, 3), axis=-1),
    "log_softmax": lambda: F.log_softmax(_v(2, 3), axis=-1),
    "linear": lambda: F.linear(_v(2, 3), _v(3, 4), _v(4)),
    "linear_simple": lambda: F.linear_simple(_v(2, 3), _v(3, 4), _v(4)),
    "embed_id": lambda: F.embed_id(np.array([1, 1, 0]), _v(3, 2)),
    "im2col": lambda: F.im2col(_v(*_IMAGE), 2, 1, 1),
    "col2im": lambda: F.col2im(_v(1, 2, 2, 2, 3, 3), _IMAGE, 2, 1, 0, to_matrix=False),
    "conv2d": lambda: F.conv2d(_v(*_IMAGE), _v(3, 2, 3, 3), _v(3), stride=1, pad=1),
    "deconv2d": lambda: F.deconv2d(_v(*_IMAGE), _v(2, 3, 3, 3), _v(3), stride=2, pad=1),
    "conv2d_simple": lambda: F.conv2d_simple(_v(*_IMAGE), _v(3, 2, 3, 3), None, 1, 1),
    "mean_squared_error_simple": lambda: F.mean_squared_error_simple(_v(2, 3), _v(2, 3)),
    "mean_squared_error": lambda: F.mean_squared_error(_v(2, 3), _v(2, 3)),
    "softmax_cross_entropy_simple": lambda: F.softmax_cross_entropy_simple(_v(2, 3), _LABELS),
    "softmax_cross_entropy": lambda: F.softmax_cross_entropy(_v(2, 3), _LABELS),
    "sigmoid_cross_entropy": lambda: F.sigmoid_cross_entropy(
        _v(2, 3), np.array([[0, 1, 1], [1, 0, 0]])
    ),
    "binary_cross_entropy": lambda: F.binary_cross_entropy(_v(3) * 0.5, np.array([0, 1, 1])),
    "accuracy": lambda: F.accuracy(_v(2, 3), _LABELS),
    "batch_norm": lambda: F.batch_norm(_v(4, 3), _v(3), _v(3), np.zeros(3), np.ones(3)),
    "dropout": lambda: F.dropout(_v(4, 3), 0.5),
    "pooling": lambda: _pooling_gradient(),
    "pooling_simple": lambda: F.pooling_simple(_v(*_IMAGE), 2, 2),
    "average_pooling": lambda: F.average_pooling(_v(*_IMAGE), 3, 1, 1),
}


@pytest.fixture
def watched(monkeypatch):
    """Every Function class's forward wrapped: each call notes (class, vars before, after)."""
    seen = []
    classes = {c for spec in ops.OPS.values() for c in spec.classes}
    for cls in classes | set(_subclasses(Function)):
        if "forward" not in vars(cls):
            continue

        monkeypatch.setattr(cls, "forward", _watching(vars(cls)["forward"], seen))
    return seen


def _watching(own, seen):
    """``own`` (a forward) noting (class, vars before, vars after) in ``seen`` on each call."""

    def forward(self, *xs):
        before = dict(settings_of(self))  # (a slotted one, add or tanh, can write no others)
        out = own(self, *xs)
        seen.append((type(self), before, dict(settings_of(self))))
        return out

    return forward


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_every_registered_op_has_a_call_here():
    assert set(ops.OPS) == set(CALLS)


@pytest.mark.parametrize("name", list(CALLS))
def test_a_forward_leaves_the_functions_attributes_as_they_were(watched, name):
    spec = ops.OPS[name]
    y = CALLS[name]()
    if y.creator is not None and y.creator._vjp or name in ("dot", "mean"):
        ZF.sum(y).backward(create_graph=True)  # backward's own functions are watched too
    called = {cls for cls, _, _ in watched}
    assert set(spec.classes) <= called, f"{name}: {set(spec.classes) - called} not called"
    for cls, before, after in watched:
        assert before == after or _same_arrays(before, after), (name, cls, before, after)


def _same_arrays(a, b):
    """Equal dicts whose values may be arrays (compared by identity: nothing was replaced)."""
    return a.keys() == b.keys() and all(a[k] is b[k] for k in a)


def test_what_forward_saves_is_the_functions_ctx_and_each_call_replaces_it():
    f = ZF.Sum(axis=-1)
    assert vars(f) == {"axis": -1, "keepdims": False}
    f(_v(2, 3))
    assert f.ctx == ((2, 3), (1,))  # the input's shape and the normalized axes
    f(_v(4, 5, 6))
    assert f.ctx == ((4, 5, 6), (2,))
    assert vars(f) == {"axis": -1, "keepdims": False}
    add = ZF.Add()
    add(_v(2, 3), _v(3))
    assert add.ctx == ((2, 3), (3,), False)  # broadcast: the shapes to sum back to
    add(_v(3), _v(3))
    assert add.ctx is None  # the same shapes: nothing saved, not the last call's shapes
    t = ZF.Transpose((-1, 0, 1))
    t(_v(2, 3, 4))
    assert t.axes == (-1, 0, 1) and t.ctx == (2, 0, 1)  # the setting as given; normalized


def test_a_saved_context_gives_the_gradient_after_a_failed_call():
    f = ZF.Transpose((1, 0, 2))
    x = _v(2, 3, 4)
    y = f(x)
    with pytest.raises(ValueError):
        f(_v(2, 3))  # axes that do not fit: refused before anything is saved
    assert f.ctx == (1, 0, 2)
    y.grad = Variable(np.arange(24.0).reshape(3, 2, 4))
    y.backward()
    np.testing.assert_array_equal(x.grad.data, np.arange(24.0).reshape(3, 2, 4).transpose(1, 0, 2))


def test_a_user_forward_may_still_write_on_self_or_in_ctx():
    class Scaled(Function):  # the book's way: state on self, backward on Variables
        def forward(self, x):
            self.k = 3.0
            return x * self.k

        def backward(self, gy):
            return gy * self.k

    class Cubed(Function):  # a vjp reading a context its forward saved
        def forward(self, x):
            y = x**3
            self.ctx = 3 * x**2
            return y

        def vjp(self, xp, xs, y, gy):
            return gy * self.ctx

    x = Variable(np.array([1.0, 2.0]))
    y = Cubed()(Scaled()(x))
    y.backward()
    np.testing.assert_allclose(x.grad.data, 3 * 3 * (3 * x.data) ** 2)

    @static_graph
    def step(x):
        y = Cubed()(Scaled()(x))
        y.backward()
        return y

    for i in range(1, 5):  # new values each call: the replay computes them
        x = Variable(np.array([1.0, 2.0]) * i)
        y = step(x)
        np.testing.assert_array_equal(y.data, (3 * x.data) ** 3)
        np.testing.assert_array_equal(x.grad.data, 81 * x.data**2)
    assert step.counts["replayed"] >= 1


def test_no_context_without_a_graph_for_pooling():
    f = F.Pooling(2, 2)
    with no_grad():
        f(_v(*_IMAGE))
    assert f.ctx is None
