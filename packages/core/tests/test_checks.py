"""zerograd.checks: one rule for every argument check of zerograd and its packages.

A wrong type is a TypeError, a wrong value a ValueError; numpy integers are integers, and
bools and floats such as 2.0 are not.
"""

import math
import re

import numpy as np
import pytest

from zerograd.checks import (
    axis,
    callable_arg,
    conv_args,
    flag,
    int_like,
    integer,
    pair,
    positive_int,
    real_number,
)


def test_what_counts_as_an_int():
    for good in (3, np.int64(3), np.uint8(3), np.array(3)):
        assert int_like(good), good
    for bad in (True, np.bool_(True), 3.0, np.float64(3.0), "3", None, np.array([3]), 3 + 0j):
        assert not int_like(bad), bad


@pytest.mark.parametrize("good", [1, 7, np.int64(7), np.int32(1), np.array(2)])
def test_positive_int_accepts_python_and_numpy_integers(good):
    n = positive_int("Op", "size", good)
    assert type(n) is int and n == int(good)


@pytest.mark.parametrize("bad", [2.0, True, False, "2", None, np.float32(2), np.array([2])])
def test_positive_int_refuses_what_is_no_int_with_a_type_error(bad):
    with pytest.raises(TypeError, match=r"^Op: size must be a positive int, got .* \(\w+\)$"):
        positive_int("Op", "size", bad)


@pytest.mark.parametrize("bad", [0, -3, np.int64(0)])
def test_positive_int_refuses_small_ints_with_a_value_error(bad):
    with pytest.raises(ValueError, match=r"^Op: size must be a positive int \(>= 1\), got -?\d$"):
        positive_int("Op", "size", bad)


def test_integer_with_and_without_a_lowest_value():
    assert integer("Op", "n", -5) == -5 and integer("Op", "n", np.int8(0), low=0) == 0
    with pytest.raises(ValueError, match=r"^Op: n must be an int >= 0, got -1$"):
        integer("Op", "n", -1, low=0)
    with pytest.raises(TypeError, match=r"^Op: n must be an int >= 0, got 1.5 \(float\)$"):
        integer("Op", "n", 1.5, low=0)
    with pytest.raises(TypeError, match=r"^Op: n must be an int, got None \(NoneType\)$"):
        integer("Op", "n", None)
    with pytest.raises(ValueError, match=r"^Op: n must be a positive int \(>= 1\), got 0$"):
        integer("Op", "n", 0, low=1)  # what positive_int says


def test_real_number():
    assert real_number("Op", "lr", 1) == 1.0 and real_number("Op", "lr", np.float32(0.5)) == 0.5
    assert real_number("Op", "lr", np.array(2.0)) == 2.0
    for bad in (True, "0.1", None, 1j, [0.1], np.array(True), np.array("1.5"), np.array(1 + 0j)):
        with pytest.raises(TypeError, match=r"^Op: lr must be a real number, got "):
            real_number("Op", "lr", bad)
    with pytest.raises(ValueError, match=r"^Op: lr must be a number >= 0, got -0.1$"):
        real_number("Op", "lr", -0.1, low=0.0)
    with pytest.raises(ValueError, match=r"^Op: p must be a number in \[0, 1\], got 2$"):
        real_number("Op", "p", 2, 0.0, 1.0)
    with pytest.raises(ValueError, match=r"^Op: lr must be a number, not nan, got nan$"):
        real_number("Op", "lr", math.nan)


def test_pair_type_and_value_errors():
    assert pair(np.int64(2)) == (2, 2) and pair([1, np.int32(3)]) == (1, 3)
    for bad in (2.0, True, (1, 2.0), (True, 1), "22", None):
        with pytest.raises(TypeError, match=r"^conv: stride: expected an int or a pair of ints"):
            pair(bad, what="conv: stride")
    with pytest.raises(ValueError, match=r"^conv: stride: expected .*, got 3: \(1, 1, 1\)$"):
        pair((1, 1, 1), what="conv: stride")


def test_one_axis():
    assert axis(-1, 3, "softmax") == 2 and axis(np.int64(0), 2, "softmax") == 0
    with pytest.raises(TypeError, match=r"^softmax: axis must be an int, got 1.0$"):
        axis(1.0, 3, "softmax")
    with pytest.raises(ValueError, match=r"^softmax: axis 3 is out of range"):
        axis(3, 3, "softmax")
    with pytest.raises(ValueError, match=r"^softmax: the input is 0-d, it has no axis 0"):
        axis(0, 0, "softmax")


def test_conv_args_gives_three_pairs_and_names_what_is_out_of_range():
    assert conv_args("conv2d", 3, np.int64(2), (1, 0)) == ((3, 3), (2, 2), (1, 0))
    with pytest.raises(ValueError, match=r"^deconv2d: kernel_size \(3, 3\) and stride \(0, 1\) "
                       r"must be >= 1 and pad \(0, 0\) >= 0$"):  # fmt: skip
        conv_args("deconv2d", 3, (0, 1), 0)
    with pytest.raises(ValueError, match=r"pad \(-1, 0\) >= 0"):
        conv_args("pooling", 2, 2, (-1, 0))
    with pytest.raises(TypeError, match=r"^conv2d: stride: expected an int or a pair"):
        conv_args("conv2d", 3, 1.0, 0)


def test_a_callable_argument_is_returned_and_anything_else_named_with_its_type():
    assert callable_arg("Owner", "f", len) is len
    assert callable_arg("Owner", "f", None, optional=True) is None
    with pytest.raises(TypeError, match=r"^Owner: f must be callable, got NoneType None\.$"):
        callable_arg("Owner", "f", None)
    long = "x" * 100
    with pytest.raises(
        TypeError, match=r"^Owner: f must be callable or None \(a hint\), got str 'x{39}\.$"
    ):
        callable_arg("Owner", "f", long, optional=True, hint="a hint")


@pytest.mark.parametrize("good", [True, False, np.True_, np.bool_(False)])
def test_a_flag_is_true_or_false_numpys_included(good):
    assert flag("Owner", "download", good) is bool(good)


@pytest.mark.parametrize("bad", [1, 0, "yes", "no", None, 1.0, np.int64(1), np.array(True)])
def test_a_flag_refuses_what_is_only_truthy_or_falsy(bad):
    want = rf"^Owner: download must be True or False, got {re.escape(repr(bad))}$"
    with pytest.raises(TypeError, match=want):
        flag("Owner", "download", bad)
