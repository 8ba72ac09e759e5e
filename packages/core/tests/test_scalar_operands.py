"""Python numbers and raw arrays as operands: the values, dtypes and errors numpy gives.

zerograd converts a repeated Python number once per backend, dtype and value, and shares
the array (where the backend allows it): these tests check that the sharing never shows.
"""

import struct
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import zerograd.arrays
import zerograd.functions as F
from zerograd import Function, Variable, as_array
from zerograd.backends import as_numpy
from zerograd.testing.interleave import paused_thread


def _bits(a):
    return np.asarray(a, np.float64).view(np.uint64).tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("first, second", [(0.0, -0.0), (-0.0, 0.0)])
def test_signed_zeros_are_two_operands(first, second, dtype, arr):
    values = np.array([1.0, -2.0], dtype)
    x = Variable(arr(values, dtype))
    with np.errstate(divide="ignore"):  # the infinities' signs tell the zeros apart
        np.testing.assert_array_equal(as_numpy(1 / (x * first)), 1 / (values * first))
        want = 1 / (values * second)
        got = as_numpy(1 / (x * second))
    assert got.tolist() == want.tolist() and got.dtype == want.dtype
    assert (
        np.signbit(as_numpy(x * 0.0 * second)).tolist()
        == np.signbit(values * 0.0 * second).tolist()
    )


def test_nan_payloads_are_kept(arr):
    quiet = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000))[0]
    payload = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000123))[0]
    negative = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000456))[0]
    values = np.array([0.0, 0.0])
    x = Variable(arr(values))
    for nan in (quiet, payload, negative, quiet):
        assert _bits(as_numpy(x + nan)) == _bits(values + nan)


# x * s for s = True, 1, 1.0 (equal and hashing alike) in orders that would reuse one array
# for another if the cache keyed them as one
ORDERS = [(True, 1, 1.0), (1.0, 1, True), (1, 1.0, True)]


@pytest.mark.parametrize("dtype", ["bool", "int64", "float32", "float64"])
@pytest.mark.parametrize("order", ORDERS, ids=["bool-int-float", "float-int-bool", "int-float"])
def test_bools_ints_and_floats_give_numpys_dtype_and_value(order, dtype, backend, arr):
    if backend.name != "numpy":
        pytest.skip(f"numpy's promotion of Python numbers is the reference; got {backend.name}")
    values = np.array([1, 0, 1], dtype)
    x = Variable(arr(values, dtype))
    ops = (lambda a, s: a * s, lambda a, s: s + a, lambda a, s: a - s)
    for s in order:
        for op in ops:
            try:
                want = op(values, s)
            except TypeError:  # numpy refuses bool - bool: so does zerograd
                with pytest.raises(TypeError):
                    op(x, s)
                continue
            got = as_numpy(op(x, s))
            assert got.dtype == want.dtype, f"{dtype} with {s!r}: {got.dtype} != {want.dtype}"
            assert got.tolist() == want.tolist()
    zeros = [(0, np.int64), (False, np.bool_), (0.0, np.float64)]
    for s, _ in zeros + zeros[::-1]:
        got, want = as_numpy(x * s), values * s
        assert got.dtype == want.dtype and got.tolist() == want.tolist()


class AddsOneInPlace(Function):
    """A user's Function that (wrongly) updates its second input in place."""

    def forward(self, a, c):
        c += 1.0
        return a * c


def test_a_forward_writing_into_a_shared_number_fails_and_changes_nothing(backend, arr):
    x = Variable(arr([1.0, 2.0], "float32"))
    np.testing.assert_array_equal(as_numpy(x * 3.0), [3.0, 6.0])
    if backend.cache_scalars:  # the shared array is read-only: the write is refused
        with pytest.raises(
            ValueError,
            match=r"^AddsOneInPlace\.forward wrote into input 1, the read-only array that "
            r"zerograd makes once from the Python number 3\.0 and shares with every later "
            r"use of that number; a forward must not change its inputs: compute a new array "
            r"instead \(c = c \+ 1\.0, not c \+= 1\.0\)\.$",
        ):
            AddsOneInPlace()(x, 3.0)
    else:  # each call has its own array: the write changes that call only
        np.testing.assert_array_equal(as_numpy(AddsOneInPlace()(x, 3.0)), [4.0, 8.0])
    assert x.grad is None and x.creator is None
    for _ in range(2):
        np.testing.assert_array_equal(as_numpy(x * 3.0), [3.0, 6.0])
        np.testing.assert_array_equal(as_numpy(3.0 * x), [3.0, 6.0])
        assert as_numpy(as_array(3.0, like=x.data)).tolist() == 3.0


