"""static_graph: a replay gives the eager engine's bits, and refuses what it cannot replay.

Each test runs the same step twice side by side, once eagerly and once under
static_graph, on twin state (Parameters with equal data), and compares every result,
gradient and parameter bit for bit after every call. ``counts`` shows that replays
happened (or, where the step is refused, that none did).
"""

import collections
import copy
import dataclasses
import gc
import pickle
import sys
import threading
import time
import warnings
import weakref

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import (
    Function,
    Parameter,
    StaticGraphWarning,
    Variable,
    no_grad,
    static_graph,
)
from zerograd.backends import backend_of, get_array_module
from zerograd.static import StaticGraph


def _bits(to_np, a):
    a = to_np(a.data if isinstance(a, Variable) else a)
    return (a.shape, str(a.dtype), a.tobytes())


def _same(to_np, a, b):
    assert _bits(to_np, a) == _bits(to_np, b)


def _twins(make):
    """Two independent copies of the same state: (eager step, static step)."""
    return make(), static_graph(make())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_chain_of_ops_replays_the_eager_bits(rand, to_np, dtype):
    def make():
        def step(x):
            y = x
            for i in range(40):
                y = (y * 1.01 + 0.5) if i % 2 else F.tanh(F.sin(y) * y)
            y = F.sum(y * y)
            y.backward()
            return y

        return step

    xs = [rand(3, 4, dtype=dtype, seed=i) for i in range(6)]
    eager, static = _twins(make)
    for x in xs:
        xe, xs_ = Variable(x), Variable(x)
        _same(to_np, eager(xe), static(xs_))
        _same(to_np, xe.grad, xs_.grad)
    assert static.counts == {"eager": 1, "traced": 2, "replayed": 3}


def _mlp_like(rand, dtype, clear=True):
    """A make() of a two-layer net on captured Parameters, its gradients read afterwards."""

    def make():
        W1 = Parameter(rand(4, 5, dtype=dtype, seed=10))
        b1 = Parameter(rand(5, dtype=dtype, seed=11))
        W2 = Parameter(rand(5, 1, dtype=dtype, seed=12))

        def step(x, t):
            if clear:
                for p in (W1, b1, W2):
                    p.cleargrad()
            h = F.tanh(F.matmul(x, W1) + b1)
            y = F.matmul(h, W2)
            loss = F.sum((y - t) * (y - t)) / x.shape[0]
            loss.backward()
            return loss

        step.params = (W1, b1, W2)
        return step

    return make


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("clear", [True, False], ids=["cleargrad", "accumulate"])
def test_captured_parameters_get_the_eager_gradients(rand, to_np, dtype, clear):
    eager, static = _twins(_mlp_like(rand, dtype, clear))
    for i in range(7):
        x, t = rand(8, 4, dtype=dtype, seed=i), rand(8, 1, dtype=dtype, seed=100 + i)
        _same(to_np, eager(x, t), static(x, t))
        for pe, ps in zip(eager.params, static.fn.params):
            _same(to_np, pe.grad, ps.grad)
            # parameters change between calls (a hand-made update outside the step)
            pe.data = pe.data - 0.1 * pe.grad.data
            ps.data = ps.data - 0.1 * ps.grad.data
    assert static.counts["replayed"] == 4


def test_gradients_accumulated_three_times_and_broadcast(rand, to_np):
    def make():
        w = Parameter(rand(1, 3, seed=5))

        def step(x):
            w.cleargrad()
            y = F.sum(w * x + F.exp(w * x) + w * F.sin(x) + w)  # w used 4 times, broadcast
            y.backward()
            return y, w.grad

        step.w = w
        return step

    eager, static = _twins(make)
    for i in range(6):
        x = rand(4, 3, seed=i)
        (ye, ge), (ys, gs) = eager(x), static(x)
        _same(to_np, ye, ys)
        _same(to_np, ge, gs)
        _same(to_np, eager.w.grad, static.fn.w.grad)
        assert ge is eager.w.grad and gs is static.fn.w.grad  # the gradient, not a copy
    assert static.counts["replayed"] == 3
    # four gradients for w: the first sum is a new array, the next two add into it in place
    assert static.sources()[0].count("out=") == 2


def test_in_place_accumulation_writes_into_a_sum_only_it_holds(rand, to_np):
    x = Parameter(rand(50, seed=1))

    @static_graph
    def step():
        x.cleargrad()
        y = F.sum(x * 2.0 + x * 3.0 + x * 4.0 + x * 5.0)  # four gradients for x
        y.backward()
        return y

    for _ in range(4):
        step()
    assert "out=" in step.sources()[0]  # the third and fourth additions write in place
    x.cleargrad()
    F.sum(x * 2.0 + x * 3.0 + x * 4.0 + x * 5.0).backward()
    eager = to_np(x.grad.data).copy()
    step()
    np.testing.assert_array_equal(to_np(x.grad.data), eager)
    assert np.all(to_np(x.grad.data) == 14.0)


class _TwoOut(Function):
    """(x + 1, x * x): a function with two outputs and a vjp."""

    def forward(self, x):
        return x + 1, x * x

    def vjp(self, xp, xs, y, gy):
        (x,) = xs
        g0, g1 = gy
        out = 0
        if g0 is not None:
            out = out + g0
        if g1 is not None:
            out = out + 2 * x * g1
        return out


class _DeZeroSquare(Function):
    """The book's style: backward(gy) on Variables, reading self.inputs' values."""

    def forward(self, x):
        return x**2

    def backward(self, gy):
        (x,) = self.inputs
        return 2 * x * gy


class _DeZeroExp(Function):
    """The book's Exp: backward reads the output through self.outputs."""

    def forward(self, x):
        return get_array_module(x).exp(x)

    def backward(self, gy):
        y = self.outputs[0]()
        return gy * y


def _on_param(w_data, loss):
    """A make() of ``step(x)``: clear the captured Parameter ``w``'s gradient, backpropagate
    ``loss(x, w)`` and return it (``step.w`` is ``w``)."""

    def make():
        w = Parameter(w_data)

        def step(x):
            w.cleargrad()
            y = loss(x, w)
            y.backward()
            return y

        step.w = w
        return step

    return make


def _two_outputs_loss(x, w):
    a, b = _TwoOut()(w * x)
    return F.sum(_DeZeroSquare()(a) + _DeZeroExp()(b * 0.1))


def test_multi_output_and_dezero_style_functions(rand, to_np):
    eager, static = _twins(_on_param(rand(3, seed=2), _two_outputs_loss))
    for i in range(5):
        x = rand(3, seed=20 + i)
        _same(to_np, eager(x), static(x))
        _same(to_np, eager.w.grad, static.fn.w.grad)
    assert static.counts["replayed"] == 2


_BINARY = [F.Add, F.Sub, F.Mul, F.Div, F.PowVar]
_NAMESAKES = [F.Exp, F.Log, F.Sin, F.Cos, F.Tanh, F.Sqrt]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cls", _BINARY + _NAMESAKES, ids=lambda c: c.__name__)
def test_a_kernel_computes_what_forward_computed(rand, to_np, cls, dtype):
    x0, x1 = abs(rand(3, 4, dtype=dtype, seed=1)) + 0.5, abs(rand(4, dtype=dtype, seed=2)) + 0.5
    fn = cls()
    xs = (x0, x1) if cls in _BINARY else (x0,)
    y = fn(*xs)
    kernel = fn.kernel(*xs)
    assert callable(kernel)
    _same(to_np, kernel(*xs), y)
    if cls in _BINARY:  # forward noted the broadcast for the vjp, and the replay keeps it
        assert fn.ctx == ((3, 4), (4,), False)


