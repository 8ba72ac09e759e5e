"""Each nn function writes its derivative once, as ``vjp``: both engines run that one body.

check_backward compares ``backward()`` (the vjp on arrays) with ``backward(create_graph=True)``
(the vjp on Variables) and both with numerical gradients; here for every fused nn function,
first and second order, float32 and float64.
"""

import ast
import inspect
import sys
import textwrap

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Function, Variable
from zerograd.backends import get_array_module
from zerograd.func.linearize import PASS, Tap
from zerograd.function import OWN_PACKAGES
from zerograd.functions import (
    Add,
    BroadcastTo,
    Clip,
    Concatenate,
    Cos,
    Exp,
    GetItem,
    GetItemGrad,
    Log,
    MatMul,
    Mean,
    Mul,
    Neg,
    Pow,
    Reshape,
    Sin,
    Sqrt,
    Square,
    Stack,
    Sub,
    Sum,
    SumTo,
    Tanh,
    Transpose,
)
from zerograd.functions.arithmetic import ValueMask
from zerograd.functions.reduction import DivideByCount
from zerograd.namespaces import _Copy, array_ops_by_type
from zerograd.testing import check_backward
from zerograd_nn.finite import _Finite
from zerograd_nn.functional.activation import LeakyReLU, LogSoftmax, ReLU, Sigmoid, Softmax
from zerograd_nn.functional.arrays import AsFloat, Cast
from zerograd_nn.functional.conv import Col2im, Conv2d, Conv2DGradW, Deconv2d, Im2col
from zerograd_nn.functional.linear import Linear
from zerograd_nn.functional.loss import (
    Accuracy,
    MeanSquaredError,
    SoftmaxCrossEntropy,
)
from zerograd_nn.functional.normalization import RunningStatistics, _Dropout, _Standardized
from zerograd_nn.functional.pooling import (
    AveragePooling,
    Pooling,
    Pooling2DGrad,
    Pooling2DWithIndexes,
    WinnerPicks,
)


