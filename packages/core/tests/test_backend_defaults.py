"""Backend's defaults, written with array API standard calls, against numpy's own answers.

``_Standard`` overrides only what a plugin must supply, over numpy 2's namespace (which
follows the standard), so every other method runs its default.
"""

from __future__ import annotations

import numpy as np
import pytest

from zerograd.backends import Backend, get_backend

needs_numpy2 = pytest.mark.skipif(
    int(np.__version__.split(".")[0]) < 2, reason="numpy 1.26's namespace is not the standard's"
)
rng = np.random.default_rng(3)


class _Standard(Backend):
    name = "standard-only"

    def owns(self, array_type):
        return False

    def load_module(self):
        return np

    def to_numpy(self, x):
        return np.array(x, copy=True)

    def from_numpy(self, a):
        return np.array(a, copy=True)


B = _Standard()

INDICES = [
    ((6,), np.array([0, 1, 1, 5, 1, -1])),  # repeats, and -1 is 5 again
    ((5, 3), np.array([2, 2, 0, 2])),  # whole rows, repeated
    ((5, 3), [2, 0]),  # a list
    ((3, 4), (np.array([0, 2, 2]), np.array([1, 3, 3]))),  # repeated (row, col) pairs
    ((3, 4, 2), (slice(None), np.array([3, 3, 0]))),  # an array after a slice
    ((3, 4, 2), (np.array([1, 1]), slice(None), np.array([0, 0]))),  # arrays apart
    ((4, 3), (slice(1, 3),)),  # basic: trailing axes left out
    ((4, 3), (slice(1, 99), 2)),  # out-of-range stop, clipped as numpy does
    ((4, 3), np.array([[0, 3], [3, 3]])),  # a 2-D index
    ((2, 3), np.array([[True, False, True], [False, False, True]])),  # a boolean mask
    ((2, 3), (None, 1)),  # a new axis
    ((2, 3, 4), (Ellipsis, np.array([1, 1]))),  # an ellipsis before an array
]


@needs_numpy2
@pytest.mark.parametrize("shape, index", INDICES, ids=[str(i) for i in range(len(INDICES))])
def test_default_getitem_follows_numpy(shape, index):
    a = rng.standard_normal(shape)
    np.testing.assert_array_equal(B.getitem(a, index), a[index])


@pytest.mark.parametrize("shape, index", INDICES, ids=[str(i) for i in range(len(INDICES))])
def test_default_scatter_add_is_numpys_add_at_and_returns_a_new_array(shape, index):
    a = rng.standard_normal(shape)
    values = rng.standard_normal(a[index].shape)
    expected = a.copy()
    np.add.at(expected, index, values)
    before = a.copy()
    np.testing.assert_allclose(B.scatter_add(a, index, values), expected, rtol=1e-12)
    np.testing.assert_array_equal(a, before)


@needs_numpy2
@pytest.mark.parametrize(
    "index, expected",
    [
        (slice(-5, 0, -1), []),  # starts before the axis, walks backwards: nothing
        (slice(-7, -5, -2), []),
        (slice(-4, None, -1), [0.0]),  # -4 is 0 on 4 elements: just the first
        (slice(-5, None, -1), []),
        (slice(9, -9, -2), [3.0, 1.0]),  # both bounds outside: the whole axis backwards
        (slice(2, -9, -1), [2.0, 1.0, 0.0]),
    ],
)
def test_default_getitem_clips_negative_step_slices_as_numpy(index, expected):
    # slice.indices gives start -1 for a backwards slice that starts before the axis; as a
    # slice, -1 is the last element, which picked [3.] instead of nothing
    a = np.arange(4.0)
    assert B.getitem(a, index).tolist() == expected
    assert B.getitem(a[:, None], (index, 0)).tolist() == expected


@pytest.mark.parametrize("index", [Ellipsis, (), (Ellipsis,)])
def test_default_getitem_takes_a_lone_ellipsis_and_the_empty_tuple(index):
    # x[...] and x[()] select everything; they raised "an index can only have a single
    # ellipsis" (the standard form got two)
    a = np.arange(6.0).reshape(2, 3)
    assert B.getitem(a, index).tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert B.getitem(np.array(7.0), index).tolist() == 7.0
    expected = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert B.scatter_add(np.ones((2, 3)), index, a).tolist() == expected