def test_integer_input_has_no_kernel_where_forward_converts_it(arr):
    fn = F.Sin()
    x = arr([1, 2, 3], "int64")
    fn(x)
    assert fn.kernel(x) is None  # forward computed on a float copy: the namesake alone is not it


class _RefusingAdd(F.Add):
    """Add as an array-API backend computes it: mixed dtypes are refused, so forward promotes."""

    @staticmethod
    def op(a, b):
        if a.dtype != b.dtype:
            raise TypeError("mixed dtypes")
        return a + b


def test_a_promoting_forward_has_no_kernel_and_replays_its_forward(arr, to_np):
    fn = _RefusingAdd()
    i, f = arr([1, 2, 3], "int64"), arr([0.5, 0.25, 0.125])
    assert to_np(fn(i, f).data).tolist() == [1.5, 2.25, 3.125]
    assert fn.kernel(i, f) is None
    same_kinds = _RefusingAdd()
    same_kinds(f, f)
    assert same_kinds.kernel(f, f) is not None

    loss = lambda x, w: F.sum(_RefusingAdd()(x, w) * w)  # noqa: E731
    eager, static = _twins(_on_param(arr([0.5, 0.25, 0.125]), loss))
    for k in range(5):
        x = arr([k, 2 * k, 1], "int64")
        _same(to_np, eager(x), static(x))
        _same(to_np, eager.w.grad, static.fn.w.grad)
    assert static.counts["replayed"] == 2


def _counted_forward(cls, calls):
    """``cls.forward``, noting the class's name in ``calls`` on each call."""
    forward = cls.forward

    def counting(self, *xs):
        calls.append(cls.__name__)
        return forward(self, *xs)

    return counting


def test_replays_call_kernels_and_no_forward_of_theirs(rand, to_np, monkeypatch):
    calls = []
    for cls in (F.Sin, F.Mul, F.Square):
        monkeypatch.setattr(cls, "forward", _counted_forward(cls, calls))

    def make():
        def step(x):
            y = F.sum(F.square(F.sin(x) * x))
            y.backward()
            return y

        return step

    eager, static = _twins(make)
    for k in range(5):
        x, xe = Variable(rand(3, seed=k)), Variable(rand(3, seed=k))
        _same(to_np, eager(xe), static(x))
        _same(to_np, xe.grad, x.grad)
        if k == 2:
            del calls[:]  # the eager call, two recordings (and the eager twin's calls)
    # the last two calls: the eager twin ran all three forwards each time, the replays
    # only Square's, which has no kernel
    assert calls.count("Sin") == calls.count("Mul") == 2
    assert calls.count("Square") == 4
    assert static.counts["replayed"] == 2


class _FickleSin(Function):
    """A kernel made anew on every call, against Function.kernel's rule."""

    def forward(self, x):
        return get_array_module(x).sin(x)

    def kernel(self, x):
        return lambda a: get_array_module(a).sin(a)

    def vjp(self, xp, xs, y, gy):
        return gy * xp.cos(xs[0])


def test_kernels_that_differ_between_recordings_keep_the_step_eager(rand, to_np):
    def make():
        def step(x):
            y = F.sum(_FickleSin()(x))
            y.backward()
            return y

        return step

    eager, static = _twins(make)
    xs = [rand(3, seed=s) for s in range(6)]
    with pytest.warns(StaticGraphWarning, match=r"the function's kernel changed"):
        for x in xs:
            xe, xs_ = Variable(x), Variable(x)
            _same(to_np, eager(xe), static(xs_))
            _same(to_np, xe.grad, xs_.grad)
    assert static.counts["replayed"] == 0


class _Size(tuple):
    """A shape type of its own, as torch.Size is: a tuple subclass made anew per call."""


class _ScaledByColumns(Function):
    """``x * (number of columns)``; forward notes the shape as a _Size, its kernel is fixed."""

    def forward(self, x):
        self.seen = _Size(x.shape)
        return _times_columns(x)

    def kernel(self, x):
        return _times_columns

    def vjp(self, xp, xs, y, gy):
        return gy * self.seen[-1]


def _times_columns(x):
    return x * x.shape[-1]


def test_a_kernel_functions_tuple_like_state_compares_by_value(rand, to_np):
    def make():
        def step(x):
            y = F.sum(_ScaledByColumns()(x) * x)
            y.backward()
            return y

        return step

    eager, static = _twins(make)
    for k in range(5):
        xe, xs_ = Variable(rand(2, 3, seed=k)), Variable(rand(2, 3, seed=k))
        _same(to_np, eager(xe), static(xs_))
        _same(to_np, xe.grad, xs_.grad)
    assert static.counts == {"eager": 1, "traced": 2, "replayed": 2}


def test_zero_d_arrays_and_a_seeded_gradient(arr, to_np):
    def make():
        w = Parameter(arr(1.5))

        def step(x):
            w.cleargrad()
            y = F.tanh(w * x) * w + x
            y.backward()
            return y

        step.w = w
        return step

    eager, static = _twins(make)
    for v in (0.3, -1.2, 2.0, 0.7, 0.1):
        x = arr(v)
        ye, ys = eager(x), static(x)
        _same(to_np, ye, ys)
        _same(to_np, eager.w.grad, static.fn.w.grad)
        # 0-d arrays of the backend, not the library scalars numpy answers 0-d work with
        assert type(ys.data) is type(ye.data) is type(x)
        assert type(static.fn.w.grad.data) is type(x) and static.fn.w.grad.data.shape == ()
    assert static.counts["replayed"] == 2


def test_argument_variables_get_their_gradients_and_work_under_no_grad_is_replayed(rand, to_np):
    @static_graph
    def step(x, w):
        y = F.sum(F.sin(x) * w)
        y.backward()
        with no_grad():
            metric = F.sum(x * x)  # computed inside, with no graph: replayed too
        return y, metric

    for i in range(5):
        x, w = Variable(rand(4, seed=i)), Variable(rand(4, seed=50 + i))
        y, metric = step(x, w)
        xe, we = Variable(rand(4, seed=i)), Variable(rand(4, seed=50 + i))
        ye = F.sum(F.sin(xe) * we)
        ye.backward()
        _same(to_np, y, ye)
        _same(to_np, x.grad, xe.grad)
        _same(to_np, w.grad, we.grad)
        _same(to_np, metric, F.sum(xe * xe))
        assert (y.creator is None) == (i >= 3)  # calls 4 and 5 are replays: no graph
    assert step.counts["replayed"] == 2


def test_a_last_batch_of_another_size_is_another_kind_of_call(rand, to_np):
    eager, static = _twins(_mlp_like(rand, "float64"))
    sizes = [8, 8, 8, 3] * 4  # an epoch of three full batches and a short last one
    for i, n in enumerate(sizes):
        x, t = rand(n, 4, seed=i), rand(n, 1, seed=200 + i)
        _same(to_np, eager(x, t), static(x, t))
        for pe, ps in zip(eager.params, static.fn.params):
            _same(to_np, pe.grad, ps.grad)
    assert static.counts == {"eager": 2, "traced": 4, "replayed": 10}


