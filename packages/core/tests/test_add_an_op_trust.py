"""Adding an op as docs/add-an-op.md and the Function tutorial teach it, adversarially.

The mistakes a newcomer makes in their own Function (book-style ``backward``, a ``vjp``
with its flags, ``op(...)``, a kernel for static-graph replays, the gradient checks of
``zerograd.testing``): each one is an error that names the Function and what to do, with
nothing changed, or works; values are checked against numerical derivatives.
"""

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Function, StaticGraphWarning, Variable, no_grad, static_graph
from zerograd.backends import backend_of, get_array_module
from zerograd.testing import check_backward
from zerograd.testing.chains import fuse_step_by_step


def _numerical(f, x, eps=1e-6):
    """Central differences of ``sum(f(x))`` for a float64 array ``x``."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        a, b = x.copy(), x.copy()
        a[i] += eps
        b[i] -= eps
        g[i] = (np.sum(f(a)) - np.sum(f(b))) / (2 * eps)
    return g


class _Scale(Function):
    """A vjp-style op with a setting, the kind one is tempted to make once and reuse."""

    def __init__(self, c):
        self.c = c

    def forward(self, x):
        return x * self.c

    def vjp(self, xp, xs, y, gy):
        return gy * self.c


def test_a_vjp_function_object_reused_then_joined_by_a_lean_op_is_refused_not_misrouted():
    # add keeps only its inputs' creators; both edges were the one reused _Scale, whose
    # latest call is y2's, so x2 got both gradients (6) and x1 none, silently
    f = _Scale(3.0)
    x1, x2 = Variable(np.array([1.0, 2.0])), Variable(np.array([5.0, 7.0]))
    y1 = f(x1)
    y2 = f(x2)
    z = y1 + y2
    with pytest.raises(RuntimeError, match=r"the _Scale that made a variable .* called again"):
        z.backward()
    assert x1.grad is None and x2.grad is None and z.grad is None
    # one object per call: right
    x1, x2 = Variable(np.array([1.0, 2.0])), Variable(np.array([5.0, 7.0]))
    (_Scale(3.0)(x1) + _Scale(3.0)(x2)).backward()
    np.testing.assert_array_equal(x1.grad.data, [3.0, 3.0])
    np.testing.assert_array_equal(x2.grad.data, [3.0, 3.0])


class _BookSquareOnArrays(Function):
    """The book's step 9 Square: a backward on arrays, not Variables."""

    def forward(self, x):
        return x**2

    def backward(self, gy):
        (x,) = self.inputs
        return 2 * x.data * gy.data


class _VjpSquareOnArrays(Function):
    """A vjp that steps off its namespace to numpy arrays under create_graph."""

    def forward(self, x):
        return x**2

    def vjp(self, xp, xs, y, gy):
        (x,) = xs
        if isinstance(x, Variable):
            return 2 * x.data * gy.data
        return 2 * x * gy


@pytest.mark.parametrize("cls", [_BookSquareOnArrays, _VjpSquareOnArrays])
def test_a_gradient_computed_on_arrays_under_create_graph_refuses_a_second_derivative(cls):
    # y = x**2 + x**3: the second derivative is 2 + 6x; the array part of the first
    # derivative (2x) has no graph, so differentiating it gave 6x, silently
    x = Variable(np.array([0.5, -1.5]))
    y = (cls()(x) + x**3).sum()
    y.backward(create_graph=True)
    gx = x.grad
    assert isinstance(gx, Variable)  # the first derivative is right, and a Variable
    np.testing.assert_allclose(gx.data, 2 * x.data + 3 * x.data**2)
    x.cleargrad()
    with pytest.raises(RuntimeError, match=rf"{cls.__name__}\.\w+ computed its gradient on"):
        gx.sum().backward()
    assert x.grad is None
    # first order is as before
    x2 = Variable(np.array([0.5, -1.5]))
    cls()(x2).sum().backward()
    np.testing.assert_array_equal(x2.grad.data, [1.0, -3.0])


def test_a_vjp_returning_an_array_under_create_graph_still_gives_a_variable_grad():
    x = Variable(np.array([0.5, -1.5]))
    _VjpSquareOnArrays()(x).sum().backward(create_graph=True)
    assert isinstance(x.grad, Variable)  # it was the bare numpy array
    np.testing.assert_array_equal(x.grad.data, [1.0, -3.0])


class _Returns(Function):
    """A forward that returns what it was given to return."""

    def __init__(self, what):
        self.what = what

    def forward(self, x):
        return self.what

    def backward(self, gy):
        return gy


@pytest.mark.parametrize(
    ("what", "words"),
    [
        ("abc", "a str"),
        ({"y": 1.0}, "a dict"),
        (object(), "an object"),
        ([np.ones(2), np.ones(2)], "a list: return a tuple"),
        ((np.ones(2), "abc"), "a str"),
        ((np.ones(2), [1.0, 2.0]), "a list: return a tuple"),
    ],
)
def test_a_forward_returning_no_array_names_the_function(what, words):
    # a str became a Variable of a str array, an object or a dict one of an object array,
    # and a list (meant as two outputs, which DeZero refuses) one stacked output
    x = Variable(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"_Returns\.forward returned .*" + words):
        _Returns(what)(x)
    assert x.creator is None and x.grad is None


