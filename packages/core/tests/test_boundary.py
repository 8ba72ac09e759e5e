"""Garbage is refused at the boundary with one TypeError naming the call, what it got and
what it accepts; lists are accepted wherever an op accepts data."""

import numpy as np
import pytest

from zerograd import Parameter, Variable


@pytest.mark.parametrize("cls", [Variable, Parameter])
def test_variable_of_a_variable_is_refused(cls, arr):
    x = Variable(arr([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"Variable\(data\): data is already a Variable.*detach"):
        cls(x)


@pytest.mark.parametrize(
    "data",
    [
        np.array(["a", "b"]),
        np.array([b"a"]),
        np.array([None, 1.0], dtype=object),
        np.array(["2020-01-01"], dtype="datetime64[D]"),
        np.array([1], dtype="timedelta64[s]"),
        np.str_("a"),
    ],
    ids=["str", "bytes", "object", "datetime", "timedelta", "str scalar"],
)
def test_non_numeric_arrays_are_refused(data):
    with pytest.raises(TypeError, match=r"Variable\(data\): data has dtype .* give bool, integer"):
        Variable(data)