def test_one_array_given_twice_is_another_kind_of_call(rand, to_np):
    def make():
        def step(a, b):
            y = F.sum(F.sin(a) * b)
            y.backward()
            return y

        return step

    eager, static = _twins(make)
    x = rand(3, seed=1)
    for i in range(8):  # (x, x) four times, then (x, other) four times
        b = x if i < 4 else rand(3, seed=10 + i)
        _same(to_np, eager(Variable(x), Variable(b)), static(Variable(x), Variable(b)))
    assert static.counts == {"eager": 2, "traced": 4, "replayed": 2}


def test_a_branch_on_the_data_is_caught_and_runs_eagerly(rand, to_np):
    def make():
        def step(x, raw):
            y = F.sin(x) if raw[0] > 0 else F.cos(x)  # Python reads a plain array: not seen
            y = F.sum(y)
            y.backward()
            return y

        return step

    eager, static = _twins(make)
    xs = [rand(3, seed=s) for s in range(12)]
    xs = [x if i % 2 else -x for i, x in enumerate(xs)]
    with pytest.warns(StaticGraphWarning, match=r"did different work") as record:
        for x in xs:
            xe, xs_ = Variable(x), Variable(x)
            _same(to_np, eager(xe, x), static(xs_, x))
            _same(to_np, xe.grad, xs_.grad)
    assert len(record) == 1 and record[0].filename == __file__  # it points at the call
    assert static.counts["replayed"] == 0


@pytest.mark.parametrize(
    "read, what",
    [
        (lambda y: float(y), r"float\(\)"),
        (lambda y: y.item(), r"item\(\)"),
        (lambda y: bool(y > 0), r"x > \.\.\."),
        (lambda y: bool(y >= 0), r"x >= \.\.\."),
        (lambda y: bool(y < 0), r"x < \.\.\."),
        (lambda y: bool(y <= 0), r"x <= \.\.\."),
        (lambda y: np.asarray(y), r"numpy\.asarray\(x\)"),
    ],
)
def test_reading_a_value_into_python_keeps_the_step_eager(rand, to_np, read, what):
    seen = []

    @static_graph
    def step(x):
        y = F.sum(x * x)
        seen.append(read(y))
        y.backward()
        return y

    with pytest.warns(StaticGraphWarning, match=r"reads a value into Python \(" + what):
        for i in range(5):
            x = Variable(rand(3, seed=i))
            step(x)
            _same(to_np, x.grad, 2 * x.data)
    assert len(seen) == 5  # every call ran the Python code: none was replayed
    assert step.counts == {"eager": 4, "traced": 1, "replayed": 0}


def test_a_random_constant_made_inside_is_caught(rand, to_np):
    rng = np.random.default_rng(0)

    @static_graph
    def step(x):
        noise = rng.standard_normal(3)  # a raw array made inside: not an input
        y = F.sum(x * to_like(x, noise))
        y.backward()
        return y

    def to_like(x, a):
        from zerograd.backends import as_array_of, backend_of

        return as_array_of(a, backend_of(x))

    # the generator the step names is seen drawing (before: the two recordings' constants
    # differed, which a pair of equal draws would have missed)
    with pytest.warns(StaticGraphWarning, match=r"draws random numbers from 'rng' in Python"):
        for i in range(8):
            x = Variable(rand(3, seed=i))
            state = rng.bit_generator.state
            y = step(x)
            rng.bit_generator.state = state
            expected = F.sum(Variable(x.data) * to_like(x, rng.standard_normal(3)))
            _same(to_np, y, expected)
    assert step.counts["replayed"] == 0


def test_a_state_carried_with_its_graph_is_refused(rand, to_np):
    w = Parameter(rand(3, seed=1))
    carried = {"h": Variable(rand(3, seed=2))}

    @static_graph
    def step(x):
        w.cleargrad()
        h = F.tanh(carried["h"] * w + x)
        carried["h"] = h  # kept with its graph (no unchain_backward)
        loss = F.sum(h)
        loss.backward()
        return loss

    with pytest.warns(StaticGraphWarning, match=r"a function called before this call"):
        for i in range(4):
            step(rand(3, seed=10 + i))
    assert step.counts["replayed"] == 0


def test_changing_a_captured_variable_by_hand_is_caught(rand, to_np):
    x = Variable(rand(2, seed=1))  # the book's gradient descent on a plain Variable

    @static_graph
    def step():
        x.cleargrad()
        y = F.sum(x * x)
        y.backward()
        x.data -= 0.1 * x.grad.data
        return y

    x_e = Variable(rand(2, seed=1))
    # the step's own read of x.data is seen first (x.data -= ... reads before it assigns)
    with pytest.warns(StaticGraphWarning, match=r"reads a Variable of shape \(2,\)'s values"):
        for _ in range(6):
            ys = step()
            x_e.cleargrad()
            ye = F.sum(x_e * x_e)
            ye.backward()
            x_e.data -= 0.1 * x_e.grad.data
            _same(to_np, ys, ye)
            _same(to_np, x, x_e)
    assert step.counts["replayed"] == 0


def test_retain_grad_and_a_forward_with_a_graph_are_refused(rand):
    @static_graph
    def retained(x):
        y = F.sum(F.sin(x))
        y.backward(retain_grad=True)
        return y

    @static_graph
    def forward(x):
        return F.sin(x)

    with pytest.warns(StaticGraphWarning, match=r"retain_grad=True"):
        for i in range(4):
            retained(Variable(rand(3, seed=i)))
    with pytest.warns(StaticGraphWarning, match=r"returns Variables with a graph"):
        for i in range(4):
            y = forward(Variable(rand(3, seed=i)))
            assert y.creator is not None  # eager: the caller can still run backward
    assert retained.counts["replayed"] == forward.counts["replayed"] == 0


def test_a_forward_under_no_grad_replays(rand, to_np):
    W = Parameter(rand(3, 2, seed=3))

    @static_graph
    def predict(x):
        return F.tanh(F.matmul(x, W))

    with no_grad():
        for i in range(5):
            x = rand(4, 3, seed=i)
            _same(to_np, predict(x), F.tanh(F.matmul(x, W)))
    assert predict.counts == {"eager": 1, "traced": 2, "replayed": 2}
    # enable_backprop is part of the key: with a graph it is another kind (a warm-up call,
    # then a trace, refused: it returns a graph and runs no backward)
    x = rand(4, 3, seed=0)
    with pytest.warns(StaticGraphWarning, match=r"returns Variables with a graph"):
        for _ in range(3):
            y = predict(x)
            assert y.creator is not None
            _same(to_np, y, F.tanh(F.matmul(x, W)))
    assert predict.counts == {"eager": 3, "traced": 3, "replayed": 2}


def test_double_backprop_inside_the_step(arr, to_np):
    def make():
        def step(x):
            y = x**3 + 2 * x
            y.backward(create_graph=True)
            gx = x.grad
            x.cleargrad()
            gx.backward()
            return x.grad

        return step

    eager, static = _twins(make)
    for v in (0.5, 1.5, -2.0, 3.0, 0.25):
        xe, xs = Variable(arr(v)), Variable(arr(v))
        ge, gs = eager(xe), static(xs)
        _same(to_np, ge, gs)
        assert ge is xe.grad and gs is xs.grad  # an argument's gradient, not a copy
    assert static.counts["replayed"] == 2