@pytest.mark.parametrize(
    "index, shape", [([], (0, 3)), ([[]], (1, 0, 3)), ((slice(None), []), (2, 0)), (([], 0), (0,))]
)
def test_default_getitem_takes_empty_lists_as_numpy(index, shape):
    # numpy reads [] as no positions; the default made it a float array and raised
    a = np.arange(6.0).reshape(2, 3)
    got = B.getitem(a, index)
    assert got.shape == shape == a[index].shape
    assert B.scatter_add(np.ones((2, 3)), index, got).tolist() == np.ones((2, 3)).tolist()


def test_default_getitem_names_the_shape_of_a_bad_index():
    with pytest.raises(IndexError, match=r"on shape \(3,\)"):
        B.getitem(np.zeros(3), np.array([3]))


@needs_numpy2
def test_default_astype_takes_names_numpy_types_and_dtypes():
    a = np.arange(3)
    for dtype in ("float32", np.float32, np.dtype("float32"), float):
        out = B.astype(a, dtype)
        assert out.dtype == (np.float64 if dtype is float else np.float32)
        assert out is not a
    with pytest.raises(TypeError, match="no dtype 'complex512'"):
        B.resolve_dtype("complex512")


@needs_numpy2
def test_default_dtype_kind_asks_isdtype():
    kinds = [B.dtype_kind(np.dtype(d)) for d in ("bool", "int8", "uint16", "float32", "complex64")]
    assert kinds == ["b", "i", "u", "f", "c"]


@pytest.mark.parametrize("method, args", [("randn", (2,)), ("rand", (2,)), ("permutation", (3,))])
def test_random_numbers_are_required_and_say_what_to_implement(method, args):
    with pytest.raises(NotImplementedError, match=rf"'standard-only' .*Backend\.{method}"):
        getattr(B, method)(*args)


def test_assign_writes_in_place():
    target = np.zeros(3)
    B.assign(target, np.arange(3.0))
    assert target.tolist() == [0.0, 1.0, 2.0]


def test_numpy_backend_draws_from_numpys_global_state():
    b = get_backend("numpy")
    np.random.seed(5)
    expected = (np.random.randn(2, 3), np.random.rand(4), np.random.permutation(6))
    np.random.seed(5)
    got = (b.randn(2, 3, dtype="float32"), b.rand(4), b.permutation(6))
    np.testing.assert_array_equal(got[0], expected[0].astype(np.float32))
    assert got[0].dtype == np.float32
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[2], expected[2])
    assert isinstance(b.rand(), np.ndarray) and b.rand().shape == ()  # 0-d, not a float


def test_numpy_backend_namespace_is_numpy_itself_on_numpy_2():
    xp = get_backend("numpy").xp
    if int(np.__version__.split(".")[0]) >= 2:
        assert xp is np
    else:  # numpy 1.26 lacks standard names (concat, permute_dims, astype): the compat layer
        assert xp.__name__ == "array_api_compat.numpy" and xp.random is np.random
    for name in ("concat", "permute_dims", "astype", "isdtype", "take", "expand_dims"):
        assert callable(getattr(xp, name)), name


# -- in-place arithmetic: Backend.writable and Backend.compute_into --------------------------
UFUNCS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide}


@needs_numpy2
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", list(UFUNCS))
def test_default_compute_into_writes_the_bits_numpys_ufunc_writes(op, dtype):
    x1 = rng.standard_normal((3, 4)).astype(dtype)
    x2 = rng.standard_normal((3, 4)).astype(dtype) + 3.0
    for operand in (x2, 0.37):  # an array, and a Python float (its dtype must not widen)
        out = np.full((3, 4), np.nan, dtype)
        kept = x1.copy()
        B.compute_into(op, x1, operand, out=out)
        np.testing.assert_array_equal(out, UFUNCS[op](x1, operand))
        assert out.dtype == dtype
        np.testing.assert_array_equal(x1, kept)  # only out was written
    expected = UFUNCS[op](x1, x2)
    B.compute_into(op, x1, x2, out=x1)  # out may be an operand
    np.testing.assert_array_equal(x1, expected)


