"""static_graph's fused chains: which forwards a replay hands to ``Backend.fuse`` as one chain.

numpy fuses nothing, so these tests give numpy's backend a ``fuse`` that runs a chain step
by step with numpy's functions (:class:`zerograd.testing.chains.StepByStep`). The bits
then must be eager's whenever the planner joined the right forwards and ran each chain
where its inputs hold the right values; the chains asked for show what was joined.
(zerograd-cupy's kernels are checked against the same chains in its own suite.)
"""

import contextlib
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zerograd.functions as F
from zerograd import Parameter, Variable, no_grad, static_graph
from zerograd.backends import backend_of
from zerograd.backends.chains import ARITY, Chain, Step
from zerograd.functions.arithmetic import Mul, Neg
from zerograd.testing.chains import FUNCTIONS, fuse_step_by_step


def test_the_reference_knows_every_op():
    assert set(FUNCTIONS) == set(ARITY)


@pytest.fixture
def fused(monkeypatch):
    """The chains numpy's backend was asked to fuse, as their step-by-step runners."""
    return fuse_step_by_step(monkeypatch, backend_of(np.zeros(1)))


def _bits(a):
    a = a.data if isinstance(a, Variable) else a
    return a.shape, str(a.dtype), a.tobytes()


def _replayed_with_eagers_bits(make, start, calls):
    """``make(w)``'s step, eager and under static_graph, on ``calls`` batches of ``start``'s
    shape and dtype: every value they return has the same bits. Returns the static one."""
    eager, static = make(Parameter(start.copy())), static_graph(make(Parameter(start)))
    for i in range(calls):
        x = np.random.default_rng(i).standard_normal(start.shape).astype(start.dtype)
        for got, want in zip(static(x), eager(x)):
            assert _bits(got) == _bits(want)
    return static


def test_numpy_fuses_nothing():
    chain = Chain(("x",), (Step("y", "neg", ("x",)), Step("z", "exp", ("y",))))
    assert backend_of(np.zeros(1)).fuse(chain, np.dtype("float64")) is None


def test_an_inference_chain_runs_as_one_call_with_eager_bits(fused):
    def f(x):
        with no_grad():
            x = Variable(x)
            return F.tanh(x * 0.5 + 1.0) - x

    step = static_graph(f)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.standard_normal((4, 3)).astype(np.float32)
        assert _bits(step(x)) == _bits(f(x))
    assert step.counts["replayed"] == 2
    (runner,) = fused
    assert runner.ops == ["mul", "add", "tanh", "sub"]
    assert len(runner.chain.inputs) == 3  # x (read twice, passed once) and the two constants
    assert runner.dtype == np.float32
    assert runner.runs == step.counts["replayed"]  # once per replay, never while tracing
    calls = re.findall(r"^ +s\d+ = k\d+\(", step.sources()[0], re.MULTILINE)
    assert len(calls) == 1  # the four operations' calls became one


def test_a_value_a_vjp_reads_stays_out_of_the_chain(fused):
    w = Parameter(np.linspace(-1.0, 1.0, 12).reshape(4, 3))
    w_eager = Parameter(w.data.copy())

    def make(w):
        def f(x):
            w.cleargrad()
            a = F.tanh(x * w)  # x * w is read by tanh only: joins it (tanh's vjp reads a)
            b = F.exp(-a)  # -a joins exp; exp's vjp reads b itself
            y = F.sum(b * a + 2.0)  # b and a are read by vjps: the product starts a chain
            y.backward()
            return y, w.grad

        return f

    eager, step = make(w_eager), static_graph(make(w))
    rng = np.random.default_rng(1)
    for _ in range(5):
        x = rng.standard_normal((4, 3))
        (ye, ge), (ys, gs) = eager(x), step(x)
        assert _bits(ys) == _bits(ye)
        assert _bits(gs) == _bits(ge)
    assert step.counts["replayed"] == 2
    forward, backward = fused[:3], fused[3:]
    assert sorted(r.ops for r in forward) == [["mul", "add"], ["mul", "tanh"], ["neg", "exp"]]
    # the vjps' own operations join too, around the values they read: the product's
    # gradient of b through exp's vjp (times b) and neg's; tanh's vjp (1 - a * a, times its
    # gradient, the sum of a's two) and then that of x * w (times x)
    assert [r.ops for r in backward] == [["mul", "mul", "neg"], ["mul", "sub", "mul", "mul"]]