def test_a_guard_that_fails_retraces(rand, to_np):
    w = Parameter(rand(3, seed=1))

    @static_graph
    def step(x):
        w.cleargrad()
        y = F.sum(F.sin(w * x))
        y.backward()
        return y

    for i in range(4):
        step(rand(3, seed=i))
    w.data = rand(1, seed=9)  # the captured parameter changes shape: guards fail
    for i in range(4):
        x = rand(3, seed=i)
        y = step(x)
        w2 = Variable(w.data)
        _same(to_np, y, F.sum(F.sin(w2 * x)))
    assert step.counts["traced"] == 4
    assert step.counts["replayed"] == 3


def _check_sin_step(to_np, m, x):
    """``m.step(x)`` gives the loss sum(sin(w * x)) and w's gradient, as eager does."""
    y = m.step(x)
    w = Variable(m.w.data)
    expected = F.sum(F.sin(w * x))
    expected.backward()
    _same(to_np, y, expected)
    _same(to_np, m.w.grad, w.grad)


def test_methods_nested_static_functions_and_failures(rand, to_np):
    class Model:
        def __init__(self):
            self.w = Parameter(rand(3, seed=4))

        @static_graph
        def inner(self, x):
            return F.sin(self.w * x)

        @static_graph
        def step(self, x):
            self.w.cleargrad()
            y = F.sum(self.inner(x))  # a static function inside another: recorded inline
            y.backward()
            return y

    m = Model()
    with pytest.raises(ValueError, match=r"do not broadcast"):
        m.step(rand(4, seed=0))  # a failing call records nothing
    for i in range(5):
        _check_sin_step(to_np, m, rand(3, seed=i))
    assert m.step.counts["replayed"] == 2
    # inner ran on its own only in step's eager calls; inside step's recordings it is part of them
    assert m.inner.counts == {"eager": 2, "traced": 0, "replayed": 0}
    assert m.step is m.step and Model().step is not m.step  # each instance records its own


def test_a_method_keeps_no_instance_alive(rand, to_np):
    class Model:
        def __init__(self, seed):
            self.w = Parameter(rand(3, seed=seed))

        @static_graph
        def step(self, x):
            self.w.cleargrad()
            y = F.sum(F.sin(self.w * x))
            y.backward()
            return y

    refs = []
    for i in range(40):  # more instances than max_kinds
        m = Model(i)
        for j in range(4):
            _check_sin_step(to_np, m, rand(3, seed=j))
        assert m.step.counts == {"eager": 1, "traced": 2, "replayed": 1}
        refs.append(weakref.ref(m))
    del m
    gc.collect()
    assert [r for r in refs if r() is not None] == []
    assert Model.step.counts == {"eager": 0, "traced": 0, "replayed": 0}
    m = Model(0)
    for j in range(4):
        m.step(rand(3, seed=j))
    copied = copy.deepcopy(m)  # a copy records its own calls, on its own Parameters
    for j in range(4):
        _same(to_np, copied.step(rand(3, seed=j)), m.step(rand(3, seed=j)))
        _same(to_np, copied.w.grad, m.w.grad)
        assert copied.w.grad is not m.w.grad
    assert copied.step.counts == {"eager": 1, "traced": 2, "replayed": 1}


class _Stepper:
    """Holds a StaticGraph of its own bound method as an attribute (pickled by reference)."""

    def __init__(self, w):
        self.w = w
        self.step = static_graph(self._step)

    def _step(self, x):
        self.w.cleargrad()
        y = F.sum(F.sin(self.w * x))
        y.backward()
        return y


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_static_graph_held_as_an_attribute_copies_with_its_owner(rand, to_np, how):
    m = _Stepper(Parameter(rand(3, seed=0)))
    for j in range(4):
        m.step(rand(3, seed=j))
    assert m.step.counts["replayed"] == 1
    copied = copy.deepcopy(m) if how == "deepcopy" else pickle.loads(pickle.dumps(m))
    assert copied.step.fn.__self__ is copied and copied.step.warmup == m.step.warmup
    assert copied.step.counts == {"eager": 0, "traced": 0, "replayed": 0}
    for j in range(4):  # the copy records anew, on its own Parameter
        _same(to_np, copied.step(rand(3, seed=j)), m.step(rand(3, seed=j)))
        _same(to_np, copied.w.grad, m.w.grad)
        assert copied.w.grad is not m.w.grad
    assert copied.step.counts == {"eager": 1, "traced": 2, "replayed": 1}


def test_past_max_kinds_the_warning_names_unhashable_arguments_told_apart_by_identity(rand):
    @dataclasses.dataclass
    class Batch:  # eq=True: unhashable, so a key holds it by identity
        x: np.ndarray

    @static_graph(max_kinds=2)
    def step(b):
        return F.sum(Variable(b.x) * 2.0)

    with pytest.warns(StaticGraphWarning, match=r"its arguments include .*Batch objects"):
        for i in range(4):
            step(Batch(rand(3, seed=i)))
    assert step.counts == {"eager": 4, "traced": 0, "replayed": 0}


def test_calls_past_max_kinds_run_eagerly_and_keep_nothing_alive(rand, to_np):
    class Scale:
        """A hashable argument: the key of its call holds it (it is compared by equality)."""

        def __init__(self, v):
            self.v = v

    @static_graph(max_kinds=2)
    def step(x, scale):
        y = F.sum(x * scale.v)
        y.backward()
        return y

    scales = [Scale(float(i)) for i in range(6)]
    refs = [weakref.ref(s) for s in scales]
    x = Variable(rand(3, seed=0))
    # the warning names what made the kinds: objects told apart by identity
    why = (
        r"more than 2 kinds of call .* its arguments include .*Scale objects, which are told apart"
    )
    with pytest.warns(StaticGraphWarning, match=why) as record:
        for s in scales:
            _same(to_np, step(x, s), F.sum(Variable(x.data) * s.v))
    assert len(record) == 1 and record[0].filename == __file__  # it points at the call
    assert step.counts == {"eager": 6, "traced": 0, "replayed": 0}
    del scales, s
    gc.collect()
    assert [r() is None for r in refs] == [False, False, True, True, True, True]


class _Step:
    """A training step as a callable object (a Model is one too)."""

    def __init__(self, w):
        self.w = Parameter(w)

    def __call__(self, x):
        self.w.cleargrad()
        y = F.sum(F.sin(self.w * x))
        y.backward()
        return y


def test_a_callable_object_replays_and_is_named_by_its_class(rand, to_np):
    eager, static = _Step(rand(3, seed=1)), static_graph(_Step(rand(3, seed=1)))
    for i in range(4):
        x = rand(3, seed=i)
        _same(to_np, eager(x), static(x))
        _same(to_np, eager.w.grad, static.fn.w.grad)
    assert static.counts["replayed"] == 1
    with pytest.warns(StaticGraphWarning, match=r"static_graph\(_Step\): more than 0 kinds"):
        StaticGraph(_Step(rand(3, seed=1)), max_kinds=0)(rand(3, seed=0))


class _Holder:
    """An argument that cannot be hashed (it defines equality), holding a parameter."""

    def __init__(self, w):
        self.w = w

    def __eq__(self, other):
        return isinstance(other, _Holder) and other.w is self.w

    __hash__ = None


