"""The backward walk's guarantees: one owner per gradient, and a failure changes nothing."""

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Function, Variable
from zerograd.backends import as_numpy


def _distinct(*grads):
    for i, g in enumerate(grads):
        for h in grads[i + 1 :]:
            assert g is not h
            assert g.data is not h.data


def test_two_leaves_of_one_add_get_their_own_gradients(arr):
    a, b = Variable(arr([1.0, 2.0])), Variable(arr([3.0, 4.0]))
    F.sum(a + b).backward()
    _distinct(a.grad, b.grad)
    y = a + b
    y.grad = Variable(arr([1.0, 1.0]))
    a.cleargrad()
    b.cleargrad()
    y.backward()
    _distinct(a.grad, b.grad)
    a.grad.data[...] = 7.0  # an in-place change to one gradient (a user's hook) ...
    np.testing.assert_array_equal(as_numpy(b.grad), [1.0, 1.0])  # ... leaves the other alone
    x = Variable(arr([3.0]))
    (x + x).backward()  # one variable twice still accumulates
    np.testing.assert_array_equal(as_numpy(x.grad), [2.0])


def test_gradient_passed_through_unchanged_is_not_shared(arr):
    a, b = Variable(arr([1.0, 2.0])), Variable(arr([3.0, 4.0]))
    # reshape to the same shape and sum over no axis hand the output gradient through as is
    y = F.reshape(a, (2,)) + F.sum(b, axis=())
    F.sum(y).backward()
    _distinct(a.grad, b.grad)
    np.testing.assert_array_equal(as_numpy(a.grad), [1.0, 1.0])


def test_retain_grad_keeps_every_gradient_its_own(arr):
    a, b = Variable(arr([1.0, 2.0])), Variable(arr([3.0, 4.0]))
    h = a + b
    m = F.sum(h, axis=())  # hands its gradient through as is
    y = F.sum(m)
    y.backward(retain_grad=True)
    _distinct(a.grad, b.grad, h.grad, m.grad, y.grad)
    for g in (a.grad, b.grad, h.grad, m.grad):
        np.testing.assert_array_equal(as_numpy(g), [1.0, 1.0])


def test_copies_stay_differentiable_for_second_order(arr):
    a, b = Variable(arr([2.0])), Variable(arr([5.0]))
    z = a + b
    y = z * z  # both gradients are Add's one gradient 2z
    y.backward(create_graph=True)
    ga = a.grad
    _distinct(a.grad, b.grad)
    np.testing.assert_allclose(as_numpy(ga), [14.0])
    a.cleargrad()
    b.cleargrad()
    ga.backward()  # d(2(a + b))/da = 2, d/db = 2
    np.testing.assert_allclose(as_numpy(a.grad), [2.0])
    np.testing.assert_allclose(as_numpy(b.grad), [2.0])


class _Fails(Function):
    """Doubles; its backward raises while ``armed``."""

    armed = True

    def forward(self, x):
        return x * 2

    def backward(self, gy):
        if type(self).armed:
            raise ValueError("boom")
        return gy * 2


@pytest.fixture
def fails():
    _Fails.armed = True
    yield _Fails
    _Fails.armed = True


def test_failed_backward_restores_every_gradient(arr, fails):
    x = Variable(arr([1.0, 2.0]))
    w = Variable(arr([3.0, 4.0]))
    x.grad = Variable(arr([10.0, 10.0]))  # accumulated from an earlier step
    old = x.grad
    v = Variable(arr([2.0, 2.0]))
    u = F.exp(F.exp(Variable(arr([0.0, 0.0]))))  # generation 2: its users run before fails
    h = x * w
    # h gets a gradient from the right branch first; v gets two (accumulated) before the
    # failing function is reached
    y = F.sum(fails()(h) + h * 3 + u * v + v * u)
    with pytest.raises(ValueError, match="boom"):
        y.backward()
    assert x.grad is old
    np.testing.assert_array_equal(as_numpy(old), [10.0, 10.0])
    assert w.grad is None and v.grad is None and h.grad is None and y.grad is None
    fails.armed = False
    x.cleargrad()
    y.backward()  # the retry gives the right answer: d/dx sum(2xw + 3xw) = 5w
    np.testing.assert_allclose(as_numpy(x.grad), [15.0, 20.0])
    np.testing.assert_allclose(as_numpy(w.grad), [5.0, 10.0])
    np.testing.assert_allclose(as_numpy(v.grad), [2 * np.e, 2 * np.e])
    assert h.grad is None


