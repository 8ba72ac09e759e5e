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


@pytest.mark.parametrize("join", [F.concatenate, F.stack])
@pytest.mark.parametrize("axis", [True, None, 0.0])
def test_a_join_axis_is_an_int(join, axis):
    """``concatenate(xs, axis=True)`` joined along axis 1 (numpy's concatenate refuses it;
    its stack takes True as 1, zerograd refuses a bool wherever it takes an axis); None met
    Python's "'<=' not supported between instances of 'int' and 'NoneType'"."""
    a, b = np.ones((2, 3)), np.zeros((2, 3))
    if axis is not None and join is F.concatenate:
        with pytest.raises(TypeError):
            np.concatenate([a, b], axis=axis)
    x = Variable(a.copy())
    with pytest.raises(TypeError) as info:
        join([x, b], axis=axis)
    hint = ""
    if axis is None and join is F.concatenate:
        hint = (
            " (numpy's axis=None joins the flattened inputs: write "
            "F.concatenate([F.reshape(x, -1) for x in xs]))"
        )
    assert str(info.value) == f"{join.__name__}: axis must be an int, got {axis!r}{hint}"
    np.testing.assert_array_equal(x.data, a)
    assert x.creator is None


def test_join_axes_as_numpy_integers_and_negative_ints_are_numpys():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(6.0, 10.0).reshape(2, 2)
    y = F.concatenate([a, b], axis=np.int64(-1))
    np.testing.assert_array_equal(y.data, np.concatenate([a, b], axis=-1))
    y = F.stack([a, a + 1], axis=np.int32(-1))
    np.testing.assert_array_equal(y.data, np.stack([a, a + 1], axis=-1))


def test_concatenating_0d_inputs_says_to_stack_them():
    with pytest.raises(ValueError, match="zero-dimensional arrays cannot be concatenated"):
        np.concatenate([np.ones(()), np.ones(())])
    with pytest.raises(ValueError) as info:
        F.concatenate([np.ones(()), np.ones(())])
    assert str(info.value) == (
        "concatenate: the inputs are 0-d, with no axis to join along; stack them "
        "(F.stack(xs)) or give them shape (1,)"
    )


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda x: F.transpose(x, (True, 0)), "transpose: axes must be None or a sequence of "),
        (lambda x: x.transpose(True, 0), "transpose: axes must be None or a sequence of ints"),
        (lambda x: x.transpose([0, False]), "transpose: axes must be None or a sequence of "),
        (lambda x: F.expand_dims(x, True), "expand_dims: axis must be an int, got True"),
    ],
)
def test_a_bool_is_not_an_axis_of_the_shape_functions(call, message):
    """``transpose(x, (True, 0))`` of a 2-D ``x`` was ``(1, 0)``, silently (numpy refuses a
    bool there); ``expand_dims(x, True)`` inserted at axis 1 (numpy's does too: zerograd
    refuses a bool wherever it takes an axis, as ``softmax`` did already)."""
    with pytest.raises(TypeError):
        np.transpose(A[0], (True, 0))
    x = Variable(A[0].copy())
    with pytest.raises(TypeError, match="^" + message):
        call(x)
    np.testing.assert_array_equal(x.data, A[0])
    assert x.creator is None


def test_transpose_and_expand_dims_take_numpy_integers_and_negative_axes():
    a = A[0]
    np.testing.assert_array_equal(F.transpose(a, (np.int64(-1), 0)).data, a.T)
    np.testing.assert_array_equal(Variable(a).transpose(-1, np.int32(-2)).data, a.T)
    assert F.expand_dims(a, np.int64(-1)).shape == np.expand_dims(a, -1).shape == (3, 4, 1)


@pytest.mark.parametrize(
    "x_shape, shape, why",
    [
        ((2, 3), (-1, -1), "only one axis can be -1 (inferred from the others), and 2 are"),
        (
            (0, 3),
            (0, -1),
            "the -1 cannot be inferred beside an axis of length 0: give every length",
        ),
        ((0, 4), (3, 0, -1), "the -1 cannot be inferred beside an axis of length 0: give every "),
        ((2, 3), (4, -1), "the number of elements must stay the same"),
    ],
)
def test_a_reshape_numpy_refuses_says_why(x_shape, shape, why):
    """``(-1, -1)``, and ``(0, -1)`` of an empty array, were told "the number of elements
    must stay the same", which it does."""
    a = np.zeros(x_shape)
    with pytest.raises(ValueError):
        a.reshape(shape)
    x = Variable(a)
    for call in (lambda: F.reshape(x, shape), lambda: x.reshape(*shape)):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value).startswith(
            f"reshape: cannot reshape an array of shape {x_shape} ({a.size} elements) into "
            f"shape {shape}; {why}"
        )
        assert x.creator is None and x.shape == x_shape
