"""Errors raised inside an operation's forward name the operation and what to change."""

import numpy as np
import pytest

from zerograd import Variable


def test_an_object_array_operand_is_named_by_the_operation():
    x = Variable(np.ones(2))
    with pytest.raises(
        TypeError,
        match=r"^Add: input 1 has dtype object, which zerograd cannot compute with; give bool, "
        r"integer, float or complex data\.$",
    ):
        x + np.array([object(), object()])
    with pytest.raises(TypeError, match=r"^Sub: input 0 has dtype object"):
        np.array([object(), object()], dtype=object) - x
    np.testing.assert_array_equal(x.data, [1.0, 1.0])
    assert x.grad is None and x.creator is None


def test_integers_to_a_negative_integer_power_name_pow_and_the_fix():
    x = Variable(np.array([2, 4]))
    with pytest.raises(
        ValueError,
        match=r"^Pow: integer data to a negative integer power has no integer result; use a "
        r"float exponent \(x \*\* -1\.0\) or float data",
    ):
        x**-1
    np.testing.assert_allclose((x**-1.0).data, [0.5, 0.25])
    assert x.grad is None