def test_an_unhashable_argument_replays_only_for_itself(rand, to_np):
    def step(x, h):
        y = F.sum(h.w * x)
        h.w.cleargrad()
        y.backward()
        return y

    static = static_graph(step)
    x = rand(3, seed=0)
    first = _Holder(Parameter(rand(3, seed=1)))
    for _ in range(4):
        static(x, first)
    assert static.counts["replayed"] == 1
    old = id(first)
    del first
    gc.collect()
    # a new holder, at the freed address if the allocator gives it back: it must not replay
    # the first holder's recording (that would read the first holder's parameter)
    candidates = [_Holder(Parameter(rand(3, seed=2))) for _ in range(2000)]
    second = next((c for c in candidates if id(c) == old), candidates[0])
    twin = _Holder(Parameter(rand(3, seed=2)))
    _same(to_np, static(x, second), step(x, twin))
    _same(to_np, second.w.grad, twin.w.grad)


def test_returned_structures_are_rebuilt(rand, to_np):
    @static_graph
    def step(x):
        y = F.sum(x * x)
        y.backward()
        return {"loss": y, "parts": [x, y.data, None, "ok"], "n": 3}

    for i in range(4):
        x = Variable(rand(2, seed=i))
        out = step(x)
        assert out["parts"][0] is x and out["parts"][2:] == [None, "ok"] and out["n"] == 3
        _same(to_np, out["loss"], F.sum(Variable(x.data) ** 2))
        _same(to_np, out["parts"][1], out["loss"].data)
    assert step.counts["replayed"] == 1


Batch = collections.namedtuple("Batch", "x scale")
Parts = collections.namedtuple("Parts", "loss grad")


def test_named_tuples_in_and_out_replay_as_tuples(rand, to_np):
    """A named tuple argument is opened as a tuple (its arrays are the replay's inputs, not
    one object compared by identity, which made every call a new kind, silently eager) and
    a named tuple result comes back as its class."""

    def make():
        w = Parameter(rand(3, seed=1), name="w")

        def step(b):
            w.cleargrad()
            loss = F.sum(F.sin(w * b.x)) * b.scale
            loss.backward()
            return Parts(loss, w.grad)

        return step

    eager, static = _twins(make)
    for i in range(5):
        x = rand(3, seed=10 + i)
        got, want = static(Batch(x, 2.0)), eager(Batch(x, 2.0))
        assert type(got) is Parts
        _same(to_np, got.loss, want.loss)
        _same(to_np, got.grad, want.grad)
    assert static.counts == {"eager": 1, "traced": 2, "replayed": 2}
    got, want = static(Batch(x, 3.0)), eager(Batch(x, 3.0))  # another number: another kind
    _same(to_np, got.loss, want.loss)
    assert static.counts["replayed"] == 2


def test_a_named_tuple_result_of_plain_arguments_replays(rand, to_np):
    @static_graph
    def step(x):
        y = F.sum(x * x)
        y.backward()
        return Parts(y, x.grad)

    for i in range(5):
        x = Variable(rand(2, seed=i))
        out = step(x)
        assert type(out) is Parts and out.grad is x.grad
        _same(to_np, out.loss, F.sum(Variable(x.data) ** 2))
    assert step.counts["replayed"] == 2


def _returning(rand, returned):
    """A make() of a step on a captured Parameter ``w`` returning ``returned(...)``."""

    def make():
        w = Parameter(rand(3, seed=1), name="w")
        held = Variable(rand(2, seed=2))  # returned, never touched

        def step(x):
            w.cleargrad()
            loss = F.sum(F.sin(x * w))
            loss.backward()
            with no_grad():
                norm = F.sum(w.grad * w.grad)
            return returned(loss, w, held, norm)

        step.w, step.held = w, held
        return step

    return make


def test_a_returned_parameter_or_held_variable_is_itself(rand, to_np):
    """They come back as themselves, with the data and gradient of their time, beside the
    loss: in a dict, a tuple and a list (the Parameter twice)."""

    def returned(loss, w, held, norm):
        return {"loss": loss, "w": w, "kept": (held, norm), "again": [w]}

    eager, static = _twins(_returning(rand, returned))
    for i in range(6):
        x = rand(3, seed=10 + i)
        e, s = eager(Variable(x)), static(Variable(x))
        assert s["w"] is s["again"][0] is static.fn.w and s["kept"][0] is static.fn.held
        assert e["w"] is eager.w and e["kept"][0] is eager.held
        for a, b in [(e["loss"], s["loss"]), (e["w"], s["w"]), *zip(e["kept"], s["kept"])]:
            _same(to_np, a, b)
        _same(to_np, e["w"].grad, s["w"].grad)
    assert static.counts == {"eager": 1, "traced": 2, "replayed": 3}


def test_a_detached_value_is_a_new_variable_each_call(rand, to_np):
    """A Parameter detached, or work under no_grad: a new Variable each call, as eagerly
    (not the one a recording returned)."""
    eager, static = _twins(_returning(rand, lambda loss, w, held, norm: (w.detach(), norm)))
    seen = []
    for i in range(6):
        x = rand(3, seed=10 + i)
        e, s = eager(Variable(x)), static(Variable(x))
        assert s[0] is not static.fn.w and all(v is not s[0] and v is not s[1] for v in seen)
        seen += list(s)
        for a, b in zip(e, s):
            _same(to_np, a, b)
            assert b.grad is None and b.creator is None
    assert static.counts == {"eager": 1, "traced": 2, "replayed": 3}


def test_a_parameter_returned_by_a_branch_on_the_data_keeps_the_step_eager(rand, to_np):
    def make():
        w, v = Parameter(rand(3, seed=1)), Parameter(rand(3, seed=2))

        def step(x, raw):
            w.cleargrad()
            v.cleargrad()
            loss = F.sum(F.sin(x * w) * v)
            loss.backward()
            return loss, (w if raw[0] > 0 else v)  # Python reads a plain array: not seen

        step.params = (w, v)
        return step

    eager, static = _twins(make)
    with pytest.warns(StaticGraphWarning, match=r"did different work \(they returned different"):
        for i in range(8):
            raw = rand(3, seed=i)
            raw = raw if (to_np(raw)[0] > 0) == (i % 2 == 0) else -raw  # w, v, w, v...
            (le, pe), (ls, ps) = eager(Variable(raw), raw), static(Variable(raw), raw)
            _same(to_np, le, ls)
            assert pe is eager.params[i % 2] and ps is static.fn.params[i % 2]
    assert static.counts["replayed"] == 0


def test_static_graph_refuses_bad_arguments():
    with pytest.raises(TypeError, match=r"static_graph: expected a function, got int"):
        static_graph(3)
    with pytest.raises(ValueError, match=r"^static_graph: warmup must be an int >= 0, got -1$"):
        static_graph(lambda: None, warmup=-1)
    with pytest.raises(TypeError, match=r"^static_graph: warmup must be an int >= 0, got 1.0"):
        static_graph(warmup=1.0)
    with pytest.raises(ValueError, match=r"^static_graph: max_kinds must be an int >= 0, got -2$"):
        static_graph(lambda: None, max_kinds=-2)
    with pytest.raises(TypeError, match=r"^static_graph: max_kinds must be an int >= 0, got '8'"):
        static_graph(max_kinds="8")


_ORDER: list = []


