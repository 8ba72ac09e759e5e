"""What the graph keeps: each function holds what its derivative reads, and nothing else.

A built-in function whose vjp reads no input value (add, exp, tanh, sum, ...) holds no
input Variable made by another built-in function, only the way back to its creator, so an
intermediate array the user dropped is freed during the forward pass (as PyTorch frees
it). These tests check that the arrays go, and that every gradient, first and second
order, and every way of reading the graph is as it was when the graph held everything.
"""

import gc
import weakref

import numpy as np

import zerograd.functions as F
from zerograd import Constant, Function, Variable
from zerograd.backends import as_numpy
from zerograd.function import settings_of


def _x(seed=0):
    return Variable(np.random.default_rng(seed).standard_normal((3, 4)))


def test_an_intermediate_nothing_reads_is_freed_before_backward():
    x = _x()
    a = x * 2.0  # Mul reads its inputs; exp reads only its output
    dropped = weakref.ref(a.data)
    y = F.sum(F.exp(a))
    del a
    assert dropped() is None  # gone with the user's reference, before any backward
    y.backward()
    np.testing.assert_allclose(as_numpy(x.grad), 2.0 * np.exp(2.0 * as_numpy(x.data)))


def test_an_input_a_derivative_reads_stays_until_the_graph_goes():
    x = _x()
    a = F.exp(x)
    kept = weakref.ref(a.data)
    y = F.sum(a * a)  # Mul reads both inputs: the graph keeps a
    del a
    assert kept() is not None
    y.backward()
    np.testing.assert_allclose(as_numpy(x.grad), 2.0 * np.exp(2.0 * as_numpy(x.data)))
    del y
    gc.collect()
    assert kept() is None


def test_an_output_its_derivative_reads_is_kept_as_an_array_only():
    x = _x()
    t = F.tanh(x)
    out_var = weakref.ref(t)
    y = F.sum(t)  # sum reads nothing: the Variable goes, tanh keeps the array it reads
    del t
    assert out_var() is None
    y.backward()
    th = np.tanh(as_numpy(x.data))
    np.testing.assert_allclose(as_numpy(x.grad), 1.0 - th * th)


def test_second_order_through_an_output_the_user_dropped():
    x = _x()
    y = F.sum(F.tanh(x))  # the tanh output is dropped; its vjp on Variables needs it back
    y.backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    F.sum(gx).backward()
    th = np.tanh(as_numpy(x.data))
    np.testing.assert_allclose(as_numpy(gx.data), 1.0 - th * th)
    np.testing.assert_allclose(as_numpy(x.grad.data), -2.0 * th * (1.0 - th * th))


def test_a_book_style_function_reads_self_inputs_after_the_user_dropped_them():
    class Cube(Function):  # the book's way: backward reads self.inputs
        def forward(self, x):
            return x * x * x

        def backward(self, gy):
            x = self.inputs[0]
            return gy * 3 * x * x

    x = _x()
    a = F.exp(x)
    kept = weakref.ref(a.data)
    y = F.sum(Cube()(a))
    del a
    assert kept() is not None  # the book's backward reads it: the graph holds it
    (held,) = y.creator.inputs[0].creator.inputs
    assert held.data is kept()
    y.backward()
    np.testing.assert_allclose(as_numpy(x.grad), 3.0 * np.exp(3.0 * as_numpy(x.data)))


def test_a_lean_function_reads_back_a_dropped_input_as_a_stand_in():
    x = _x()
    y = F.exp(x * 3.0)
    (stand_in,) = y.creator.inputs
    assert stand_in.data is None
    assert type(stand_in.creator).__name__ == "Mul"
    assert stand_in.generation == stand_in.creator.generation + 1
    assert y.creator.inputs[0] is stand_in  # one object while it is alive
    assert stand_in.creator.output_like() == ((3, 4), np.dtype("float64"))
    a = x * 3.0
    z = F.exp(a)
    assert z.creator.inputs[0] is a  # an input the user holds reads back as itself


def test_dropped_inputs_of_one_shape_and_dtype_share_what_their_creators_note():
    x = _x()
    y = F.exp(x * 3.0) + F.exp(x * 2.0)
    small = F.exp(Variable(np.ones(5, dtype=np.float32)) * 2.0)
    first, second = (e.creator.inputs[0].creator for e in y.creator.inputs)
    assert first.output_like() == second.output_like() == ((3, 4), np.dtype("float64"))
    assert first.output_like() is second.output_like()  # one tuple kept, not one each
    assert small.creator.inputs[0].creator.output_like() == ((5,), np.dtype("float32"))