def test_shapes_and_dtypes_that_differ_keep_their_calls(fused):
    def f(x, b, x32, h):
        with no_grad():
            x, x32, h = Variable(x), Variable(x32), Variable(h)
            broadcast = F.exp(x * b)  # b is (3,), neither x's shape nor 0-d
            mixed = F.tanh(h * 2.0)  # float16 * 2.0 is float16: joins
            promoted = F.tanh(x32 + h)  # float32 + float16 is float32: the add stays apart
            return broadcast, mixed, promoted

    step = static_graph(f)
    rng = np.random.default_rng(2)
    for _ in range(5):
        x = rng.standard_normal((4, 3))
        b = rng.standard_normal(3)
        x32, h = rng.standard_normal((2, 4, 3)).astype(np.float32)
        h = h.astype(np.float16)
        for got, want in zip(step(x, b, x32, h), f(x, b, x32, h)):
            assert _bits(got) == _bits(want)
    assert step.counts["replayed"] == 2
    assert [r.ops for r in fused] == [["mul", "tanh"]]
    assert fused[0].dtype == np.float16


_UNARY = {"neg": lambda a: -a, "exp": F.exp, "tanh": F.tanh, "sin": F.sin, "cos": F.cos}
_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
}
_programs = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(sorted(_UNARY)), st.integers(0, 99)),
        st.tuples(
            st.sampled_from(sorted(_BINARY)),
            st.integers(0, 99),
            st.one_of(st.integers(0, 99), st.sampled_from([0.5, -1.5, 3.0])),
        ),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(program=_programs, kept=st.sets(st.integers(0, 99), max_size=3), grad=st.booleans())