class WaitsThenAddsOne(Function):
    """AddsOneInPlace, whose forward lets another thread work before it writes."""

    def __init__(self, inside, done):
        self.inside, self.done = inside, done

    def forward(self, a, c):
        self.inside.set()
        assert self.done.wait(30)
        c += 1.0
        return a * c


def _shared_numbers(backend):
    if not backend.cache_scalars:
        pytest.skip(f"backend {backend.name!r} shares no Python-number operands")


def test_the_write_into_a_shared_number_is_named_after_another_thread_filled_the_table(
    backend, arr
):
    # the table of shared numbers is emptied when full; another thread's new numbers
    # emptied it between the forward's input and its write, and the error lost its words
    _shared_numbers(backend)
    inside, done = threading.Event(), threading.Event()
    x = Variable(arr([1.0, 2.0], "float64"))

    def other():
        assert inside.wait(30)
        y = Variable(arr([1.0], "float64"))
        for i in range(5000):  # more new numbers than the table holds
            y * (0.5 + i)
        done.set()

    helper = threading.Thread(target=other)
    helper.start()
    try:
        with pytest.raises(ValueError, match=r"^WaitsThenAddsOne\.forward wrote into input 1, "):
            WaitsThenAddsOne(inside, done)(x, 3.25)
    finally:
        done.set()
        helper.join(30)
    assert x.grad is None and x.creator is None


def test_the_write_into_a_shared_number_is_named_while_another_thread_uses_new_numbers(
    backend, arr
):
    # the error looks the number up among the shared ones; it read them while another
    # thread added more, and raised "dictionary changed size during iteration" instead
    # (a race: the loop gave it within its first second in two runs of three)
    _shared_numbers(backend)
    interval = sys.getswitchinterval()
    stop = threading.Event()

    def other():  # new numbers, each one shared from its first use on
        y, v = Variable(arr([1.0], "float64")), 0.5
        while not stop.is_set():
            v += 1.0
            y * v

    x = Variable(arr([1.0, 2.0], "float64"))
    helper = threading.Thread(target=other)
    sys.setswitchinterval(1e-6)  # threads take turns often
    helper.start()
    try:
        end = time.monotonic() + 2.0
        for i in range(1500):
            with pytest.raises(ValueError, match=r"^AddsOneInPlace\.forward wrote into input 1"):
                AddsOneInPlace()(x, 1000.25 + i)  # a number shared last: the end of the table
            if time.monotonic() > end:
                break
    finally:
        stop.set()
        helper.join()
        sys.setswitchinterval(interval)
    assert x.grad is None and x.creator is None


def test_converting_a_python_int_leaves_the_warning_filters_of_other_threads_alone(arr):
    # the conversion of an int for integer data ignored numpy 1's DeprecationWarning with
    # warnings.catch_warnings(), which swaps the process's filter list: a thread inside a
    # catch_warnings block of its own meanwhile put, on leaving, a list holding that
    # "ignore" back for good
    x = Variable(arr([1, 2], "int32"))

    def in_asarray(frame, event, arg):  # the backend's asarray, called by the conversion
        caller = frame.f_back
        return (
            event == "call"
            and frame.f_code.co_name == "asarray"
            and caller is not None
            and caller.f_code.co_filename == zerograd.arrays.__file__
        )

    before = list(warnings.filters)
    with paused_thread(lambda: x + 1234577, in_asarray) as release:  # a number met first
        with warnings.catch_warnings():  # another thread's block, around the conversion's end
            release()
    assert warnings.filters == before


def test_shared_numbers_are_read_only_on_numpy():
    x = Variable(np.ones(2, np.float32))
    c = as_array(2.5, like=x.data)
    assert c is as_array(2.5, like=x.data)  # shared: made once
    assert not c.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        c[...] = 7.0
    assert c.tolist() == 2.5