def _spread(rng, shape):
    """Values at least 0.1 apart and away from 0: no kink of relu or max pooling is crossed
    by a finite-difference step, in float32 too."""
    v = (rng.permutation(int(np.prod(shape))) - int(np.prod(shape)) // 2 + 0.5) * 0.1
    return v.reshape(shape)


def _cases(rng):
    t = np.array([1, 0, 3])
    return {
        "sigmoid": (F.sigmoid, [rng.standard_normal((3, 4))]),
        "relu": (F.relu, [_spread(rng, (3, 4))]),
        "leaky_relu": (lambda v: F.leaky_relu(v, 0.3), [_spread(rng, (3, 4))]),
        "softmax": (lambda v: F.softmax(v, 0), [rng.standard_normal((3, 4))]),
        "log_softmax": (lambda v: F.log_softmax(v, -1), [rng.standard_normal((3, 4))]),
        "linear": (F.linear, [rng.standard_normal(s) for s in ((3, 4), (4, 2), (2,))]),
        "linear 3-d x": (F.linear, [rng.standard_normal(s) for s in ((2, 3, 4), (4, 2))]),
        "mean_squared_error": (F.mean_squared_error, [rng.standard_normal((3, 2)) for _ in "ab"]),
        "softmax_cross_entropy": (
            lambda v, t=t: F.softmax_cross_entropy(v, t),
            [rng.standard_normal((3, 4))],
        ),
        "conv2d": (
            lambda x, W, b: F.conv2d(x, W, b, stride=2, pad=1),
            [rng.standard_normal(s) for s in ((2, 2, 5, 4), (3, 2, 3, 2), (3,))],
        ),
        "deconv2d": (
            lambda x, W, b: F.deconv2d(x, W, b, stride=(2, 1), pad=(1, 0)),
            [rng.standard_normal(s) for s in ((1, 2, 3, 3), (2, 3, 3, 2), (3,))],
        ),
        "Conv2DGradW": (  # the weight gradient, bilinear in (x, gy)
            lambda x, gy: F.Conv2DGradW((3, 2), (2, 1), (1, 0))(x, gy),
            [rng.standard_normal(s) for s in ((2, 2, 5, 4), (2, 3, 3, 3))],
        ),
        "im2col": (
            lambda v: F.im2col(v, (3, 2), (2, 1), (1, 0)),
            [rng.standard_normal((1, 2, 5, 4))],
        ),
        "col2im": (
            lambda v: F.col2im(v, (1, 2, 5, 4), (3, 2), (2, 1), (1, 0), to_matrix=False),
            [rng.standard_normal((1, 2, 3, 2, 3, 3))],
        ),
        "pooling": (lambda v: F.pooling(v, 3, 2, 1), [_spread(rng, (1, 2, 5, 4))]),
        "pooling tiled": (lambda v: F.pooling(v, 2, 2), [_spread(rng, (2, 2, 4, 6))]),
        "average_pooling": (
            lambda v: F.average_pooling(v, (2, 3), (1, 2), (1, 0)),
            [rng.standard_normal((1, 2, 4, 5))],
        ),
    }


NAMES = list(_cases(np.random.default_rng(0)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("name", NAMES)
def test_vjp_matches_numerical_gradients_in_both_engines(arr, name, order, dtype):
    if name == "softmax_cross_entropy":  # the labels must live on the backend under test
        f = lambda v: F.softmax_cross_entropy(v, arr([1, 0, 3], "int64"))  # noqa: E731
        inputs = [np.random.default_rng(1).standard_normal((3, 4))]
    else:
        f, inputs = _cases(np.random.default_rng(1))[name]
    check_backward(f, *[arr(x, dtype) for x in inputs], order=order)


def _nn_functions():
    return [
        obj
        for _, obj in sorted(vars(F).items())
        if inspect.isclass(obj)
        and issubclass(obj, Function)
        and obj.__module__.startswith("zerograd_nn.")
    ]


@pytest.mark.parametrize("cls", _nn_functions(), ids=lambda c: c.__name__)
def test_each_nn_function_writes_its_derivative_once_as_a_vjp(cls):
    assert "vjp" in vars(cls), f"{cls.__name__} has no vjp of its own"
    assert "backward" not in vars(cls), f"{cls.__name__} keeps a second derivative (backward)"


@pytest.mark.parametrize(
    "f",
    [F.sigmoid, F.leaky_relu, F.softmax, F.log_softmax, lambda v: F.mean_squared_error(v, v * 0)],
    ids=["sigmoid", "leaky_relu", "softmax", "log_softmax", "mean_squared_error"],
)
@pytest.mark.parametrize("create_graph", [False, True])
def test_integer_data_has_the_gradient_of_its_float_value(arr, to_np, f, create_graph):
    ints = [[-2, 0, 1], [3, -1, 2]]
    xi, xf = Variable(arr(ints, "int64")), Variable(arr(ints, "float64"))
    for x in (xi, xf):
        F.sum(f(x) * arr([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])).backward(create_graph=create_graph)
    np.testing.assert_allclose(to_np(xi.grad), to_np(xf.grad), rtol=1e-12)


def test_integer_scores_have_the_gradient_of_their_float_value(arr, to_np):
    t = arr([2, 0], "int64")
    xi = Variable(arr([[1, 0, 3], [2, 2, -1]], "int64"))
    xf = Variable(arr([[1, 0, 3], [2, 2, -1]], "float64"))
    for x in (xi, xf):
        F.softmax_cross_entropy(x, t).backward()
    np.testing.assert_allclose(to_np(xi.grad), to_np(xf.grad), rtol=1e-12)


def test_dezero_style_backward_call_runs_the_vjp_on_variables(arr, to_np):
    f = F.Sigmoid()
    x = Variable(arr([0.0, 1.0]))
    y = f(x)
    gx = f.backward(Variable(arr([1.0, 2.0])))
    assert isinstance(gx, Variable) and gx.creator is not None  # differentiable again
    s = to_np(y)
    np.testing.assert_allclose(to_np(gx), np.array([1.0, 2.0]) * s * (1 - s), rtol=1e-12)


@pytest.mark.parametrize(
    "f", [F.sigmoid, F.relu, F.leaky_relu], ids=["sigmoid", "relu", "leaky_relu"]
)
@pytest.mark.parametrize("create_graph", [False, True])
def test_0d_float32_gradients_stay_float32(arr, backend, f, create_graph):
    """numpy 1.x computes a 0-d float32 with a Python float in float64."""
    x = Variable(arr(0.75, "float32"))
    f(x).backward(create_graph=create_graph)
    assert backend.dtype_kind(x.grad.dtype) == "f" and x.grad.dtype == x.dtype


# -- forwards add biases into their own fresh results ----------------------------------------


def test_bias_of_another_dtype_is_promoted_not_written_into_the_result(rand, to_np):
    x, W = rand(3, 4, dtype="float32"), rand(4, 2, dtype="float32", seed=1)
    b = rand(2, dtype="float64", seed=2)
    y = F.linear(x, W, b)
    assert to_np(y).dtype == np.float64  # float32 @ float32 + float64, as numpy promotes
    expected = to_np(x).astype("float64") @ to_np(W).astype("float64") + to_np(b)
    np.testing.assert_allclose(to_np(y), expected, rtol=1e-6)
    xc, Wc = rand(1, 2, 4, 4, dtype="float32"), rand(3, 2, 3, 3, dtype="float32", seed=1)
    yc = F.conv2d(xc, Wc, rand(3, dtype="float64", seed=2), pad=1)
    assert to_np(yc).dtype == np.float64


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("i, o", [(0, 4), (3, 0)], ids=["I=0", "O=0"])
def test_linear_of_empty_features_on_3d_x_differentiates(i, o, create_graph, rand, to_np):
    """x (N, T, I) with I or O of 0: the weight gradient sums over N * T rows, never over
    a -1 that an empty array cannot resolve (backward raised a reshape error)."""
    x, W, b = Variable(rand(2, 3, i)), Variable(rand(i, o, seed=1)), Variable(rand(o, seed=2))
    y = F.linear(x, W, b)
    np.testing.assert_allclose(to_np(y), np.broadcast_to(to_np(b), (2, 3, o)))
    F.sum(y * y).backward(create_graph=create_graph)
    # dL/dy = 2y = 2b everywhere: x and W get zero gradients of their own shapes
    np.testing.assert_array_equal(to_np(x.grad), np.zeros((2, 3, i)))
    np.testing.assert_array_equal(to_np(W.grad), np.zeros((i, o)))
    np.testing.assert_allclose(to_np(b.grad), 2 * 6 * to_np(b))


def test_inputs_and_saved_state_are_not_written_by_forward_or_backward(rand, to_np):
    x = Variable(rand(2, 2, 4, 4))
    W, b = Variable(rand(3, 2, 3, 3, seed=1)), Variable(rand(3, seed=2))
    before = [to_np(v).copy() for v in (x, W, b)]
    h = F.pooling(F.conv2d(x, W, b, pad=1), 2, 2)
    y = F.sum(F.linear(F.reshape(h, (2, -1)), rand(12, 2, seed=3), rand(2, seed=4)))
    y.backward()
    first = to_np(x.grad).copy()
    x.cleargrad()
    y.backward()  # the same graph again: the pooling mask and the activations are intact
    np.testing.assert_array_equal(to_np(x.grad), first)
    for v, old in zip((x, W, b), before):
        np.testing.assert_array_equal(to_np(v), old)


# -- vjp_reads_inputs / vjp_reads_outputs = False: a replay passes None and frees them ---------

_SHAPES = {
    "x": (3, 4),
    "y": (3, 2),
    "w": (4, 2),
    "b": (2,),
    "img": (2, 1, 5, 5),
    "k": (3, 1, 3, 3),
    "kb": (3,),
    "pos": (3, 4),  # positive: log and sqrt
    "cols": (2, 1, 3, 3, 3, 3),  # im2col's patches of "img" (3x3 windows, stride 1)
    "sel": (2,),  # x[0:2, 1] of an "x"
    "gyc": (2, 3, 3, 3),  # the gradient of "img" convolved with "k" (stride 1, no pad)
    "pooled": (2, 1, 2, 2),  # "img" max-pooled by 2x2 windows, stride 2
}


def _passing_tap():
    tap = Tap()
    tap.state = PASS  # as after a transform: the gradient goes on to the input
    return tap


def _pooled(rand):
    """A max pooling that has run on an "img" (it holds its winners)."""
    pool = Pooling(2, 2, 0)
    pool(Variable(rand(*_SHAPES["img"], seed=7)))
    return pool


_DECLARED = {  # every Function that says its vjp reads less: a maker and its inputs' shapes
    "Exp": (Exp, "x"),
    "Tanh": (Tanh, "x"),
    "Sigmoid": (Sigmoid, "x"),
    "ReLU": (ReLU, "x"),
    "Softmax": (Softmax, "x"),
    "LogSoftmax": (LogSoftmax, "x"),
    "Add": (Add, "x", "x"),
    "Sub": (Sub, "y", "b"),  # broadcasting: the vjp sums the gradient back to (2,)
    "Mul": (Mul, "x", "x"),
    "Neg": (Neg, "x"),
    "MatMul": (MatMul, "x", "w"),
    "Reshape": (lambda: Reshape((4, 3)), "x"),
    "Sum": (lambda: Sum(1, False), "x"),
    "Mean": (lambda: Mean(0, True), "x"),
    "DivideByCount": (lambda: DivideByCount(3), "x"),
    "Linear": (Linear, "x", "w", "b"),
    "Conv2d": (lambda: Conv2d(1, 1), "img", "k", "kb"),
    "Pooling": (lambda: Pooling(2, 2, 0), "img"),
    "SoftmaxCrossEntropy": (SoftmaxCrossEntropy, "x", "labels"),
    # reading inputs only: the graph keeps no output array for these
    "Log": (Log, "pos"),
    "Sin": (Sin, "x"),
    "Cos": (Cos, "x"),
    "Square": (Square, "x"),
    "Pow": (lambda: Pow(3.0), "x"),
    "Clip": (lambda: Clip(-0.5, 0.5), "x"),
    "GetItem": (lambda: GetItem((slice(0, 2), 1)), "x"),
    "Concatenate": (lambda: Concatenate(0), "x", "x"),
    "Stack": (lambda: Stack(1), "x", "x"),
    "LeakyReLU": (lambda: LeakyReLU(0.2), "x"),
    "AveragePooling": (lambda: AveragePooling(2, 2, 0), "img"),
    # reading neither (shapes saved, or the output only)
    "Sqrt": (Sqrt, "pos"),
    "BroadcastTo": (lambda: BroadcastTo((2, 3, 4)), "x"),
    "SumTo": (lambda: SumTo((1, 4)), "x"),
    "Transpose": (lambda: Transpose((1, 0)), "x"),
    "AsFloat": (AsFloat, "x"),
    "Cast": (lambda rand: Cast(get_array_module(rand(1)).float32), "x"),
    "Im2col": (lambda: Im2col((3, 3), (1, 1), (0, 0), False), "img"),
    "Col2im": (lambda: Col2im((2, 1, 5, 5), (3, 3), (1, 1), (0, 0), False), "cols"),
    "MeanSquaredError": (MeanSquaredError, "x", "x"),
    "ValueMask": (lambda: ValueMask(lambda a, c: a > c, np.float64, 0.0), "x"),
    "Accuracy": (Accuracy, "x", "labels"),
    "WinnerPicks": (lambda: WinnerPicks(0), "x"),
    "_Copy": (_Copy, "x"),
    "_Dropout": (lambda: _Dropout(0.3), "x"),
    "_Finite": (_Finite, "x"),
    # the internal ones: gradients of gradients, and functions of no gradient
    "GetItemGrad": (lambda: GetItemGrad((slice(0, 2), 1), (3, 4)), "sel"),
    "Tap": (_passing_tap, "x"),
    "Conv2DGradW": (lambda: Conv2DGradW((3, 3), (1, 1), (0, 0)), "img", "gyc"),
    "Deconv2d": (lambda: Deconv2d(1, 0), "gyc", "k"),
    "Pooling2DGrad": (lambda rand: Pooling2DGrad(_pooled(rand)), "pooled"),
    "Pooling2DWithIndexes": (lambda rand: Pooling2DWithIndexes(_pooled(rand)), "img"),
    "RunningStatistics": (
        lambda rand: RunningStatistics(rand(2, seed=5), rand(2, seed=6) ** 2, 0.9, 1.0),
        "b",
        "b",
    ),
    "_Standardized": (
        lambda rand: _Standardized(rand(4, seed=5), rand(4, seed=6) ** 2, 1e-5, (1, 4)),
        "x",
    ),
}


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_every_function_whose_vjp_reads_less_is_checked_here():
    declared = {
        c.__name__
        for c in _subclasses(Function)
        if not (c.vjp_reads_inputs and c.vjp_reads_outputs)
        and c._vjp  # a base that only hands its flags down (pooling's _ByWinners) is not
        and c.__module__.startswith(("zerograd.", "zerograd_nn."))
    }
    assert declared == set(_DECLARED)


@pytest.mark.parametrize("name", sorted(_DECLARED))
def test_a_vjp_gives_the_same_gradient_without_what_it_says_it_does_not_read(
    name, rand, backend, to_np
):
    """A static-graph replay passes None for what a vjp does not read and frees those
    arrays early: the vjp must not need them (``xs``, ``self.inputs``' data, ``y``)."""
    make, *shapes = _DECLARED[name]
    labels = backend.from_numpy(np.array([1, 0, 3]))

    def value(s, i):
        if s == "labels":
            return labels
        a = rand(*_SHAPES[s], seed=i)
        return a * a + 0.5 if s == "pos" else a

    xs = [Variable(value(s, i)) for i, s in enumerate(shapes)]
    fn = make(rand) if "rand" in inspect.signature(make).parameters else make()
    y = fn(*xs)
    gy = rand(*y.shape, seed=9)
    ops = array_ops_by_type[type(gy)]
    want = fn.vjp(ops, tuple(x.data for x in xs), y.data, gy)
    if not fn.vjp_reads_inputs:
        for x in xs:
            x.data = None  # nothing of the inputs is left to read
    got = fn.vjp(
        ops,
        tuple(x.data for x in xs),
        y.data if fn.vjp_reads_outputs else None,
        gy,
    )
    pairs = zip(want, got) if isinstance(want, tuple) else [(want, got)]
    for w, g in pairs:
        assert (w is None) == (g is None)
        if w is not None:
            np.testing.assert_array_equal(to_np(g), to_np(w))


# vjps that read no output but still keep it (each needs a maker in _DECLARED first): none
_KEEPS_AN_UNREAD_OUTPUT: set[str] = set()


def _names_in_vjp(cls):
    """The parameter names of ``cls.vjp`` and the names and attributes its body reads."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls.vjp))).body[0]
    params = [a.arg for a in tree.args.args]  # self, xp, xs, y, gy
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    return params, names


def test_the_output_flag_says_whether_the_vjp_reads_its_output():
    """A vjp that names ``y`` (or ``self.outputs``) must say so; one that never does keeps no
    output array, apart from the listed ones."""
    wrong, missing = [], []
    for c in _subclasses(Function):
        if "vjp" not in c.__dict__ or not c.__module__.startswith(("zerograd.", "zerograd_nn.")):
            continue
        if getattr(sys.modules[c.__module__], c.__name__, None) is not c:
            continue  # a test's own class (its __module__ borrowed), not a built-in
        params, names = _names_in_vjp(c)
        reads_y = params[3] in names or bool({"outputs", "output_variables", "_ys"} & names)
        if reads_y and not c.vjp_reads_outputs:
            wrong.append(c.__name__)  # a replay would hand it None
        if not reads_y and c.vjp_reads_outputs and c.__name__ not in _KEEPS_AN_UNREAD_OUTPUT:
            missing.append(c.__name__)
    assert wrong == [] and missing == []


def _touches_inputs(node) -> bool:
    return any(
        isinstance(n, ast.Attribute)
        and n.attr in ("inputs", "_in")
        and isinstance(n.value, ast.Name)
        and n.value.id == "self"
        for n in ast.walk(node)
    )


def _input_values_read(source: str) -> list[str]:
    """``.data`` read of ``self.inputs``/``self._in`` (or of a name bound from them) in a vjp."""
    tree = ast.parse(textwrap.dedent(source)).body[0]
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _touches_inputs(node.value):
            targets = node.targets
        elif isinstance(node, (ast.For, ast.comprehension)) and _touches_inputs(node.iter):
            targets = [node.target]
        else:
            continue
        bound |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "data"
        and (
            _touches_inputs(node.value)
            or {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)} & bound
        )
    ]


def test_the_audit_finds_a_value_read_through_the_inputs():
    def vjp(self, xp, xs, y, gy):
        a = self.inputs[0].data
        inputs = self.inputs
        b = [x.data for x in self._in]
        return gy * a * inputs[1].data * b[0] * xs[0].data

    found = _input_values_read(inspect.getsource(vjp))
    assert found == ["self.inputs[0].data", "x.data", "inputs[1].data"]


def test_no_built_in_vjp_reads_an_input_value_through_self_inputs():
    """A replay gives zerograd's own functions (``Function.own``, ``OWN_PACKAGES``) stand-in
    inputs holding shapes and dtypes only: their vjps read values from ``xs``, never
    ``self.inputs``."""
    assert OWN_PACKAGES == {"zerograd", "zerograd_nn"}
    found = {}
    for c in _subclasses(Function):
        if "vjp" not in c.__dict__ or not c.own:
            continue
        if getattr(sys.modules[c.__module__], c.__name__, None) is not c:
            continue  # a test's own class
        reads = _input_values_read(inspect.getsource(c.vjp))
        if reads:
            found[c.__name__] = reads
    assert found == {}