def test_any_elementwise_program_replays_eagers_bits_with_its_chains_fused(program, kept, grad):
    """Random programs over a parameter and an argument: each value an op of earlier values
    (picked modulo how many exist) or constants; some values returned, with or without a
    backward. Whatever the planner joins, the replay's bits are eager's."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        fused = fuse_step_by_step(monkeypatch, backend_of(np.zeros(1)))

        def make(w):
            def f(x):
                w.cleargrad()
                with no_grad() if not grad else contextlib.nullcontext():
                    values = [Variable(x), w]
                    for op, *args in program:
                        a = values[args[0] % len(values)]
                        if op in _UNARY:
                            values.append(_UNARY[op](a))
                        else:
                            b = args[1]
                            b = values[b % len(values)] if type(b) is int else b
                            values.append(_BINARY[op](a, b))
                    made = values[2:]  # what the ops made (returning x or w is no replay)
                    out = [made[k % len(made)] for k in sorted(kept)] + [made[-1]]
                    if grad:
                        F.sum(made[-1]).backward()
                        if w.grad is not None:
                            out.append(w.grad)
                return out

            return f

        start = np.linspace(0.3, 1.7, 6).reshape(2, 3)
        eager, static = make(Parameter(start.copy())), static_graph(make(Parameter(start)))
        for i in range(5):
            x = np.random.default_rng(i).uniform(0.5, 2.0, (2, 3))
            with np.errstate(all="ignore"):
                for got, want in zip(static(x), eager(x)):
                    assert _bits(got) == _bits(want)
        assert static.counts["replayed"] == 2
        assert all(r.runs == 2 for r in fused)


def test_the_same_operations_make_an_equal_chain_wherever_they_stand(fused):
    """Chains are named by position, not by the replay's slots: a backend that keeps one
    kernel per chain (CuPy) compiles this one once for both steps."""

    def first(x):
        with no_grad():
            x = Variable(x)
            return F.exp(-x) * 2.0

    def second(x, y):
        with no_grad():
            x, y = Variable(x), Variable(y)
            return y * 3.0, F.exp(-x) * 2.0  # the chain's slots come later here

    steps = static_graph(first), static_graph(second)
    x = np.linspace(-1.0, 1.0, 6)
    for _ in range(3):
        steps[0](x)
        steps[1](x, x)
    assert len(fused) == 2 and fused[0].ops == ["neg", "exp", "mul"]
    assert fused[0].chain == fused[1].chain and hash(fused[0].chain) == hash(fused[1].chain)
    assert fused[0].chain.inputs == ("x0", "x1")


def test_a_second_order_replay_fuses_inside_the_recorded_vjps_with_eagers_bits(fused):
    """With ``create_graph=True`` the vjps' own operations are recorded as forwards, so
    their elementwise runs (tanh's ``1 - y * y``) become chains too."""

    def make(w):
        def step(x):
            w.cleargrad()
            y = F.sum(F.tanh(x * w) * 0.5 + F.exp(-w))
            y.backward(create_graph=True)
            g = w.grad
            w.cleargrad()
            z = F.sum(g * g)
            z.backward()
            return y, z, w.grad

        return step

    static = _replayed_with_eagers_bits(make, np.linspace(-1.0, 1.0, 6).reshape(2, 3), 6)
    assert static.counts["replayed"] == 3
    chains = [r.ops for r in fused]
    assert ["mul", "tanh"] in chains and ["neg", "exp"] in chains  # the forward's
    assert ["mul", "sub"] in chains  # 1 - y * y, inside tanh's recorded vjp


class _MulOfSquares(Mul):
    """A subclass whose kernel computes something else than its parent's."""

    op = staticmethod(lambda a, b: a * a * b)


def test_a_subclass_is_not_fused_as_its_parent(fused):
    def f(x):
        with no_grad():
            x = Variable(x)
            return F.tanh(_MulOfSquares()(x, x) + 1.0)  # the product joins nothing

    step = static_graph(f)
    x = np.linspace(-1.0, 1.0, 6)
    for _ in range(5):
        assert _bits(step(x)) == _bits(f(x))
    assert step.counts["replayed"] == 2
    assert [r.ops for r in fused] == [["add", "tanh"]]


def _tanh_step(w):
    def step(x):
        w.cleargrad()
        y = F.sum(F.tanh(x * w) * 0.5)
        y.backward()
        return y, w.grad

    return step


_VJP_CALL = re.compile(r"= k\d+\(k\d+, \(")  # a vjp's line: vjp(ops, (xs...), y, gy)


@pytest.mark.parametrize("fuses", [True, False], ids=["fusing backend", "numpy"])
def test_a_first_order_replay_runs_elementwise_vjps_as_their_operations(fuses, monkeypatch):
    """The vjps of elementwise functions are recorded as the Functions they apply (as a
    backward with create_graph would), so a fusing backend joins them with each other;
    without fusion they are plain calls. Either way the bits are eager's."""
    fused = fuse_step_by_step(monkeypatch, backend_of(np.zeros(1))) if fuses else []
    start = np.linspace(-1.0, 1.0, 12).reshape(4, 3).astype(np.float32)
    static = _replayed_with_eagers_bits(_tanh_step, start, 5)
    assert static.counts["replayed"] == 2
    source = static.sources()[0]
    assert len(_VJP_CALL.findall(source)) == 1  # sum's vjp (a broadcast); none of the others
    if fuses:
        # the forward's x * w joins tanh; the backward's gy * 0.5, tanh's 1 - y * y times
        # the gradient, and x * w's gradient of w (times x) make one chain
        assert [r.ops for r in fused] == [["mul", "tanh"], ["mul", "mul", "sub", "mul", "mul"]]
        assert all(r.runs == 2 for r in fused)


def test_a_vjp_that_differs_on_variables_stays_one_step(fused):
    """A vjp is expanded only where its run on Variables gives what its run on arrays gave,
    bit for bit; one that does not (here a wrong create_graph derivative) is called as
    it is, and the replay keeps eager's first-order bits."""

    class OddNeg(Neg):
        fuses_as = "neg"

        def vjp(self, xp, xs, y, gy):
            return -gy * 2.0 if xp.graph else -gy

    def make(w):
        def step(x):
            w.cleargrad()
            y = F.sum(OddNeg()(F.tanh(x * w)))
            y.backward()
            return y, w.grad

        return step

    static = _replayed_with_eagers_bits(make, np.linspace(-1.0, 1.0, 6).reshape(2, 3), 5)
    assert static.counts["replayed"] == 2
    assert len(_VJP_CALL.findall(static.sources()[0])) == 2  # sum's and OddNeg's
