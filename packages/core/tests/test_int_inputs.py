"""Float functions of integer (and bool) data compute in the default float dtype, never
in float16 or with truncation."""

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Variable
from zerograd.backends import as_numpy

FLOAT_FUNCS = [
    ("exp", F.exp, np.exp),
    ("log", lambda x: F.log(x + 1), lambda a: np.log(a + 1)),
    ("sin", F.sin, np.sin),
    ("cos", F.cos, np.cos),
    ("tanh", F.tanh, np.tanh),
    ("sqrt", F.sqrt, np.sqrt),
    ("div", lambda x: x / 3, lambda a: a / 3),
    ("rdiv", lambda x: 7 / (x + 1), lambda a: 7 / (a + 1)),
    ("pow 0.5", lambda x: x**0.5, np.sqrt),
    ("pow -1.5", lambda x: (x + 1) ** -1.5, lambda a: (a + 1) ** -1.5),
    ("mean", F.mean, np.mean),
    ("average axis", lambda x: F.average(x, axis=0), lambda a: np.mean(a, axis=0)),
]
INT_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64"]


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name, f, ref", FLOAT_FUNCS, ids=[c[0] for c in FLOAT_FUNCS])
def test_integer_data_computes_in_float64(name, f, ref, dtype, arr):
    values = np.array([0, 1, 1]) if dtype == "bool" else np.array([0, 3, 5])
    x = Variable(arr(values, dtype))
    y = f(x)
    assert as_numpy(y).dtype == np.float64, f"{name} of {dtype} gave {y.dtype}"
    np.testing.assert_allclose(as_numpy(y), ref(values.astype("float64")), rtol=1e-13)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int64"])
def test_gradients_of_integer_inputs_are_exact_floats(dtype, arr):
    x = Variable(arr([1, 2, 3], dtype))
    y = F.sum(F.sin(x) * F.exp(x) + F.tanh(x) + F.cos(x))
    y.backward()
    a = np.array([1.0, 2.0, 3.0])
    expected = np.cos(a) * np.exp(a) + np.sin(a) * np.exp(a) + 1 - np.tanh(a) ** 2 - np.sin(a)
    assert as_numpy(x.grad).dtype == np.float64
    np.testing.assert_allclose(as_numpy(x.grad), expected, rtol=1e-12)


def _outcome(f, a):
    """``f(a)``'s dtype and values, or its error's type and text: what to compare."""
    try:
        y = f(a)
    except (OverflowError, ValueError, TypeError) as exc:
        return type(exc).__name__, str(exc)
    y = np.asarray(y.data if isinstance(y, Variable) else y)
    return str(y.dtype), y.tolist()


INT_OVERFLOWS = [
    ("x + x", lambda x: x + x),
    ("x * x", lambda x: x * x),
    ("x * 3", lambda x: x * 3),
    ("x - 1", lambda x: x - 1),
    ("-x", lambda x: -x),
    ("x ** 3", lambda x: x**3),
    ("x + 300", lambda x: x + 300),
    ("x - 2 ** 70", lambda x: x - 2**70),
    ("x + np.int8(100)", lambda x: x + np.int8(100)),
]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64"])
@pytest.mark.parametrize("name, f", INT_OVERFLOWS, ids=[c[0] for c in INT_OVERFLOWS])
def test_integer_overflow_wraps_or_fails_as_numpy_does(name, f, dtype):
    """Integer arithmetic is numpy's: it wraps where numpy wraps, and a Python int out of
    the dtype's range fails as numpy 2's does, on numpy 1 too (numpy 1 promoted it; its
    NEP 50 "weak" promotion state, numpy 2's rules, is the reference for those cases there;
    numpy scalars promote as the installed numpy's do)."""
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, 100 if info.max > 100 else 7], dtype=dtype)
    # numpy 1.24-2.1 only; restore the state it had, not "legacy": numpy 2.0's is "weak"
    set_state = getattr(np, "_set_promotion_state", None)
    set_state = set_state if name in ("x + 300", "x - 2 ** 70") else None  # large Python ints
    with np.errstate(over="ignore"):
        got = _outcome(f, Variable(a.copy()))
        if set_state is not None:
            before = np._get_promotion_state()
            set_state("weak")
        try:
            expected = _outcome(f, a.copy())
        finally:
            if set_state is not None:
                set_state(before)
    assert got == expected, name


BEYOND_THE_DTYPE = [
    ("x / 300", lambda x: x / 300),
    ("300 / x", lambda x: 300 / x),
    ("x / -1", lambda x: x / -1),
    ("x / 2 ** 70", lambda x: x / 2**70),
    ("-(2 ** 70) / x", lambda x: -(2**70) / x),
    ("x < 300", lambda x: x < 300),
    ("x <= -1", lambda x: x <= -1),
    ("x > 2 ** 70", lambda x: x > 2**70),
    ("x >= -(2 ** 70)", lambda x: x >= -(2**70)),
    ("300 > x", lambda x: 300 > x),
    ("x + 300", lambda x: x + 300),  # numpy 2 refuses these: so does zerograd
    ("x * -1", lambda x: x * -1),
]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64"])
@pytest.mark.parametrize("name, f", BEYOND_THE_DTYPE, ids=[c[0] for c in BEYOND_THE_DTYPE])
def test_true_division_and_comparisons_take_any_python_int(name, f, dtype, backend, arr):
    """numpy 2 divides integer data by a Python int its dtype cannot hold in float64, and
    compares with one exactly (``int8 < 300`` is True); other arithmetic refuses it with
    OverflowError (numpy 2's reference: NEP 50)."""
    if backend.name != "numpy" or not np.__version__.startswith("2"):
        pytest.skip("numpy 2's promotion of Python ints is the reference")
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, 1], dtype=dtype)
    with np.errstate(divide="ignore"):  # uint8's 0 divides 2 ** 70
        got = _outcome(f, Variable(arr(a, dtype)))
        expected = _outcome(f, a)
    assert got == expected, name
    if dtype != "uint8" and name == "x / 300":  # the gradient: 1 / 300 in float64
        x = Variable(arr(a, dtype))
        F.sum(x / 300).backward()
        assert as_numpy(x.grad).dtype == np.float64
        np.testing.assert_allclose(as_numpy(x.grad), np.full(3, 1 / 300), rtol=1e-15)