def test_failed_backward_with_retain_grad_restores_too(arr, fails):
    x = Variable(arr([1.0]))
    h = x * 3
    y = fails()(h) + h
    with pytest.raises(ValueError, match="boom"):
        y.backward(retain_grad=True)
    assert (x.grad, h.grad, y.grad) == (None, None, None)


def test_bad_gradient_shape_mid_walk_changes_nothing(arr):
    class WrongShape(Function):
        def forward(self, x):
            return x * 1

        def backward(self, gy):
            return F.sum(gy)

    x = Variable(arr([1.0, 2.0]))
    y = F.sum(WrongShape()(x) + x)
    with pytest.raises(RuntimeError, match="shape"):
        y.backward()
    assert x.grad is None and y.grad is None


@pytest.mark.parametrize("kind", ["Variable", "array", "Python float"])
def test_a_preset_gradient_of_another_shape_is_refused_before_anything(kind, arr):
    x = Variable(arr([1.0, 2.0]))
    x.grad = Variable(arr([10.0, 20.0]))
    y = x * 3.0
    preset = {
        "Variable": Variable(arr([1.0, 1.0, 1.0])),
        "array": arr([1.0, 1.0, 1.0]),
        "Python float": 1.0,
    }[kind]
    shape = r"\(\)" if kind == "Python float" else r"\(3,\)"
    y.grad = preset
    with pytest.raises(
        ValueError,
        match=rf"^backward: y has shape \(2,\) but its preset gradient y\.grad has shape "
        rf"{shape}; the gradient backward starts from must have y's shape\. Assign one of "
        rf"shape \(2,\), or call y\.cleargrad\(\) to start from ones\.$",
    ):
        y.backward()
    assert y.grad is preset and y.creator is not None
    assert as_numpy(x.grad).tolist() == [10.0, 20.0]


def test_the_preset_gradient_error_names_y_and_covers_a_leaf(arr):
    loss = F.sum(Variable(arr([1.0, 2.0])) * 2.0)
    loss.name = "loss"
    loss.grad = Variable(arr([1.0, 1.0]))
    with pytest.raises(ValueError, match=r"^backward: y \(named 'loss'\) has shape \(\) but "):
        loss.backward()
    leaf = Variable(arr([1.0, 2.0]))
    leaf.grad = Variable(arr([[1.0, 2.0]]))
    with pytest.raises(ValueError, match=r"has shape \(2,\) but its preset gradient y\.grad has "):
        leaf.backward()
    assert as_numpy(leaf.grad).tolist() == [[1.0, 2.0]]


def test_a_preset_gradient_of_the_right_shape_starts_backward(arr):
    x = Variable(arr([1.0, 2.0]))
    y = x * 3.0
    y.grad = arr([1.0, -1.0])  # an array, as the book's step 9 seeds it
    y.backward()
    assert as_numpy(x.grad).tolist() == [3.0, -3.0]


def test_a_retained_intermediate_gradient_flows_into_a_later_backward(arr):
    """DeZero's rule (From PyTorch, "What behaves differently"): a gradient an intermediate
    still holds from ``backward(retain_grad=True)`` is added to what a later backward
    through it passes on; ``cleargrad()`` on it gives PyTorch's result."""
    x = Variable(arr(2.0))
    h = F.sin(x)
    (h * h).backward(retain_grad=True)
    held = 2 * np.sin(2.0)
    assert as_numpy(h.grad.data) == pytest.approx(held)
    x.cleargrad()
    (h * 3.0).backward()
    assert as_numpy(x.grad.data) == pytest.approx((3.0 + held) * np.cos(2.0))
    x.cleargrad()
    h.cleargrad()
    (h * 3.0).backward()
    assert as_numpy(x.grad.data) == pytest.approx(3.0 * np.cos(2.0))