@pytest.mark.parametrize(
    ("what", "dtype"), [(3.0, np.float64), (np.float32(3.0), np.float32), (True, np.bool_)]
)
def test_a_forward_returning_a_number_gives_a_0d_array(what, dtype):
    x = Variable(np.array([1.0, 2.0], np.float32))
    y = _Returns(what)(x)
    assert type(y.data) is np.ndarray and y.data.shape == () and y.data.dtype == dtype


class _SumNoInputs(Function):
    """Promises its vjp reads no input value, then reads the input's shape from xs."""

    vjp_reads_inputs = False

    def forward(self, x):
        return x.sum()

    def vjp(self, xp, xs, y, gy):
        return xp.broadcast_to(gy, xs[0].shape)  # should be self.ctx, saved by forward


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_vjp_reading_the_shape_it_promised_not_to_read_names_the_flag(create_graph):
    x = Variable(np.array([1.0, 2.0]))
    y = _SumNoInputs()(F.exp(x))
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'shape'") as info:
        y.backward(create_graph=create_graph)
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "_SumNoInputs sets vjp_reads_inputs = False, so its xs are None" in notes
    assert x.grad is None and y.grad is None


def _tripled(x):
    return x * 3


def _doubled(x):
    return x * 2


def _over_one(x):
    return x * (x > 1)


class _KernelNotForward(Function):
    """A kernel that computes something else than forward (x * 3 for x * 2)."""

    def forward(self, x):
        return x * 2

    def kernel(self, x):
        return _tripled

    def vjp(self, xp, xs, y, gy):
        return gy * 2


class _MaskOnSelf(Function):
    """A forward that writes its mask on self (allowed) and gives a kernel (which cannot)."""

    def forward(self, x):
        self.mask = x > 1
        return x * self.mask

    def kernel(self, x):
        return _over_one

    def vjp(self, xp, xs, y, gy):
        return gy * self.mask


def _static_run(cls, batches):
    """(value, w's gradient) of ``sum(cls()(x * w))`` per batch, eager and replayed."""
    out = {}
    for static in (False, True):
        w = Variable(np.array([1.0, 2.0]))

        def step(x, w=w):
            w.cleargrad()
            y = cls()(x * w).sum()
            y.backward()
            return y

        if static:
            step = static_graph(step)
        out[static] = [(float(step(np.array(x)).data), w.grad.data.tolist()) for x in batches]
    return out[False], out[True], step


def test_a_kernel_that_is_not_forward_makes_the_step_eager_with_a_warning_naming_it():
    batches = [[1.0, float(i)] for i in range(6)]
    with pytest.warns(StaticGraphWarning, match=r"_KernelNotForward\.kernel"):
        eager, replayed, step = _static_run(_KernelNotForward, batches)
    assert replayed == eager  # the replays used x * 3: 21.0 where eager gives 14.0
    assert step.counts["replayed"] == 0


def test_a_kernel_of_a_forward_that_writes_on_self_is_not_used_by_replays():
    # both recordings saw the mask [True, False]; a replay kept it for later batches
    batches = [[1.0, 1.0], [2.0, 0.0], [3.0, 0.0], [0.0, 3.0], [0.1, 0.1], [5.0, 0.0]]
    eager, replayed, step = _static_run(_MaskOnSelf, batches)
    assert replayed == eager
    assert step.counts["replayed"] > 0


@pytest.mark.parametrize(
    ("op", "words"),
    [("bogus", "is no elementwise op"), ("mul", "takes 2 operands, but forward takes 1")],
)
def test_a_fuses_as_that_cannot_be_is_refused_when_the_class_is_defined(op, words):
    with pytest.raises(ValueError, match=rf"_Fused\.fuses_as = '{op}' {words}"):

        class _Fused(Function):
            fuses_as = op

            def forward(self, x):
                return x * 2

            def kernel(self, x):
                return _doubled


class _TanhAsExp(Function):
    """Declares fuses_as = "exp" for a tanh kernel: a fused chain would compute exp."""

    fuses_as = "exp"

    def forward(self, x):
        return np.tanh(x)

    def kernel(self, x):
        return np.tanh

    def vjp(self, xp, xs, y, gy):
        return gy * (1 - y * y)


def test_a_fuses_as_naming_another_op_than_the_kernels_is_never_fused(monkeypatch):
    fused = fuse_step_by_step(monkeypatch, backend_of(np.zeros(1)))
    w = Variable(np.array([0.5, 1.0]))

    def f(x):
        with no_grad():
            return F.exp(_TanhAsExp()(x * w) * 2.0)

    g = static_graph(f)
    with pytest.warns(StaticGraphWarning, match=r"_TanhAsExp\.fuses_as = 'exp', but its"):
        for i in range(5):
            x = np.array([0.1 * i, 1.0])
            np.testing.assert_array_equal(g(x).data, f(x).data)  # a chain computed exp
    assert fused == []


