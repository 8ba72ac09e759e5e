"""The two ways backward runs one derivative: on arrays (first order) and on Variables."""

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Function, Variable


def _graph(x, w):
    h = F.tanh(F.matmul(x, w) + 1.0)
    return F.sum(F.exp(-h) * F.sin(h) / 2.0 + F.reshape(h, (-1,))[0] ** 2)


def test_first_order_backward_builds_no_function(request):
    x = Variable(np.linspace(-1, 1, 6).reshape(2, 3))
    w = Variable(np.linspace(0.5, -0.5, 12).reshape(3, 4))
    y = _graph(x, w)
    calls = request.getfixturevalue("function_calls")
    y.backward()
    assert calls == []
    assert x.grad.creator is None and w.grad.creator is None


def test_create_graph_records_the_same_derivative(request):
    x = Variable(np.linspace(-1, 1, 6).reshape(2, 3))
    w = Variable(np.linspace(0.5, -0.5, 12).reshape(3, 4))
    _graph(x, w).backward()
    first = x.grad.data.copy(), w.grad.data.copy()
    x.cleargrad(), w.cleargrad()
    y = _graph(x, w)
    calls = request.getfixturevalue("function_calls")
    y.backward(create_graph=True)
    assert {"Cos", "Mul", "MatMul"} <= set(calls)  # sin's derivative, recorded
    assert x.grad.creator is not None
    np.testing.assert_allclose(x.grad.data, first[0], rtol=1e-12)
    np.testing.assert_allclose(w.grad.data, first[1], rtol=1e-12)


_NUMPY1 = np.lib.NumpyVersion(np.__version__) < "2.0.0"


@pytest.mark.skipif(
    _NUMPY1,
    reason="numpy 1.x widens 0-d float32 work with Python floats to float64 (value-based "
    "casting), so the first-order walk brings 0-d results back to the input's dtype there",
)
@pytest.mark.parametrize(
    "x_dtype, c_dtype",
    [(np.float16, np.float32), (np.float32, np.float64), (np.float64, np.float16)],
)
def test_a_0d_input_gets_the_same_gradient_in_both_modes(x_dtype, c_dtype):
    # numpy answers 0-d work with scalars, which the first-order walk makes arrays again:
    # of their own dtype (here the wider operand's), as the Variable engine computes
    # them, and as an input of shape (1,) gets them
    c = np.array([0.5, 1.5, 2.0], dtype=c_dtype)

    def grad(shape, create_graph):
        x = Variable(np.full(shape, 0.7, dtype=x_dtype))
        (F.tanh(x * c + 1) * F.exp(-x) / F.sqrt(x)).sum().backward(create_graph=create_graph)
        return x.grad.data

    first, second, one = grad((), False), grad((), True), grad((1,), False)
    wider = np.result_type(x_dtype, c_dtype)
    assert first.shape == () and first.dtype == second.dtype == one.dtype == wider
    assert first.tobytes() == second.tobytes() == one.tobytes()


class BookSquare(Function):
    """The book's protocol: backward on Variables."""

    def forward(self, x):
        return x**2

    def backward(self, gy):
        assert isinstance(gy, Variable)
        (x,) = self.inputs
        return 2 * x * gy


@pytest.mark.parametrize("create_graph", [False, True])
def test_book_style_functions_work_in_both_modes(create_graph):
    x = Variable(np.array(3.0))
    y = F.sin(BookSquare()(x))
    y.backward(create_graph=create_graph)
    assert x.grad.data == pytest.approx(np.cos(9.0) * 6.0)
    assert isinstance(x.grad.data, np.ndarray)


def test_one_array_given_to_two_leaves_is_copied():
    a, b = Variable(np.ones(3)), Variable(np.ones(3))
    (a + b).backward()  # Add's vjp returns the same gy for both inputs
    assert a.grad is not b.grad
    assert not np.shares_memory(a.grad.data, b.grad.data)
    a.grad.data[0] = 5.0
    assert b.grad.data[0] == 1.0


