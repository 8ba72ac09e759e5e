"""backward() of a Variable computed with backprop disabled is refused, not silently empty."""

import numpy as np
import pytest

from zerograd import Function, Variable, no_grad

NO_GRAPH = r"^backward: this Variable was computed with backprop disabled \(inside no_grad\(\)"


class _Halves(Function):
    """Two outputs: x and 2x (a multi-output function)."""

    def forward(self, x):
        return x, 2 * x

    def backward(self, gy0, gy1):
        return gy0 + 2 * gy1


def test_backward_of_a_no_grad_result_is_refused_and_changes_nothing():
    x = Variable(np.array([1.0, 2.0]))
    x.grad = Variable(np.array([5.0, 5.0]))
    with no_grad():
        y = (x * x).sum()
        a, b = _Halves()(x)
    for v in (y, a, b):
        with pytest.raises(RuntimeError, match=NO_GRAPH):
            v.backward()
        assert v.grad is None
    np.testing.assert_array_equal(x.grad.data, [5.0, 5.0])
    # a leaf still gets its own gradient of one, as in DeZero, and a no-graph result still
    # serves as a constant in a recorded graph
    leaf = Variable(np.array(3.0))
    leaf.backward()
    assert float(leaf.grad.data) == 1.0
    w = Variable(np.array(4.0))
    (y * w).backward()
    assert float(w.grad.data) == 5.0


def test_backward_of_a_first_order_gradient_needs_create_graph():
    x = Variable(np.array(2.0))
    (x**3).backward()
    gx = x.grad
    x.cleargrad()
    with pytest.raises(RuntimeError, match=r"a gradient from a backward without create_graph"):
        gx.backward()
    assert x.grad is None
    (x**3).backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    gx.backward()
    assert float(x.grad.data) == 12.0  # d/dx 3x^2 at 2
