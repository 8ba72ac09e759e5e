"""Axis arguments of the reductions, shape and join functions: every form numpy takes gives
numpy's result, and a malformed one is one clear error with nothing changed."""

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Variable

A = np.arange(24.0).reshape(2, 3, 4)

REDUCTIONS = [
    ("sum", lambda x, axis: F.sum(x, axis)),
    ("mean", lambda x, axis: F.mean(x, axis)),
    ("max", lambda x, axis: F.max(x, axis)),
    ("min", lambda x, axis: F.min(x, axis)),
    ("sum", lambda x, axis: x.sum(axis)),
    ("mean", lambda x, axis: x.mean(axis=axis)),
    ("max", lambda x, axis: x.max(axis)),
    ("sum", lambda x, axis: F.sum(x, dim=axis)),
]


@pytest.mark.parametrize("name, reduce", REDUCTIONS)
@pytest.mark.parametrize("axis", [True, False, (0, True), [False]])
def test_a_bool_is_not_an_axis(name, reduce, axis):
    """``F.sum(x, True)`` (keepdims meant) summed over axis 1, silently; numpy refuses it."""
    with pytest.raises(TypeError):
        np.sum(A, axis=tuple(axis) if isinstance(axis, list) else axis)
    x = Variable(A.copy())
    with pytest.raises(TypeError) as info:
        reduce(x, axis)
    assert str(info.value) == (
        f"{name}: axis must be None, an int or a tuple of ints, got {axis!r}; a bool is not "
        f"an axis (to keep the reduced axes, write keepdims=True)."
    )
    np.testing.assert_array_equal(x.data, A)
    assert x.grad is None and x.creator is None


@pytest.mark.parametrize("name, reduce", REDUCTIONS)
@pytest.mark.parametrize(
    "axis, same",
    [((0, -3), "0 and -3 are both axis 0"), ([2, 1, 2], "2 is given twice"), ((-1, 2), "-1 and 2")],
)
def test_a_repeated_axis_names_its_two_spellings_and_the_dimensions(name, reduce, axis, same):
    """``(0, -3)`` on 3 dimensions names axis 0 twice (numpy refuses it); the message said
    only "names one axis twice", not which nor why."""
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        np.sum(A, axis=tuple(axis))
    x = Variable(A.copy())
    with pytest.raises(ValueError) as info:
        reduce(x, axis)
    assert str(info.value).startswith(f"{name}: axis {axis!r} names one axis twice ({same}")
    assert str(info.value).endswith(", the input having 3 dimensions); give each axis once.")
    np.testing.assert_array_equal(x.data, A)
    assert x.grad is None and x.creator is None