def _logged_exp(x):
    _ORDER.append("exp")
    return get_array_module(x).exp(x)


def _scaled(x, s):
    _ORDER.append("scale")
    return x * s


class _LoggedExp(Function):
    """exp, whose kernel says when it runs."""

    def forward(self, x):
        return get_array_module(x).exp(x)

    def kernel(self, x):
        return _logged_exp

    def vjp(self, xp, xs, y, gy):
        return gy * y


class _Scale(Function):
    """``x * s`` for scales ``s`` >= 0: a value check its kernel leaves out."""

    check_values_of = (1,)

    def check(self, x, s):
        _ORDER.append(("check", tuple(x.shape)))
        if backend_of(s).to_numpy(s).min() < 0:
            raise ValueError("_Scale: scales must be >= 0")

    def forward(self, x, s):
        self.check(x, s)
        return x * s

    def kernel(self, x, s):
        return _scaled

    def vjp(self, xp, xs, y, gy):
        return gy * xs[1], gy * xs[0]


def _scaled_step(arr, scale_of):
    """A step(x, s) on a captured Parameter: exp(w * x) scaled by ``scale_of(s, w)``."""
    w = Parameter(arr([0.5, -0.25, 1.0]))

    def step(x, s):
        w.cleargrad()
        y = F.sum(_Scale()(_LoggedExp()(w * x), scale_of(s, w)))
        y.backward()
        return y

    return static_graph(step), w


def test_a_value_check_runs_before_any_work_of_a_replay(arr, to_np):
    """The check of the call's own labels/scales runs first; refused, nothing ran and the
    parameter's gradient is as it was."""
    step, w = _scaled_step(arr, lambda s, w: s)
    x, good = arr([1.0, 2.0, 3.0]), arr([1.0, 0.0, 2.0])
    for _ in range(3):  # eager, two recordings
        step(x, good)
    del _ORDER[:]
    step(x, good)
    assert _ORDER == [("check", (3,)), "exp", "scale"]  # the scores described by shape
    g = to_np(w.grad.data).copy()
    del _ORDER[:]
    with pytest.raises(ValueError, match=r"_Scale: scales must be >= 0"):
        step(x, arr([1.0, -1.0, 2.0]))
    assert _ORDER == [("check", (3,))]
    np.testing.assert_array_equal(to_np(w.grad.data), g)
    step(x, good)  # and the next call replays as before
    assert step.counts["replayed"] == 2
    np.testing.assert_array_equal(to_np(w.grad.data), g)


def test_a_value_check_of_an_array_made_inside_runs_before_its_kernel(arr):
    step, w = _scaled_step(arr, lambda s, w: w * w * s)  # the scales are made by the step
    x, s = arr([1.0, 2.0, 3.0]), arr([1.0, 0.0, 2.0])
    for _ in range(3):
        step(x, s)
    del _ORDER[:]
    step(x, s)
    assert _ORDER == ["exp", ("check", (3,)), "scale"]
    with pytest.raises(ValueError, match=r"_Scale: scales must be >= 0"):
        step(x, arr([1.0, -1.0, 2.0]))


class _ScaleByInput(Function):
    """A user's vjp that reads its input's value through ``self.inputs``."""

    def forward(self, x):
        return x * x

    def vjp(self, xp, xs, y, gy):
        return gy * 2 * self.inputs[0].data


def test_built_in_vjps_get_no_stand_ins_and_a_users_vjp_keeps_them():
    w = Parameter(np.linspace(-1.0, 1.0, 6).reshape(2, 3))
    w_eager = Parameter(w.data.copy())

    def make(w, user):
        def step(x):
            w.cleargrad()
            h = F.tanh(x * w) * w  # Mul's vjps read their inputs' values from xs
            y = F.sum(_ScaleByInput()(h) if user else h)
            y.backward()
            return y, w.grad

        return step

    for user in (False, True):
        eager, static = make(w_eager, user), static_graph(make(w, user))
        for i in range(5):
            x = np.random.default_rng(i).standard_normal((2, 3))
            for got, want in zip(static(x), eager(x)):
                _same(np.asarray, got, want)
        assert static.counts["replayed"] == 2
        # the user's vjp gets this replay's h put into its stand-in, and only it does
        assert static.sources()[0].count(".data = s") == (1 if user else 0)


def test_replayed_leaf_gradients_never_share_memory(rand, to_np):
    """As eagerly: the reshape derivatives give views of the one gradient add passes on,
    and a trace's planned walk gave the two Parameters gradients sharing memory."""

    def make():
        a, b = Parameter(rand(2, seed=1)), Parameter(rand(2, seed=2))

        def step(x):
            a.cleargrad()
            b.cleargrad()
            y = (F.reshape(a, (1, 2)) + F.reshape(b, (1, 2))) * x
            loss = F.sum(y * y)
            loss.backward()
            return loss

        step.a, step.b = a, b
        return step

    eager, static = _twins(make)
    for i in range(5):
        x = rand(1, 2, seed=10 + i)
        _same(to_np, static(x), eager(x))
        _same(to_np, static.__wrapped__.a.grad, eager.a.grad)
        g_a, g_b = to_np(static.__wrapped__.a.grad.data), to_np(static.__wrapped__.b.grad.data)
        if type(static.__wrapped__.a.grad.data) is np.ndarray:
            assert not np.shares_memory(
                static.__wrapped__.a.grad.data, static.__wrapped__.b.grad.data
            )
        np.testing.assert_array_equal(g_a, g_b)
    assert static.counts["replayed"] == 2


def test_a_traced_call_never_hands_a_preset_seed_on_as_a_leaf_gradient(rand):
    """As eagerly: the trace's planned walk gave ``a`` the user's seed array itself."""
    a = Parameter(rand(2, seed=1))
    seed = rand(2, seed=2)

    @static_graph
    def step(x):
        a.cleargrad()
        y = a + x
        y.grad = Variable(seed)
        y.backward()
        return y

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaticGraphWarning)  # a seed made outside: eager
        for i in range(3):
            step(rand(2, seed=10 + i))
            assert a.grad.data is not seed
            if type(seed) is np.ndarray:
                assert not np.shares_memory(a.grad.data, seed)
    assert step.counts["traced"] == 1


def test_replayed_leaf_gradients_are_writable(rand, to_np):
    """As eagerly: a sum's gradient was a read-only broadcast view in traced calls."""
    a = Parameter(rand(3, seed=1))

    @static_graph
    def step(x):
        a.cleargrad()
        loss = F.sum(a) * F.sum(x)
        loss.backward()
        return loss

    for i in range(5):
        step(rand(3, seed=10 + i))
        if type(a.grad.data) is np.ndarray:
            assert a.grad.data.flags.writeable
    assert step.counts["replayed"] == 2


def test_the_first_call_after_the_backends_load_is_one_kind_with_the_next():
    """static-graph.md: "the first call runs eagerly", then the next calls are recorded.
    Before any operation had met numpy arrays (the first call of a process, or the first
    after a refresh) the first call's arrays were keyed as unknown objects, by identity:
    a kind of its own, one more eager call, and the array held as long as the function."""
    import zerograd.backends as B

    B.refresh()  # no array type resolved yet, as in a fresh process

    @static_graph
    def f(x):
        with no_grad():
            return F.exp(x) * 2.0

    first = np.arange(3.0)
    gone = weakref.ref(first)
    f(first)
    del first
    for i in range(4):
        x = np.arange(3.0) + i
        np.testing.assert_array_equal(f(x).data, np.exp(x) * 2.0)
    assert f.counts == {"eager": 1, "traced": 2, "replayed": 2}
    gc.collect()
    assert gone() is None