def test_retained_gradients_are_variables_of_their_own():
    x = Variable(np.array([1.0, 2.0]))
    h = x + 0.0
    y = h + 0.0
    y.backward(retain_grad=True)
    grads = [x.grad, h.grad, y.grad]
    assert all(isinstance(g, Variable) for g in grads)
    assert len({id(g.data) for g in grads}) == 3
    assert not any(np.shares_memory(p.data, q.data) for p in grads for q in grads if p is not q)


class Broken(Function):
    def forward(self, x):
        return x * 2

    def vjp(self, xp, xs, y, gy):
        raise ValueError("broken derivative")


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_failing_vjp_changes_no_gradient(create_graph):
    x = Variable(np.array([1.0, 2.0]))
    x.grad = Variable(np.array([10.0, 20.0]))
    before = x.grad
    h = x * 3.0
    h.grad = Variable(np.array([7.0, 7.0]))  # a stale intermediate gradient
    y = F.sin(Broken()(h))
    with pytest.raises(ValueError, match="broken derivative"):
        y.backward(create_graph=create_graph)
    assert x.grad is before and np.array_equal(x.grad.data, [10.0, 20.0])
    assert np.array_equal(h.grad.data, [7.0, 7.0])
    assert y.grad is None


class WrongShape(Function):
    def forward(self, x):
        return x.sum()

    def vjp(self, xp, xs, y, gy):
        return gy  # should be broadcast back to x's shape


def test_a_vjp_returning_the_wrong_shape_is_named():
    x = Variable(np.ones(3))
    with pytest.raises(RuntimeError, match=r"WrongShape.vjp returned a gradient of shape \(\)"):
        WrongShape()(x).backward()
    assert x.grad is None


def test_direct_backward_call_runs_the_vjp_on_variables():
    x = Variable(np.array(0.5))
    f = F.Sin()
    y = f(x)
    gx = f.backward(Variable(np.array(2.0)))
    assert isinstance(gx, Variable) and gx.creator is not None
    assert gx.data == pytest.approx(2.0 * np.cos(0.5))
    assert y.data == pytest.approx(np.sin(0.5))


@pytest.mark.parametrize(
    "f",
    [lambda x: x**2, F.square, lambda x: x * x, lambda x: -x * 3, lambda x: x - x * 2],
    ids=["pow", "square", "mul", "neg_mul", "sub"],
)
@pytest.mark.parametrize("create_graph", [False, True])
def test_integer_inputs_under_a_float_gradient(arr, to_np, f, create_graph):
    """An integer x whose result feeds a float function gets its float value's gradient."""
    ints = [[1, -2, 3], [0, 2, -1]]
    grads = []
    for dtype in ("int64", "float64"):
        x = Variable(arr(ints, dtype))
        F.sum(F.tanh(f(x) * 0.1)).backward(create_graph=create_graph)
        grads.append(to_np(x.grad.data))
    assert grads[0].dtype == np.float64
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


class NoDerivative(Function):
    def forward(self, x):
        return x + 1


def test_a_function_without_a_derivative_says_what_to_define():
    x = Variable(np.ones(2))
    with pytest.raises(NotImplementedError, match=r"NoDerivative has no derivative: define vjp"):
        NoDerivative()(x).backward()
    assert x.grad is None


class ListGrads(Function):
    def forward(self, a, b):
        return a * b

    def vjp(self, xp, xs, y, gy):
        a, b = xs
        return [gy * b, gy * a]  # a list, as a beginner may write


def test_a_list_of_gradients_is_accepted():
    a, b = Variable(np.array([2.0])), Variable(np.array([5.0]))
    ListGrads()(a, b).backward()
    assert a.grad.data[0] == 5.0 and b.grad.data[0] == 2.0