def test_retain_grad_reaches_an_intermediate_the_user_holds():
    x = _x()
    a = x * 2.0
    y = F.sum(F.exp(a))
    y.backward(retain_grad=True)
    np.testing.assert_allclose(as_numpy(a.grad.data), np.exp(as_numpy(a.data)))


def test_unchain_backward_cuts_the_edges_of_functions_that_keep_no_inputs():
    x = _x()
    y = F.sum(F.tanh(x * 2.0))
    mul = weakref.ref(y.creator.inputs[0].creator.inputs[0].creator)
    y.unchain_backward()
    gc.collect()
    assert mul() is None  # nothing holds the creator any more
    y.backward()
    assert x.grad is None


def test_unchain_on_a_held_intermediate_cuts_the_lean_function_after_it():
    x = _x()
    a = x * 2.0
    y = F.sum(F.exp(a))
    a.unchain()
    y.backward()
    assert x.grad is None
    del a
    y.backward()  # the dropped, unchained input still leads nowhere
    assert x.grad is None


def test_an_unchained_then_dropped_input_reads_back_as_one_leaf_of_known_kind():
    """Function.inputs gives one data-less leaf for it while that is held (as the unchained
    Variable was), input_like what it was; neither reconnects the cut."""
    x = Variable(np.ones((2, 3), np.float32))
    a = F.sin(x)
    y = a + a  # Add reads no input: it keeps only the way back to sin
    a.unchain()
    del a
    add = y.creator
    first, second = add.inputs
    assert first is second and first.data is None and first.creator is None
    assert first.generation == 0 and add.inputs[0] is first
    assert add.input_like(0) == add.input_like(1) == ((2, 3), np.dtype(np.float32))
    F.sum(y).backward()  # with the stand-in held, and after it is gone
    assert x.grad is None
    del first, second
    gc.collect()
    F.sum(y).backward()
    assert x.grad is None
    m = x * 2.0  # Mul holds its input Variables: nothing to note
    assert m.creator.input_like(0) is None


def test_a_dropped_output_with_several_lean_consumers_gets_every_gradient():
    """The walk files a dropped output's gradients under its creator, a held one's under the
    Variable: with the output dropped, held by another consumer, or held by the user, each
    consumer's gradient arrives once."""
    data = np.random.default_rng(3).standard_normal((3, 4))
    sig = 1 - np.tanh(data) ** 2  # d tanh
    want = sig * (1.0 + 1.0 + np.exp(np.tanh(data)))  # three consumers: +, +, exp

    def run(hold):
        x = Variable(data)
        a = F.tanh(x)  # lean consumers below: add, add, exp (they keep only a's creator)
        kept = a if hold == "user" else None
        ys = [a + 1.0, a + 2.0, F.exp(a)]
        if hold == "mul":
            ys.append(a * 0.0)  # Mul reads its inputs: it holds a
        del a
        F.sum(ys[0] + ys[1] + ys[2] + (ys[3] if len(ys) > 3 else 0.0)).backward()
        del kept
        return as_numpy(x.grad)

    for hold in ("nobody", "user", "mul"):
        np.testing.assert_allclose(run(hold), want, rtol=1e-12, err_msg=hold)


class _BookDouble(Function):
    def forward(self, x):
        return x * 2

    def backward(self, gy):
        return gy * 2


def test_output_arrays_and_uses_vjp_say_what_a_backward_reads():
    """output_arrays gives a vjp's y: an output's data, the array the function saved once
    the user dropped the output, None where the vjp reads no output; uses_vjp tells a
    vjp from a book-style backward (a static-graph recording plans its backward with them)."""
    x = _x()
    e = F.exp(x)
    f = e.creator
    expected = np.exp(as_numpy(x.data))
    (y,) = f.output_arrays([e])
    assert y is e.data
    del e
    (saved,) = f.output_arrays([None])  # exp's vjp reads its output: the graph kept it
    np.testing.assert_array_equal(as_numpy(saved), expected)
    m = x * 3.0
    assert m.creator.output_arrays([None]) == [None]  # Mul's vjp reads no output
    assert f.uses_vjp and m.creator.uses_vjp
    assert not _BookDouble()(x).creator.uses_vjp


def test_an_array_operand_is_wrapped_once_while_its_constant_lives():
    x, c = _x(), np.full((3, 4), 0.5)
    y = x * c
    w = y * c
    z = w + c  # the same array: one Constant for the three uses
    k1, k2, k3 = y.creator.inputs[1], w.creator.inputs[1], z.creator.inputs[1]
    assert type(k1) is Constant and k1 is k2 is k3 and k1.data is c
    assert (x * np.full((3, 4), 0.5)).creator.inputs[1] is not k1  # another array: its own
    F.sum(z).backward()
    np.testing.assert_allclose(as_numpy(x.grad), np.full((3, 4), 0.25))
    assert k1.grad is None  # built-in derivatives give a Constant nothing


