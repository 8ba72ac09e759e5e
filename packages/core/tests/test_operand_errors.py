"""Errors raised inside an operation's forward name the operation and what to change."""

import datetime
import re

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


@pytest.mark.parametrize(
    "operand, dtype",
    [
        (np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"), "datetime64[D]"),
        (np.array([1, 2], dtype="timedelta64[s]"), "timedelta64[s]"),
        (np.datetime64("2020-01-01"), "datetime64[D]"),
        (np.timedelta64(3, "s"), "timedelta64[s]"),
    ],
)
def test_datetime_and_timedelta_arrays_are_refused_like_object_arrays(operand, dtype):
    # a datetime64 array's own .data (a buffer) raises ValueError: it must not be read
    x = Variable(np.ones(2))
    for _ in range(2):  # the second call takes the cached path
        with pytest.raises(
            TypeError,
            match=rf"^Add: input 1 has dtype {re.escape(dtype)}, which zerograd cannot compute "
            r"with; give bool, integer, float or complex data\.$",
        ):
            x + operand
    with pytest.raises(TypeError, match=rf"^Sub: input 0 has dtype {re.escape(dtype)}"):
        operand - x
    np.testing.assert_array_equal(x.data, [1.0, 1.0])
    assert x.grad is None and x.creator is None


@pytest.mark.parametrize(
    "operand",
    [datetime.timedelta(seconds=1), datetime.datetime(2020, 1, 1), datetime.date(2020, 1, 1)],
)
def test_python_datetime_operands_are_refused_as_not_numeric(operand):
    x = Variable(np.ones(2))
    with pytest.raises(
        TypeError,
        match=rf"^Sub: input 1: got {re.escape(repr(operand))} \({type(operand).__name__}\), "
        r"which is not numeric data",
    ):
        x - operand
    assert x.creator is None