@needs_numpy2
def test_default_compute_into_takes_sqrt_with_one_operand():
    x = rng.random(5, dtype=np.float32)
    out = np.empty_like(x)
    B.compute_into("sqrt", x, out=out)
    np.testing.assert_array_equal(out, np.sqrt(x))


@needs_numpy2
def test_default_compute_into_names_the_ops_it_takes():
    out = np.zeros(2)
    with pytest.raises(ValueError, match=r"compute_into got op='power'; it takes one of \['add'"):
        B.compute_into("power", out, 2.0, out=out)
    assert out.tolist() == [0.0, 0.0]


class _ReadOnlyArray(np.ndarray):
    """Stands for an immutable array type (JAX's): writing into one raises."""


def _read_only_zeros(shape, dtype=None, device=None):
    a = np.zeros(shape, dtype).view(_ReadOnlyArray)
    a.flags.writeable = False
    return a


class _Immutable(_Standard):
    name = "immutable"

    def load_module(self):
        import types

        return types.SimpleNamespace(zeros=_read_only_zeros, add=np.add)


@needs_numpy2
def test_default_writable_asks_once_per_type_without_touching_the_array():
    b = _Standard()
    x = np.arange(3.0)
    x.flags.writeable = False  # the default asks about the type, not this array
    assert b.writable(x) is True
    assert b._writable_types == {np.ndarray: True}
    assert x.tolist() == [0.0, 1.0, 2.0]


@needs_numpy2  # numpy 1.26 arrays have no .device: the probe would fail for that reason
def test_default_writable_is_false_for_an_immutable_type_and_compute_into_refuses_it():
    b = _Immutable()
    x = _read_only_zeros((2,))
    assert b.writable(x) is False
    with pytest.raises(ValueError, match="read-only"):
        b.compute_into("add", x, 1.0, out=x)
    assert x.tolist() == [0.0, 0.0]


def test_numpy_backend_writes_in_place_with_out_and_knows_read_only_arrays():
    b = get_backend("numpy")
    x = np.arange(4.0, dtype=np.float32)
    view = b.broadcast_to(x, (2, 4))
    assert b.writable(x) is True and b.writable(view) is False
    out = np.empty_like(x)
    b.compute_into("divide", x, 3.0, out=out)
    np.testing.assert_array_equal(out, np.divide(x, 3.0))
    b.compute_into("sqrt", x, out=x)
    np.testing.assert_array_equal(x, np.sqrt(np.arange(4.0, dtype=np.float32)))


SUM_TO = [
    ((4, 3), (3,)),  # a bias gradient: the leading axis
    ((4, 3), (1, 3)),
    ((4, 3), (4, 1)),
    ((2, 4, 3), (4, 1)),  # a leading axis and an inner 1
    ((4, 3), ()),  # everything: a 0-d array, not a library scalar
    ((4, 3), (1, 1)),
    ((4, 3), (4, 3)),  # nothing to sum: the array itself
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "bool"])
@pytest.mark.parametrize("x_shape, shape", SUM_TO)
def test_sum_to_default_and_numpys_give_numpys_keepdims_sum(x_shape, shape, dtype):
    x = (rng.standard_normal(x_shape) * 50).astype(dtype)
    lead = len(x_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and x_shape[i + lead] != 1
    )
    want = np.sum(x, axis=axes, keepdims=True).reshape(shape) if axes else x
    # the default asks the dtype's kind with xp.isdtype, which numpy 1.26's namespace lacks
    standard = (B,) if int(np.__version__.split(".")[0]) >= 2 else ()
    for backend in (*standard, get_backend("numpy")):
        got = backend.sum_to(x, shape)
        assert type(got) is np.ndarray, backend.name
        assert (got.shape, got.dtype) == (want.shape, want.dtype), backend.name
        assert got.tobytes() == want.tobytes(), backend.name
        if not axes:
            assert got is x