def test_calls_starting_from_ever_new_states_keep_a_bounded_number_of_recordings(rand, to_np):
    # which Parameters hold a gradient for backward to add onto is part of what a call
    # starts from; a recording of a state seen once waits for a second call like it and
    # keeps every array its call made: a step never started twice alike kept one per call
    def make():
        ws = [Parameter(rand(3, seed=i)) for i in range(6)]

        def step(x):
            y = F.sum(ws[0] * x)
            for w in ws[1:]:
                y = y + F.sum(w * x)
            y.backward()
            return y

        return step, ws

    (eager, eager_ws), (static, static_ws) = make(), make()
    static = static_graph(static)
    x = rand(3, seed=9)

    def recordings():
        gc.collect()
        return sum(type(o).__name__ == "Trace" for o in gc.get_objects())

    kept = []
    with pytest.warns(StaticGraphWarning, match=r"kept starting from new states") as record:
        for i in range(64):  # the bits of i: which Parameters start the call with no gradient
            for ws in (eager_ws, static_ws):
                for k, w in enumerate(ws):
                    if i >> k & 1:
                        w.cleargrad()
            _same(to_np, static(x), eager(x))
            for a, b in zip(static_ws, eager_ws):
                _same(to_np, a.grad, b.grad)
            kept.append(recordings())
    assert max(kept) <= StaticGraph.max_variants
    assert kept[-1] == 0  # the kind runs eagerly now, and keeps none
    assert len(record) == 1 and record[0].filename == __file__
    assert static.counts["replayed"] == 0 and static.counts["traced"] < 20


def test_a_step_defined_again_leaves_its_old_code_to_be_freed(rand):
    # a notebook cell run again (or edited) defines the step anew: what a recording learns
    # of a step's code (the names it reads, its harmless reads of .data) must not keep
    # every old definition's code alive
    w = Parameter(rand(3, seed=0))
    codes = []
    for i in range(5):
        scope = {"F": F, "w": w}
        source = (
            "def step(x):\n"
            "    w.cleargrad()\n"
            f"    y = F.sum(w * x * {i + 0.5})\n"
            "    y.backward()\n"
            "    assert y.data.shape == ()\n"
            "    return y\n"
        )
        exec(compile(source, f"<cell {i}>", "exec"), scope)  # noqa: S102
        step = static_graph(scope["step"])
        for _ in range(4):
            step(rand(3, seed=1))
        assert step.counts == {"eager": 1, "traced": 2, "replayed": 1}
        codes.append(weakref.ref(scope["step"].__code__))
        del scope, step
    gc.collect()
    assert [r() is None for r in codes] == [True] * 5


@pytest.mark.parametrize(
    "masked",
    [
        lambda h: F.clip(h, -0.5, 0.5),
        lambda h: F.clip(h, None, 0.5),
        lambda h: F.max(F.reshape(h, (1, 3)), axis=1),
        lambda h: F.min(F.reshape(h, (1, 3)), axis=1, keepdims=True),
    ],
    ids=["clip", "clip_upper", "max", "min_keepdims"],
)
def test_a_mask_a_derivative_makes_under_create_graph_is_computed_anew(arr, to_np, masked):
    """With create_graph the vjps run as Functions; clip's and max's masks come from the
    values. Made from ``.data`` they were constants: the two recordings below have equal
    masks (the data differ), so the replay kept them, and a call whose mask differs got
    the recorded call's gradient."""

    def make():
        w = Parameter(arr([0.25, -1.0, 2.0]))

        def step(x):
            w.cleargrad()
            # w first: array-api-strict's arrays refuse a Variable on their left
            F.sum(masked(w * x) * x).backward(create_graph=True)
            return w.grad

        return step

    eager, static = _twins(make)
    for v in (0.1, 0.2, 0.15, -4.0, 0.3, 5.0):
        x = arr([v, v, v])
        _same(to_np, eager(x), static(x))
    assert static.counts["replayed"] > 0, static.counts


def test_a_replay_that_gives_a_gradient_then_adds_onto_it_needs_none_held(rand, to_np):
    """A step with two backward calls: the first gives ``w`` its gradient, the second adds
    onto it. Recorded from calls that started with ``w.grad`` None, its replay stores the
    first; it ran on a call that started with a gradient held (the caller stopped clearing
    to accumulate over calls) and dropped that gradient, where the eager call adds onto it.
    """

    def make():
        w = Parameter(rand(3, seed=1))

        def step(x):
            F.sum(F.sin(w * x)).backward()  # w first, as above
            F.sum(w * x * w).backward()
            return w

        return step

    eager, static = _twins(make)
    for i in range(7):
        x = rand(3, seed=10 + i)
        we, ws = eager(x), static(x)
        _same(to_np, we.grad, ws.grad)
        if i < 3:  # cleared between the first calls; accumulated over the later ones
            we.cleargrad()
            ws.cleargrad()
    assert static.counts["replayed"] >= 2, static.counts


def test_a_power_at_a_zero_base_under_create_graph_is_computed_anew(arr, to_np):
    """``x ** w`` lifts a zero base to 1 in d/dw (``0 ** c`` is constant for c >= 0); made
    from ``.data`` under create_graph that mask was a constant, the recorded calls (no
    zero base) agreed on it, and a replay at a zero base gave nan where eager gives 0."""

    def make():
        w = Parameter(arr([2.0, 3.0, 1.5]))

        def step(x):
            w.cleargrad()
            F.sum(F.pow(x, w)).backward(create_graph=True)  # x ** w, for any array type
            return w.grad

        return step

    eager, static = _twins(make)
    for v in ([1.0, 2.0, 3.0], [2.0, 1.0, 4.0], [3.0, 3.0, 1.0], [0.0, 2.0, 0.0], [1.0, 5.0, 2.0]):
        x = arr(v)
        _same(to_np, eager(x), static(x))
    assert static.counts == {"eager": 1, "traced": 2, "replayed": 2}


def test_an_array_exponent_changed_in_place_under_create_graph_is_read_anew(arr, to_np):
    """``x ** c`` for a captured array ``c``: d/dx is ``c * x ** (c - 1)``. ``c - 1`` was
    made from ``.data`` under create_graph, a constant to the recordings, so after the
    caller changed ``c`` in place a replay took the new ``c`` with the old ``c - 1`` (a
    second derivative matching neither), where a first-order replay follows ``c``."""
    c = arr([2.0, 3.0, 0.5])

    def make():
        def step(x):
            x = Variable(x)
            F.sum(x**c).backward(create_graph=True)
            gx = x.grad
            x.cleargrad()
            F.sum(gx * gx).backward()  # a gradient penalty's double backward
            return x.grad

        return step

    eager, static = _twins(make)
    for i, v in enumerate(([1.5, 2.0, 0.7], [1.2, 0.6, 1.9], [0.8, 1.1, 1.3], [1.4, 0.9, 2.2])):
        if i == 3:
            c[...] = arr([1.5, 4.0, 2.5])  # the same array, new exponents
        x = arr(v)
        _same(to_np, eager(x), static(x))
    assert static.counts == {"eager": 1, "traced": 2, "replayed": 1}


