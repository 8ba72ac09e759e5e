"""The backend seen through zerograd: found by entry point, classifying, converting, computing."""

from __future__ import annotations

import subprocess
import sys

import array_api_strict
import numpy as np
import pytest
from zerograd_arrayapi import ArrayApiStrictBackend

import zerograd
import zerograd.functions as F
from zerograd.backends import backend_of, get_array_module, list_backends
from zerograd.testing import check_backward


def test_found_through_the_entry_point(backend):
    assert isinstance(backend, ArrayApiStrictBackend)
    row = next(r for r in list_backends() if r.name == "arrayapi")
    assert (row.plugin, row.distribution, row.device, row.available) == (
        "arrayapi",
        "zerograd-arrayapi-example",
        "cpu",
        True,
    )
    assert row.version == array_api_strict.__version__


def test_owns_by_type_module_only(backend):
    assert backend.owns(type(array_api_strict.asarray([1.0])))
    for other in (np.ndarray, np.float64, list, float, zerograd.Variable):
        assert not backend.owns(other)
    lookalike = type("Array", (), {"__module__": "array_api_strictly_not"})
    assert not backend.owns(lookalike)


def test_loading_the_plugin_does_not_import_array_api_strict():
    code = (
        "import sys\n"
        "from zerograd.backends import get_backend\n"
        "b = get_backend('arrayapi')\n"
        "import numpy as np\n"
        "assert not b.owns(np.ndarray)\n"
        "print('array_api_strict' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr


def test_numpy_round_trip_copies(backend):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = backend.from_numpy(a)
    a[0, 0] = 99.0  # the backend array does not share memory with the source
    back = backend.to_numpy(x)
    assert back.dtype == np.float32 and back[0, 0] == 0.0
    back[0, 1] = 42.0  # nor with the result
    assert backend.to_numpy(x)[0, 1] == 1.0


def test_dtype_kind(backend):
    xp = backend.xp
    kinds = [backend.dtype_kind(d) for d in (xp.bool, xp.int32, xp.uint8, xp.float32, xp.complex64)]
    assert kinds == ["b", "i", "u", "f", "c"]


def test_variable_math_stays_on_the_backend(backend):
    x = zerograd.Variable(backend.from_numpy(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)))
    y = F.sum(F.tanh(x @ x.T * 0.1) + 1)
    y.backward()
    assert backend_of(y.data) is backend and backend_of(x.grad.data) is backend
    assert x.grad.dtype == backend.xp.float32
    assert get_array_module(x) is backend.xp
    assert len(x) == 2 and isinstance(y.item(), float)
    xn = np.array([[1.0, 2.0], [3.0, 4.0]])
    t = np.tanh(xn @ xn.T * 0.1)
    ref = (1 - t**2) * 0.1
    np.testing.assert_allclose(backend.to_numpy(x.grad.data), (ref + ref.T) @ xn, rtol=1e-5)


def test_get_item_with_repeated_rows_has_the_right_gradient(backend):
    idx = backend.from_numpy(np.array([0, 0, 2, 0]))
    x = backend.from_numpy(np.arange(6.0).reshape(3, 2))
    check_backward(lambda a: F.get_item(a, idx) ** 2, x, order=2)
    v = zerograd.Variable(x)
    F.sum(v[idx]).backward()
    assert backend.to_numpy(v.grad.data).tolist() == [[3.0, 3.0], [0.0, 0.0], [1.0, 1.0]]


def test_mixing_with_numpy_is_a_clear_error(backend):
    a = zerograd.Variable(backend.from_numpy(np.ones(2)))
    with pytest.raises(zerograd.backends.BackendMismatchError, match=r"arrayapi, numpy|numpy, arr"):
        _ = a + zerograd.Variable(np.ones(2))


RAW_OPERAND_CASES = {
    "numpy Variable * strict array": lambda v, a: v * a,
    "numpy Variable + strict array": lambda v, a: v + a,
    "matmul(numpy Variable, strict array)": lambda v, a: F.matmul(v, a),
    "strict Variable * numpy array": lambda v, a: zerograd.Variable(a) * np.ones(2),
}


@pytest.mark.parametrize("device", ["device1", "default"])
@pytest.mark.parametrize("op", RAW_OPERAND_CASES.values(), ids=RAW_OPERAND_CASES.keys())
def test_a_raw_array_of_the_other_backend_is_a_mismatch(op, device):
    """Met as a raw operand (its type not yet known), a strict array was handed to numpy.

    On its own device numpy's conversion failed with the library's RuntimeError; on the
    default device it was silently copied to numpy.
    """
    a = array_api_strict.asarray([1.0, 2.0])
    if device == "device1":
        a = array_api_strict.asarray(a, device=array_api_strict.Device("device1"))
    v = zerograd.Variable(np.ones(2))
    for _ in range(2):  # first sight of the type, then cached
        with pytest.raises(
            zerograd.backends.BackendMismatchError,
            match=r"^(Mul|Add|MatMul): inputs live on different backends \((numpy, arrayapi|"
            r"arrayapi, numpy); types .*\)\. Move them to one first: a Variable with x\.to\(",
        ):
            op(v, a)
    assert v.creator is None and v.data.tolist() == [1.0, 1.0]
