"""Nothing where an array should be: a forward returning None, a Variable holding None."""

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Function, Variable


class ForgotReturn(Function):
    def forward(self, x):
        x * 2  # no return

    def backward(self, gy):
        return gy


class SecondIsNone(Function):
    def forward(self, x):
        return x, None

    def backward(self, gy0, gy1):
        return gy0


@pytest.mark.parametrize("cls", [ForgotReturn, SecondIsNone])
def test_a_forward_that_returns_none_is_named_and_records_nothing(cls):
    x = Variable(np.array([1.0, 2.0]))
    f = cls()
    with pytest.raises(
        TypeError,
        match=rf"^{cls.__name__}\.forward returned None; it must return the output array "
        r"\(or a tuple of arrays\): check for a missing `return`\.$",
    ):
        f(x)
    assert not hasattr(f, "inputs") and not hasattr(f, "outputs")
    assert x.creator is None and x.grad is None
    np.testing.assert_array_equal(x.data, [1.0, 2.0])


@pytest.mark.parametrize(
    "name, call",
    [
        ("reshape", lambda x: F.reshape(x, (2,))),
        ("reshape", lambda x: x.reshape(2, 1)),
        ("broadcast_to", lambda x: F.broadcast_to(x, (2, 2))),
        ("sum_to", lambda x: F.sum_to(x, (1,))),
        ("expand_dims", lambda x: F.expand_dims(x, 0)),
        ("flatten", lambda x: F.flatten(x)),
    ],
)
def test_shape_functions_of_an_empty_variable_name_the_function(name, call):
    x = Variable(None, name="h")
    with pytest.raises(
        TypeError,
        match=rf"^{name}: the Variable 'h' holds no data \(its data is None\); give it an array "
        r"first \(x\.data = \.\.\.\)\.$",
    ):
        call(x)
    assert x.data is None and x.creator is None and x.grad is None
    unnamed = Variable(None)
    with pytest.raises(TypeError, match=rf"^{name}: the Variable holds no data"):
        call(unnamed)
