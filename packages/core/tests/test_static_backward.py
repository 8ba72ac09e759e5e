"""static_graph learns a backward from the graph: the walk reports nothing to it.

A trace hears that a backward started (``Variable.backward``) and plans the walk's schedule
from the graph the call built, so these tests look at what only a right plan gives: the
eager bits where the order of a gradient sum changes them, a vjp run once per backward,
nothing reported from inside the walk, and nothing changed by a backward that fails.
"""

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Config, Function, Parameter, Variable, static_graph
from zerograd.backends import get_array_module
from zerograd.recording import recording


def _bits(to_np, a):
    a = to_np(a.data if isinstance(a, Variable) else a)
    return (a.shape, str(a.dtype), a.tobytes())


def test_an_input_used_at_three_depths_gets_the_eager_sum_of_its_gradients(rand, to_np):
    """x feeds a function next to the loss, one two steps down and one three steps down,
    with gradients 1e16, about 0.5 and -1e16: a float sum of those three depends on its
    order, so only the walk's order gives the eager bits. s = sin(x * w) is shared by
    three uses; w is never cleared, so every backward adds onto the gradient it holds."""
    w_data = rand(3, dtype="float64", seed=7)

    def make():
        w = Parameter(rand(3, dtype="float64", seed=7))  # each twin its own array

        def step(x):
            near = x * 1e16
            s = F.sin(x * w)
            middle = s * s + F.tanh(s)
            deep = ((x * -1e16) + 1.0) * 1.0
            loss = F.sum(near + middle + deep)
            loss.backward()
            return loss

        step.w = w
        return step

    eager, static = make(), static_graph(make())
    for i in range(6):
        x_data = rand(3, dtype="float64", seed=20 + i)
        xe, xs = Variable(x_data), Variable(x_data)
        assert _bits(to_np, eager(xe)) == _bits(to_np, static(xs))
        assert _bits(to_np, xe.grad) == _bits(to_np, xs.grad)
        assert _bits(to_np, eager.w.grad) == _bits(to_np, static.fn.w.grad)
    assert static.counts == {"eager": 1, "traced": 2, "replayed": 3}
    # the example discriminates: the three gradients of x summed in other orders differ
    s = np.sin(to_np(x_data) * to_np(w_data))
    middle = (2 * s * np.cos(to_np(x_data) * to_np(w_data)) * to_np(w_data)) + (
        (1 - np.tanh(s) ** 2) * np.cos(to_np(x_data) * to_np(w_data)) * to_np(w_data)
    )
    orders = [(1e16 + middle) + -1e16, (1e16 + -1e16) + middle, (-1e16 + middle) + 1e16]
    assert len({o.tobytes() for o in orders}) > 1


class _Counted(Function):
    """x * 3, counting its vjp's calls (a vjp with an effect, as the transforms' taps have)."""

    calls = 0

    def forward(self, x):
        return x * 3

    def vjp(self, xp, xs, y, gy):
        _Counted.calls += 1
        return gy * 3


def test_a_recorded_backward_runs_each_vjp_once(rand, to_np):
    @static_graph
    def step(x):
        y = F.sum(_Counted()(F.sin(x)))
        y.backward()
        return y

    _Counted.calls = 0
    for i in range(5):
        x = Variable(rand(4, seed=i))
        step(x)
        assert _Counted.calls == i + 1
        assert _bits(to_np, x.grad) == _bits(to_np, 3 * np.cos(to_np(x.data)))
    assert step.counts == {"eager": 1, "traced": 2, "replayed": 2}


class _BookSquare(Function):
    """x ** 2 written the book's way: backward(gy) on Variables, reading self.inputs."""

    def forward(self, x):
        return x**2

    def backward(self, gy):
        (x,) = self.inputs
        return 2 * x * gy


def test_a_book_style_backward_under_create_graph_replays(rand, to_np):
    """With create_graph the eager walk runs under the recording, so a DeZero-style
    backward's Functions are recorded as any applied (a recording refused it before)."""

    def make():
        def step(x):
            y = F.sum(_BookSquare()(F.sin(x)) * x)
            y.backward(create_graph=True)
            gx = x.grad
            x.cleargrad()
            F.sum(gx * gx).backward()
            return x.grad

        return step

    eager, static = make(), static_graph(make())
    for i in range(5):
        xe, xs = Variable(rand(3, seed=i)), Variable(rand(3, seed=i))
        ge, gs = eager(xe), static(xs)
        assert _bits(to_np, ge) == _bits(to_np, gs)
        assert gs is xs.grad
    assert static.counts == {"eager": 1, "traced": 2, "replayed": 2}


class _Asking(Function):
    """x * 2 whose book-style backward notes whether a graph would be built."""

    graph = []

    def forward(self, x):
        return x * 2

    def backward(self, gy):
        _Asking.graph.append(Config.enable_backprop)
        return gy * 2