def test_the_shared_constant_keeps_nothing_alive():
    x, c = _x(), np.full((3, 4), 0.5)
    y = F.sum(x * c)
    kept_constant, kept_array = weakref.ref(y.creator.inputs[0].creator.inputs[1]), weakref.ref(c)
    del y, c
    gc.collect()
    assert kept_constant() is None and kept_array() is None


class _BookMul(Function):
    """The book's way: a gradient for every input, a Constant's included."""

    def forward(self, a, b):
        return a * b

    def backward(self, gy):
        a, b = self.inputs
        return gy * b, gy * a


def test_a_constant_that_got_a_gradient_or_a_name_is_not_shared():
    x, c = _x(), np.full((3, 4), 0.5)
    y = _BookMul()(x, c)
    first = y.creator.inputs[1]
    F.sum(y).backward()
    assert first.grad is not None  # the book's backward gave the operand one
    second = _BookMul()(x, c).creator.inputs[1]
    assert second is not first and second.grad is None  # a new graph starts it afresh
    second.name = "c"
    third = (x * c).creator.inputs[1]
    assert third is not second and third.name is None


def test_a_built_in_without_settings_keeps_no_dict_and_a_subclass_may_keep_one():
    add = F.Add()
    assert not hasattr(add, "__dict__")  # nothing beyond Function's slots: no dict per call
    assert settings_of(add) == {} and settings_of(F.Sum(axis=1)) == {"axis": 1, "keepdims": False}

    class Scaled(F.Add):  # a user's subclass may keep its own state, as the book's do
        def __init__(self, k):
            self.k = k

        def forward(self, a, b):
            return super().forward(a, b) * self.k

    s = Scaled(3.0)
    y = s(_x(), _x(1))
    assert s.k == 3.0 and vars(s) == {"k": 3.0}
    np.testing.assert_allclose(as_numpy(y.data), 3.0 * (as_numpy(_x().data) + as_numpy(_x(1).data)))


def test_an_index_keeps_only_its_input_s_shape_not_the_array():
    """x[i] reads nothing of x's values in its derivative, only x's shape: the graph frees
    the (large) array indexed once the user drops it, and the gradients, first and second
    order, are as when the user held it."""
    data = np.random.default_rng(5).standard_normal((6, 4))
    rows = np.array([0, 0, 3])
    for index in (np.s_[1:3], rows, (slice(None), -1)):
        x = Variable(data)
        a = x * 2.0  # Mul keeps its inputs, not its output
        dropped = weakref.ref(a.data)
        y = F.sum(F.exp(a[index]))  # exp keeps its own output, a new array
        del a
        gc.collect()
        assert dropped() is None, index
        y.backward(create_graph=True)
        e = np.exp(2.0 * data)
        picked = np.zeros_like(data)
        np.add.at(picked, index, 1.0)  # how often each element is picked
        np.testing.assert_allclose(as_numpy(x.grad.data), 2.0 * e * picked, rtol=1e-12)
        gx = x.grad
        x.cleargrad()
        F.sum(gx).backward()
        np.testing.assert_allclose(as_numpy(x.grad.data), 4.0 * e * picked, rtol=1e-12)


def test_concatenate_and_stack_keep_no_input_arrays():
    """Their derivatives slice ``gy`` by the sizes the forward noted: the graph frees the
    inputs the user dropped; a Constant input still gets no gradient."""
    data = np.random.default_rng(6).standard_normal((3, 4))
    other = np.random.default_rng(7).standard_normal((3, 4))
    for join in (F.concatenate, F.stack):
        x = Variable(data)
        a = x * 2.0  # Mul keeps its inputs, not its output
        b = x * 3.0
        dropped = [weakref.ref(a.data), weakref.ref(b.data)]
        y = F.sum(F.exp(join([a, other, b], axis=1)))  # other: a Constant
        del a, b
        gc.collect()
        assert [r() for r in dropped] == [None, None], join
        y.backward(create_graph=True)
        want = 2.0 * np.exp(2.0 * data) + 3.0 * np.exp(3.0 * data)
        np.testing.assert_allclose(as_numpy(x.grad.data), want, rtol=1e-12)
        gx = x.grad
        x.cleargrad()
        F.sum(gx).backward()
        want2 = 4.0 * np.exp(2.0 * data) + 9.0 * np.exp(3.0 * data)
        np.testing.assert_allclose(as_numpy(x.grad.data), want2, rtol=1e-12)