def test_an_index_made_by_a_function_under_create_graph_is_read_anew():
    """``x[i]`` where a Function made ``i`` (an argmax): under create_graph the derivative
    applies ``GetItemGrad`` to the copy of ``i`` that GetItem's forward saved, a constant
    to the recordings; recorded calls with the same argmax agreed on it, and each replay
    scattered the gradient at the recorded calls' positions, silently."""

    class ArgMax(Function):
        def forward(self, x):
            return x.argmax(axis=1)

        def vjp(self, xp, xs, y, gy):
            return None

    def make():
        w = Parameter(np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]]))

        def step(x):
            w.cleargrad()
            y = (x * w)[np.arange(2), ArgMax()(x)]
            F.sum(y * y * y).backward(create_graph=True)
            g = w.grad
            w.cleargrad()
            F.sum(g * g).backward()
            return w.grad

        return step

    eager, static = _twins(make)
    xs = [np.array([[0.1, 0.9, 0.2], [0.8, 0.1, 0.3]]) * (1.0 + 0.01 * i) for i in range(3)]
    xs += [
        np.array([[0.7, 0.1, 0.2], [0.1, 0.2, 0.9]]),
        np.array([[0.1, 0.2, 0.3], [0.5, 0.4, 0.3]]),
    ]
    for x in xs:
        _same(lambda a: a, eager(x), static(x))
    assert static.counts == {"eager": 1, "traced": 2, "replayed": 2}


def test_an_array_exponent_passed_in_under_create_graph_replays_each_calls_exponent(arr, to_np):
    """``x ** c`` with ``c`` an argument, under create_graph: ``c - 1``, made from ``.data``,
    was a constant that every recording made anew, so recordings given one ``c`` waited
    and recordings given two disagreed (the call stayed eager). Computed by a Function, it
    replays, each call with its own ``c``, the calls sharing one ``c`` array included."""

    def make():
        def step(x, c):
            x = Variable(x)
            F.sum(x**c).backward(create_graph=True)
            gx = x.grad
            x.cleargrad()
            F.sum(gx * gx).backward()
            return x.grad

        return step

    eager, static = _twins(make)
    c1, c2 = arr([2.0, 3.0, 0.5]), arr([1.5, 4.0, 2.5])
    for i, c in enumerate((c1, c1, c2, c1, c2, c2)):
        x = arr([1.5, 2.0, 0.7 + 0.1 * i])
        _same(to_np, eager(x, c), static(x, c))
    assert static.counts == {"eager": 1, "traced": 2, "replayed": 3}


def test_a_dropped_step_leaves_no_reference_cycle_of_its_programs():
    """A replay's compiled program is freed by reference counting once its step goes; its
    function and the namespace it was compiled in held each other (a cycle for the cyclic
    collector, one per program)."""
    w = Variable(np.ones(3))

    def step(x):
        w.cleargrad()
        loss = F.sum(F.sin(x) * w)
        loss.backward()
        return loss

    fast = static_graph(step)
    for _ in range(4):
        fast(np.arange(3.0))
    assert fast.counts["replayed"] > 0
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        del fast
        gc.collect()
        programs = [
            o
            for o in gc.garbage
            if getattr(getattr(o, "__code__", None), "co_filename", "")[:14] == "<static_graph "
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert programs == []


def test_a_decorated_method_s_recordings_hold_their_instance_weakly():
    """An instance keeps its own recordings of a @static_graph method; they hold the
    instance weakly, so a dropped instance goes at once (with what it names), not at the
    cyclic collector's next run; a step kept past its instance says so when called."""

    class Stepper:
        def __init__(self):
            self.w = Variable(np.ones(3))

        @static_graph
        def step(self, x):
            """One step."""
            self.w.cleargrad()
            loss = F.sum(F.sin(x) * self.w)
            loss.backward()
            return loss

    s = Stepper()
    assert (s.step.__doc__, s.step.__name__, s.step.__module__) == ("One step.", "step", __name__)
    for _ in range(5):
        s.step(np.arange(3.0))
    assert s.step.counts == {"eager": 1, "traced": 2, "replayed": 2}
    np.testing.assert_allclose(s.w.grad.data, np.sin(np.arange(3.0)))
    was = gc.isenabled()
    gc.disable()
    try:
        instance, weights = weakref.ref(s), weakref.ref(s.w)
        kept = s.step
        del s
        assert instance() is None  # (kept, its recordings, name s.w still)
        with pytest.raises(ReferenceError, match="keep a reference to the object"):
            kept(np.arange(3.0))
        del kept
        assert weights() is None
    finally:
        if was:
            gc.enable()


def test_threads_making_one_kinds_first_recordings_at_once_keep_it_replaying(arr, to_np):
    # a call that finds no program records one; calls reaching that point in many threads
    # at once each recorded, every second recording became a program, and past
    # max_programs the kind ran eagerly for good, warning that its guards failed
    n = 2 * StaticGraph.max_programs + 2
    gate = threading.Barrier(n, timeout=30)
    waiting = [False]

    def fn(x):
        if waiting[0]:  # every thread inside the function at once
            gate.wait()
        return F.sum(x * 2.0 + 1.0)

    step = static_graph(fn)
    with no_grad():
        step(Variable(arr([1.0, 2.0])))  # the warm-up: every call below is one to record
        results, errors = [None] * n, []
        waiting[0] = True

        def worker(i):
            try:
                with no_grad():  # (Config is per thread)
                    results[i] = step(Variable(arr([float(i), 1.0])))
            except BaseException as exc:  # (a warning turned error included)
                errors.append(exc)

        with warnings.catch_warnings():
            warnings.simplefilter("error", StaticGraphWarning)
            threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            waiting[0] = False
            assert errors == []
            for i, y in enumerate(results):
                _same(to_np, y, fn(Variable(arr([float(i), 1.0]))))
            for k in range(4):  # the kind goes on to replay, as after calls one by one
                x = Variable(arr([3.0, float(k)]))
                _same(to_np, step(x), fn(x))
    assert step.counts["replayed"] >= 2
    assert sum(step.counts.values()) == n + 5
    assert len(step.sources()) <= 2


def _twelve_threads_calling(arr, to_np):
    """A new step called 10 times in each of 12 threads at once: its programs, and misses."""

    def fn(x):
        return F.sum(x * 2.0 + 1.0)

    step = static_graph(fn)
    step(Variable(arr([1.0, 2.0])))  # the warm-up
    bad = []

    def worker(i):
        with no_grad():
            for k in range(10):
                x = Variable(arr([float(i), float(k)]))
                if _bits(to_np, step(x)) != _bits(to_np, fn(x)):
                    bad.append((i, k))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return len(step.sources()), bad


def test_threads_calling_a_step_at_once_make_one_program(arr, to_np):
    # a call that found no program and then recorded, once the recording another thread
    # made meanwhile had become a program, made a second program of the same calls (and
    # with enough threads, past max_programs, the kind ran eagerly for good); a race:
    # without the fix it showed within the first 20 rounds
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        end = time.monotonic() + 3.0
        for _ in range(100):
            assert _twelve_threads_calling(arr, to_np) == (1, [])
            if time.monotonic() > end:
                break
    finally:
        sys.setswitchinterval(interval)