class UsesWhere(Function):
    def forward(self, x):
        return x * 1

    def vjp(self, xp, xs, y, gy):
        return xp.where(xs[0] > 0, gy, 0 * gy)


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_name_outside_the_namespace_is_named_with_what_to_do(create_graph):
    x = Variable(np.ones(2))
    with pytest.raises(AttributeError, match=r"has no 'where': a vjp may call only the names"):
        UsesWhere()(x).backward(create_graph=create_graph)
    assert x.grad is None


class RandomWalk(Function):
    """A user Function whose own state is called ``walk``: the engine must not touch it."""

    def __init__(self):
        self.walk = [1, 2, 3]

    def forward(self, x):
        return x * 2

    def vjp(self, xp, xs, y, gy):
        return gy * 2


def test_a_subclass_attribute_named_walk_is_left_alone():
    x = Variable(np.array([1.0]))
    f = RandomWalk()
    y = F.sin(f(x))
    y.backward()
    assert f.walk == [1, 2, 3]
    assert x.grad.data[0] == pytest.approx(2 * np.cos(2.0))


def test_the_array_namespace_follows_the_backends_after_a_refresh():
    from zerograd import backends
    from zerograd.namespaces import array_ops_by_type

    x = Variable(np.array([0.5]))
    F.sin(x).backward()
    before = array_ops_by_type[np.ndarray]
    backends.refresh()  # the plugins load again: new Backend objects
    x.cleargrad()
    F.sin(x).backward()
    after = array_ops_by_type[np.ndarray]
    assert after is not before
    assert after.backend is backends.backend_of(x.data)
    assert x.grad.data[0] == pytest.approx(np.cos(0.5))


def test_each_namespace_carries_the_walks_gradients_its_way():
    from zerograd import backends
    from zerograd.namespaces import CARRIER, VARIABLE_OPS, array_ops_by_type

    arrays, variables = array_ops_by_type[np.ndarray], VARIABLE_OPS
    for name in CARRIER:
        assert callable(getattr(arrays, name)) and callable(getattr(variables, name)), name
    a = np.array([1.0, 2.0], dtype=np.float32)
    v = Variable(a)
    # arrays: a Variable's array out, a graph-less Variable back, copies of their own
    assert arrays.unwrap(v) is a
    w = arrays.wrap(a)
    assert w.data is a and w.creator is None and w.generation == -1
    c = arrays.copy(a)
    assert c is not a and not np.shares_memory(c, a) and c.dtype == a.dtype
    np.testing.assert_array_equal(c, a)
    # a library scalar keeps its own dtype, as the Variable engine computes it, except on
    # numpy 1.x, whose value-based casting widens 0-d float32 times a Python float to
    # float64 (the Variable engine's constants follow the data): there the input's
    s = arrays.carry(np.float64(0.5), np.array(1.0, dtype=np.float32))
    numpy1 = np.lib.NumpyVersion(np.__version__) < "2.0.0"
    assert type(s) is np.ndarray and s.dtype == (np.float32 if numpy1 else np.float64)
    assert s == 0.5
    assert arrays.carry(v, a) is a
    assert backends.backend_of(arrays.carry(np.float32(2.0), a)).name == "numpy"
    # Variables: passed through as they are, arrays and scalars wrapped, copies recorded
    assert variables.unwrap(v) is v and variables.wrap(v) is v and variables.carry(v, a) is v
    wrapped = variables.carry(2.0, a)
    assert isinstance(wrapped, Variable) and wrapped.dtype == np.float32
    cv = variables.copy(v)
    assert cv is not v and cv.creator is not None and not np.shares_memory(cv.data, a)
    # a gradient held from before the walk, each way; a grad that is not a Variable refused
    x = Variable(np.array([3.0]))
    x.grad = Variable(np.array([4.0]))
    assert arrays.held(x) is x.grad.data and variables.held(x) is x.grad
    x.grad = np.array([4.0])
    for ops in (arrays, variables):
        with pytest.raises(TypeError, match=r"holds a grad of type numpy.ndarray, not a Variable"):
            ops.held(x)