class _AddsOneInPlace(Function):
    """A forward that writes into its input (x += 1): its derivative is right."""

    def forward(self, x):
        x += 1
        return x * 2

    def vjp(self, xp, xs, y, gy):
        return gy * 2


def test_check_backward_catches_a_forward_that_changes_its_input():
    x = np.array([1.0, 2.0])
    with pytest.raises(AssertionError, match=r"f changed input 0 in place .*new array"):
        check_backward(lambda v: _AddsOneInPlace()(v), x)


class _NoGradForW(Function):
    def forward(self, x, w):
        return x * w

    def vjp(self, xp, xs, y, gy):
        x, w = xs
        return gy * w, None  # w's gradient forgotten


def test_check_backward_says_an_input_got_no_gradient():
    with pytest.raises(AssertionError, match=r"input 1 .* got no gradient \(None\)"):
        check_backward(lambda a, b: _NoGradForW()(a, b), np.array([1.0, 2.0]), np.array([3.0, 4.0]))


def test_check_backward_passes_the_guides_softplus_in_float32_and_float64():
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        x = (rng.standard_normal((3, 4)) * 3).astype(dtype)
        for order in (1, 2):
            check_backward(lambda v: _Softplus()(v), x, order=order)
    x = rng.standard_normal(5) * 3
    np.testing.assert_allclose(
        _numerical(lambda a: np.logaddexp(0, a), x), 1 / (1 + np.exp(-x)), rtol=1e-6
    )


class _Softplus(Function):
    """docs/add-an-op.md's op, as written there."""

    vjp_reads_outputs = False

    def forward(self, x):
        xp = get_array_module(x)
        return xp.maximum(x, 0) + xp.log(1 + xp.exp(-abs(x)))

    def vjp(self, xp, xs, y, gy):
        (x,) = xs
        return gy / (1 + xp.exp(-x))


class _ScaledSquareOff(Function):
    """``a * b**2`` whose gradient for ``b`` is off by the factor ``1 + eps``."""

    def __init__(self, eps):
        self.eps = eps

    def forward(self, a, b):
        return a * b**2

    def vjp(self, xp, xs, y, gy):
        a, b = xs
        return gy * b**2, gy * 2 * a * b * (1 + self.eps)


def test_check_backward_names_the_input_and_the_largest_difference():
    """docs/add-an-op.md: check_backward raises an AssertionError naming the input and the
    largest difference."""
    a, b = np.array([1.5, -0.5, 2.0]), np.array([0.3, -1.2, 2.0])
    with pytest.raises(AssertionError) as info:
        check_backward(lambda u, v: _ScaledSquareOff(0.03)(u, v), a, b)
    text = str(info.value)
    head, arrays = text.split(":\nanalytic:\n")
    assert head.startswith("order-1 gradient of input 1 (shape (3,), float64) differs from the ")
    analytic, numerical = (
        np.array(part.replace("[", " ").replace("]", " ").split(), float)
        for part in arrays.split("\nnumerical:\n")
    )
    np.testing.assert_allclose(analytic, 1.03 * numerical, rtol=1e-6)  # the 3 % it is off
    largest = float(head.rsplit("by up to ", 1)[1])
    assert largest == pytest.approx(np.max(np.abs(analytic - numerical)), rel=1e-2)


@pytest.mark.parametrize(("dtype", "passes"), [(np.float32, True), (np.float64, False)])
def test_check_backward_compares_in_the_inputs_dtype_with_its_tolerances(dtype, passes):
    """docs/add-an-op.md: float32 inputs are compared at rtol=1e-2, atol=1e-3 by default, so
    a gradient 0.3 % off passes there and fails in float64 (rtol=1e-4)."""
    a, b = np.array([1.5, -0.5, 2.0], dtype), np.array([0.3, -1.2, 2.0], dtype)
    check = lambda: check_backward(lambda u, v: _ScaledSquareOff(3e-3)(u, v), a, b)  # noqa: E731
    if passes:
        check()
    else:
        with pytest.raises(AssertionError, match=r"^order-1 gradient of input 1 .*float64"):
            check()


class _SinOfData(Function):
    """sin, whose backward computes cos on the array: ``gy * Variable(np.cos(x.data))``."""

    def forward(self, x):
        return np.sin(x)

    def backward(self, gy):
        (x,) = self.inputs
        return gy * Variable(np.cos(x.data))


def test_a_factor_read_from_data_passes_order_1_and_is_found_by_order_2():
    """docs/add-an-op.md: a factor computed from ``.data`` inside an expression of Variables
    is a constant no error sees; its first derivative is right, and
    ``check_backward(..., order=2)`` finds the missing second one."""
    x = np.array([0.3, -1.2, 2.0])
    check_backward(lambda v: _SinOfData()(v), x, order=1)
    with pytest.raises(AssertionError, match=r"^order-2 gradient of input 0 .* got no gradient"):
        check_backward(lambda v: _SinOfData()(v), x, order=2)