def _numpy_2_promotes(backend):
    """Skip, saying why, unless the backend is numpy 2's (the reference of these tests)."""
    if backend.name != "numpy" or not np.__version__.startswith("2"):
        pytest.skip(
            f"numpy 2's promotion (NEP 50, integer with float arrays) is the reference; got "
            f"{backend.name} with numpy {np.__version__}"
        )


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_a_python_int_past_float64_fails_as_numpys(dtype, backend):
    """``x / 10 ** 400``: no float holds the number, so numpy raises, and so does zerograd
    (with numpy's message, not one from a retry)."""
    _numpy_2_promotes(backend)
    a = np.array([1, 2], dtype)
    got, expected = _outcome(lambda x: x / 10**400, Variable(a)), _outcome(lambda x: x / 10**400, a)
    assert got == expected
    assert got[0] == "OverflowError"


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint8"])
@pytest.mark.parametrize("exponent", ["array", "Variable"])
def test_integers_to_an_integer_power_of_zero_have_gradients(exponent, dtype, backend, arr):
    """``x ** e`` of integers where ``e`` holds a 0: d/dx is ``e * x ** (e - 1)``, 0 there
    (``x ** 0`` is constant), without raising numpy's "Integers to negative integer powers
    are not allowed" from ``x ** -1``."""
    _numpy_2_promotes(backend)  # d/de takes the log of integers
    a, e = np.array([2, 3, 4], dtype), np.array([0, 1, 2], dtype)
    x = Variable(arr(a, dtype))
    c = Variable(arr(e, dtype)) if exponent == "Variable" else arr(e, dtype)
    y = x**c
    np.testing.assert_array_equal(as_numpy(y), a**e)
    F.sum(y).backward()
    assert as_numpy(x.grad).dtype == (a**e).sum().dtype  # the integer sum's gradient
    np.testing.assert_array_equal(as_numpy(x.grad), [0, 1, 8])
    if exponent == "Variable":  # d/de = x ** e * log(x), in float64
        af = a.astype(np.float64)
        np.testing.assert_allclose(as_numpy(c.grad), af**e * np.log(af), rtol=1e-12)


EXPONENTS = {
    "bool": [False, True, True, False],
    "uint8": [0, 1, 2, 3],
    "int8": [0, 1, -2, -128],
    "int64": [0, 1, -2, 3],
}


@pytest.mark.parametrize("edtype", list(EXPONENTS))
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64"])
def test_a_float_to_an_integer_array_power_has_the_outputs_gradient(dtype, edtype, backend, arr):
    """``x ** e`` of floats with an integer or bool exponent array: d/dx is
    ``e * x ** (e - 1)`` in the output's dtype. ``e - 1`` was taken in ``e``'s dtype: a
    uint8 0 wrapped to 255 (``0 * 2 ** 255``, nan in float32), an int8 -128 to 127, and a
    bool's int64 ``-1`` made a float32 input's gradient float64."""
    _numpy_2_promotes(backend)
    a, e = np.array([2.0, 3.0, 0.5, 1.5]), np.array(EXPONENTS[edtype], edtype)
    if dtype == "float16" and edtype == "int8":
        e = e.clip(-10, None)  # 2 ** -129 is 0 in float16 (and in float32)
    x = Variable(arr(a, dtype))
    with np.errstate(over="raise", invalid="raise"):  # no overflow on the way
        y = x ** arr(e, edtype)
        F.sum(y).backward()
    assert x.grad.dtype == y.dtype == (a.astype(dtype) ** e).dtype
    ef = e.astype(np.float64)
    rtol = {"float16": 2e-3, "float32": 1e-6, "complex64": 1e-5}.get(dtype, 1e-14)
    np.testing.assert_allclose(as_numpy(x.grad), ef * a ** (ef - 1), rtol=rtol)


@pytest.mark.parametrize("edtype", ["uint8", "bool"])
def test_a_float_to_an_integer_variable_power_differentiates_twice(edtype, backend, arr):
    """The same under ``create_graph=True`` with the exponent a Variable: the first
    derivative ``e * x ** (e - 1)`` and the second ``e * (e - 1) * x ** (e - 2)``, float32."""
    _numpy_2_promotes(backend)
    a, e = np.array([2.0, 3.0, 0.5]), np.array([0, 1, 1] if edtype == "bool" else [0, 1, 3])
    x, c = Variable(arr(a, "float32")), Variable(arr(e, edtype))
    with np.errstate(over="raise", invalid="raise"):
        F.sum(x**c).backward(create_graph=True)
        gx = x.grad
        assert gx.dtype == np.float32
        np.testing.assert_allclose(as_numpy(gx), e * a ** (e - 1.0), rtol=1e-6)
        x.cleargrad()
        F.sum(gx).backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(as_numpy(x.grad), e * (e - 1.0) * a ** (e - 2.0), rtol=1e-6)