def test_a_recorded_backward_builds_no_graph_as_the_walk(rand):
    """A first-order walk runs its vjps and backwards with enable_backprop off (a forward
    a vjp calls may ask, as max pooling's does): a recorded call does the same."""

    @static_graph
    def step(x):
        y = F.sum(_Asking()(x))
        y.backward()
        return y

    _Asking.graph = []
    for i in range(3):
        step(Variable(rand(2, seed=i)))
    assert _Asking.graph == [False, False, False]  # eager, traced, traced
    assert Config.enable_backprop


class _Listening:
    """A recorder that runs each backward's walk and notes every report made while it runs."""

    def __init__(self):
        self.backwards, self.during, self.walking = [], [], False

    def backward(self, y, retain_grad, create_graph, run):
        self.backwards.append((y, retain_grad, create_graph))
        self.walking = True
        try:
            run(retain_grad, create_graph)
        finally:
            self.walking = False

    def __getattr__(self, name):
        def report(*args):
            if self.walking:
                self.during.append(name)

        return report


def _fan_out(x, w):
    s = F.sin(x * w)
    return F.sum(s * s + F.tanh(s) + x * w + F.exp(x))


@pytest.mark.parametrize("create_graph", [False, True])
def test_the_walk_reports_nothing_to_a_recorder(rand, to_np, create_graph):
    """The recorder hears that a backward starts, with its arguments, and then, from
    inside the walk, only what Variables report themselves: their values read (``data``,
    which the recorder judges by the code reading them) and, with create_graph, Functions
    applied (the walk builds its graph of them). The gradients are the walk's as without
    a recorder."""
    x_data, w_data = rand(3, seed=1), rand(3, seed=2)
    x, w = Variable(x_data), Parameter(w_data)
    w.grad = Variable(rand(3, seed=3))  # a held gradient, added onto
    listener = _Listening()
    with recording(listener):
        y = _fan_out(x, w)
        y.backward(create_graph=create_graph)
    assert [(b[0] is y, b[1], b[2]) for b in listener.backwards] == [(True, False, create_graph)]
    functions = {"before_call", "called"} if create_graph else set()
    assert set(listener.during) <= {"data"} | functions
    if create_graph:
        assert listener.during  # its sums and products are Functions
    xe, we = Variable(x_data), Parameter(w_data)
    we.grad = Variable(rand(3, seed=3))
    _fan_out(xe, we).backward(create_graph=create_graph)
    assert _bits(to_np, x.grad) == _bits(to_np, xe.grad)
    assert _bits(to_np, w.grad) == _bits(to_np, we.grad)


class _Failing(Function):
    """sin(x), whose vjp raises while ``failing`` is set."""

    failing = False

    def forward(self, x):
        return get_array_module(x).sin(x)

    def vjp(self, xp, xs, y, gy):
        if _Failing.failing:
            raise ValueError("the vjp refuses")
        return gy * xp.cos(xs[0])


def test_a_recorded_backward_that_fails_changes_no_gradient(rand, to_np):
    w = Parameter(rand(3, seed=1))

    @static_graph
    def step(x):
        y = F.sum(_Failing()(x * w) + w)
        y.backward()
        return y

    _Failing.failing = False
    step(Variable(rand(3, seed=2)))  # the first call runs eagerly: the next one is traced
    held = w.grad
    before = _bits(to_np, held)
    _Failing.failing = True
    with pytest.raises(ValueError, match="the vjp refuses"):
        step(Variable(rand(3, seed=3)))
    assert w.grad is held and _bits(to_np, w.grad) == before
    _Failing.failing = False
    for i in range(4):
        step(Variable(rand(3, seed=10 + i)))
    assert step.counts["replayed"] == 2
    expected = to_np(held.data).copy()
    for i in range(4):  # w's gradient added up over the four calls since the failure
        xi = to_np(rand(3, seed=10 + i))
        expected = expected + (np.cos(xi * to_np(w.data)) * xi + 1.0)
    np.testing.assert_allclose(to_np(w.grad.data), expected, rtol=1e-12)


def _recorder_calls(module):
    """``(method, line)`` of each call on a name bound to ``current()`` of zerograd.recording
    in ``module``'s source (imported there as ``_recorder``)."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(module))
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(c, ast.Call) and getattr(c.func, "id", None) == "_recorder"
            for c in ast.walk(node.value)
        ):
            bound.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return [
        (node.func.attr, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in bound
    ]


def test_the_eager_engine_calls_the_recorder_at_four_places_and_never_in_the_walk():
    """Issue 37's capture points: a Function applied (before and after its forward), a
    backward started, a value read or assigned; the walk itself calls nothing."""
    import inspect

    from zerograd import backprop, function, variable

    calls = {m.__name__: _recorder_calls(m) for m in (function, variable, backprop)}
    assert calls["zerograd.backprop"] == []
    assert "recording" not in inspect.getsource(backprop)  # nor any other way to reach one
    methods = sorted(name for found in calls.values() for name, _ in found)
    assert methods == ["backward", "before_call", "called", "data"], calls