OBJECT_OPERANDS = {
    "x * object array": lambda x, o: x * o,
    "object array - x": lambda x, o: o - x,
    "F.exp(object array)": lambda x, o: F.exp(o),
}


@pytest.mark.parametrize("call", OBJECT_OPERANDS.values(), ids=OBJECT_OPERANDS.keys())
def test_an_object_array_operand_is_refused_every_time(call):
    x = Variable(np.array([1.0, 2.0]))
    o = np.array([1.0, 2.0], dtype=object)  # numpy would compute with it
    for _ in range(3):  # the array type is cached after the first: still refused
        with pytest.raises(TypeError, match=r"^(Mul|Sub|Exp): input [01] has dtype object, "):
            call(x, o)
    assert x.grad is None and x.creator is None
    np.testing.assert_array_equal(x.data, [1.0, 2.0])


def test_as_array_refuses_an_object_array_every_time():
    o = np.array([1.0, 2.0], dtype=object)
    for like in (None, np.ones(1)):
        for _ in range(2):
            with pytest.raises(TypeError, match=r"^got array\(\[1\.0, 2\.0\], dtype=object\) "):
                as_array(o, like=like)


COMPLEX_OPS = [
    ("x * c", lambda a, c: a * c),
    ("c * x", lambda a, c: c * a),
    ("x + c", lambda a, c: a + c),
    ("c - x", lambda a, c: c - a),
    ("x / c", lambda a, c: a / c),
    ("c / x", lambda a, c: c / a),
    ("x ** c", lambda a, c: a**c),
]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "int8", "bool"])
@pytest.mark.parametrize("name, f", COMPLEX_OPS, ids=[c[0] for c in COMPLEX_OPS])
def test_a_python_complex_is_weak_as_a_python_float_is(name, f, dtype, backend, arr):
    """A Python complex takes the precision of the floats next to it (numpy 2's rule, NEP
    50): float16 and float32 data give complex64, float64 data complex128."""
    if backend.name != "numpy":
        pytest.skip(f"numpy's promotion of Python numbers is the reference; got {backend.name}")
    values = np.array([1, 2, 3], dtype)
    c = 1.5 - 0.25j
    x = Variable(arr(values, dtype))
    y = f(x, c)
    want = f(values, c)
    assert as_numpy(y).dtype == want.dtype, f"{dtype} {name}: {y.dtype} != {want.dtype}"
    np.testing.assert_allclose(as_numpy(y), want, rtol=1e-3 if dtype == "float16" else 1e-6)
    if dtype in ("float32", "float16"):
        F.sum(y).backward()  # a real input through a complex output: the complex derivative
        assert x.grad.dtype == np.complex64
        a = values.astype(np.float64)
        eps = 1e-6  # the derivative of f at a, in complex128, by a central difference
        expected = (f(a + eps, c) - f(a - eps, c)) / (2 * eps)
        np.testing.assert_allclose(
            as_numpy(x.grad), expected, rtol=1e-2 if dtype == "float16" else 1e-5
        )


NUMPY_SCALARS = [np.float64(2.5), np.complex128(1.5 - 0.25j), np.float32(2.5), np.int64(3)]


@pytest.mark.parametrize("dtype", ["float16", "float32", "complex64", "int8"])
@pytest.mark.parametrize("s", NUMPY_SCALARS, ids=lambda s: type(s).__name__)
def test_a_numpy_scalar_operand_keeps_its_dtype(s, dtype, backend, arr):
    """A numpy scalar is a 0-d array, not a Python number, even where its type subclasses
    one (np.float64 is a float, np.complex128 a complex): it promotes as the installed
    numpy's do (numpy 2: float32 data times np.float64(2.5) is float64)."""
    if backend.name != "numpy":
        pytest.skip(f"numpy's promotion of numpy scalars is the reference; got {backend.name}")
    values = np.array([1, 2, 3], dtype)
    x = Variable(arr(values, dtype))
    for name, f in COMPLEX_OPS:
        with np.errstate(all="ignore"):
            want = f(values, s)
            got = as_numpy(f(x, s))
        assert got.dtype == want.dtype, f"{dtype} {name} {s!r}: {got.dtype} != {want.dtype}"
        np.testing.assert_allclose(got, want, rtol=1e-3 if dtype == "float16" else 1e-6)
    assert as_array(s, like=arr(values, dtype)).dtype == s.dtype
