"""The backend conformance suite: the behaviour contract every backend plugin must meet.

Run it against an installed backend with pytest::

    ZEROGRAD_CONFORMANCE_BACKEND=mybackend pytest --pyargs zerograd.testing.conformance

or import it into a test module of your plugin (``from zerograd.testing.conformance import *``)
and set the environment variable in a ``conftest.py``. The suite needs numpy (the reference)
and pytest.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Parameter, Variable, func, no_grad, static_graph
from zerograd.backends import (
    Backend,
    BackendMismatchError,
    as_array_of,
    backend_of,
    contract,
    device_of,
    get_array_module,
    get_backend,
    list_backends,
)
from zerograd.testing import check_backward
from zerograd.utils import data_of

_rng = np.random.default_rng(7)


@pytest.fixture(scope="module")
def backend():
    """Return the backend under test (ZEROGRAD_CONFORMANCE_BACKEND, else ZEROGRAD_TEST_BACKEND)."""
    name = os.environ.get("ZEROGRAD_CONFORMANCE_BACKEND") or os.environ.get(
        "ZEROGRAD_TEST_BACKEND", "numpy"
    )
    b = get_backend(name)
    if not b.is_available():
        pytest.skip(f"backend {name!r} is installed but unavailable: {b.unavailable_reason()}")
    return b


def _put(backend, values, dtype="float64"):
    return backend.from_numpy(np.asarray(values, dtype=dtype))


def _np(backend, x):
    return backend.to_numpy(data_of(x))


# -- registration and classification ---------------------------------------------------------
def test_listed_with_version(backend):
    """The backend is listed by ``list_backends()``, available, with a version and a device."""
    rows = {r.name: r for r in list_backends()}
    assert backend.name in rows
    assert rows[backend.name].available
    assert rows[backend.name].version not in ("", "-")
    assert backend.device in ("cpu", "gpu")


def test_owns_its_arrays_and_no_foreign_ones(backend):
    """``owns`` claims the backend's arrays and refuses lists, floats and Variables."""
    for foreign in (list, float, Variable):
        assert not backend.owns(foreign), (
            f"backend {backend.name!r}: owns({foreign.__name__}) is True; owns(array_type) "
            f"must claim this backend's array types only"
        )
    a = _put(backend, [1.0, 2.0])
    assert backend.owns(type(a)), (
        f"backend {backend.name!r}: owns({type(a).__qualname__}) is False for an array of its "
        f"own from_numpy()"
    )
    assert backend_of(a) is backend
    assert get_array_module(a) is backend.xp


def test_arrays_have_the_standard_attributes(backend):
    """The backend's arrays have ``shape`` (a tuple of ints), ``ndim`` and ``dtype``."""
    a = _put(backend, np.zeros((2, 3)))
    missing = [n for n in ("shape", "ndim", "dtype") if not hasattr(a, n)]
    assert not missing, (
        f"backend {backend.name!r}: its arrays ({type(a).__qualname__}) lack {missing}, which "
        f"the array API standard gives every array and zerograd reads"
    )
    assert tuple(a.shape) == (2, 3) and a.ndim == 2, (
        f"backend {backend.name!r}: from_numpy of a (2, 3) array has shape {a.shape!r}, "
        f"ndim {a.ndim!r}"
    )


def test_numpy_round_trip_keeps_values_and_dtype(backend):
    """``from_numpy`` then ``to_numpy`` gives back the values, shape and dtype."""
    for dtype in ("float32", "float64", "int64"):
        ref = np.arange(6, dtype=dtype).reshape(2, 3)
        back = backend.to_numpy(backend.from_numpy(ref))
        assert isinstance(back, np.ndarray), (
            f"backend {backend.name!r}: to_numpy(x) gave {type(back).__qualname__}, not a "
            f"numpy.ndarray"
        )
        assert back.dtype == ref.dtype and back.shape == (2, 3), (
            f"backend {backend.name!r}: from_numpy then to_numpy of a {dtype} array of shape "
            f"(2, 3) gave {back.dtype} of shape {back.shape}"
        )
        np.testing.assert_array_equal(back, ref)


def test_asarray_and_astype(backend):
    """``asarray`` and ``astype`` produce the dtype asked for."""
    a = backend.asarray([1, 2, 3], dtype=backend.to_numpy(_put(backend, [0.0], "float32")).dtype)
    got = backend.to_numpy(a).dtype
    assert got == np.float32, (
        f"backend {backend.name!r}: asarray([1, 2, 3], dtype=float32) gave {got}; "
        f"Backend.asarray must follow dtype"
    )
    b = backend.astype(_put(backend, [1.5, 2.5]), backend.xp.float32)
    got = backend.to_numpy(b).dtype
    assert got == np.float32, (
        f"backend {backend.name!r}: astype(x, float32) gave {got}; Backend.astype must "
        f"return x converted to dtype"
    )


def _close(got, ref):
    """Assert ``got`` (numpy) equals ``ref`` within the precision of ``got``'s dtype.

    A backend may narrow float64 to float32, as JAX does by default.
    """
    rtol = 1e-12 if got.dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol)


# -- the contract: names on xp, Backend methods -------------------------------------------
def test_array_module_has_every_standard_name_zerograd_calls(backend):
    """The array module has every array API name that zerograd and zerograd-nn call."""
    xp = backend.xp
    missing = [n for n in contract.XP_NAMES if not hasattr(xp, n)]
    assert not missing, (
        f"backend {backend.name!r}: its array module {getattr(xp, '__name__', xp)!r} lacks "
        f"{missing}, which zerograd and zerograd-nn call. These are Python array API standard "
        f"names: return a standard namespace from load_module() (e.g. array_api_compat's "
        f"wrapper of your library) or add them to it."
    )


def test_array_module_linalg_extension_for_the_orthogonal_initializer(backend):
    """The array module has the linalg names the Orthogonal initializer needs (else skipped)."""
    linalg = getattr(backend.xp, "linalg", None)
    missing = [n for n in contract.XP_LINALG_NAMES if not hasattr(linalg, n)]
    if missing:
        pytest.skip(
            f"backend {backend.name!r}: xp.linalg lacks {missing} (the standard's optional "
            f"linalg extension): only zerograd_nn.initializers.Orthogonal needs it"
        )


@pytest.mark.parametrize("name", contract.REQUIRED_METHODS)
def test_required_backend_methods_are_implemented(backend, name):
    """The backend overrides each :class:`Backend` method every backend must implement.

    (zerograd-nn's random numbers, ``contract.NN_REQUIRED_METHODS``, are checked by
    :mod:`zerograd_nn.testing.conformance`: a backend for core alone needs none.)
    """
    mine = getattr(type(backend), name)
    assert mine is not getattr(Backend, name), (
        f"backend {backend.name!r} does not implement Backend.{name}, which every backend must."
    )


def test_a_random_state_round_trips_and_a_bad_one_changes_nothing(backend):
    """``set_random_state(random_state())`` repeats the draws.

    A state of another shape or dtype is a ValueError that leaves the generator as it was.
    """
    state = backend.random_state()
    if state is None:
        pytest.skip(
            f"backend {backend.name!r} keeps no random state of its own (random_state() is "
            f"None: a library's global state, saved elsewhere, or none to save)"
        )
    first = backend.to_numpy(backend.rand(4))
    backend.rand(3)
    backend.set_random_state(state)
    assert np.array_equal(backend.to_numpy(backend.rand(4)), first)
    now = backend.random_state()
    for bad in (now[:-1], now.astype(np.float64)):
        with pytest.raises(ValueError):
            backend.set_random_state(bad)
        assert np.array_equal(backend.random_state(), now)


def test_creation_with_device_stays_on_the_backend(backend):
    """Creation calls given ``device=device_of(a)`` make arrays of the same backend."""
    a = _put(backend, [1.0, 2.0])
    xp = backend.xp
    for made in (
        xp.zeros((2,), dtype=a.dtype, device=device_of(a)),
        xp.arange(2, dtype=a.dtype, device=device_of(a)),
        xp.asarray([1.0, 2.0], dtype=a.dtype, device=device_of(a)),
    ):
        assert backend_of(made) is backend
        assert backend_of(made + a) is backend


def test_resolve_dtype_and_dtype_kind(backend):
    """``resolve_dtype`` accepts dtype names and ``dtype_kind`` classifies them."""
    for name, kind in (("float32", "f"), ("float64", "f"), ("int64", "i")):
        dt = backend.resolve_dtype(name)
        assert backend.dtype_kind(dt) == kind, f"dtype_kind({name!r} -> {dt!r})"
        assert backend.resolve_dtype(np.dtype(name)) == dt
        a = backend.to_numpy(backend.astype(_put(backend, [1.5]), name))
        assert a.dtype.kind == kind and a.tolist() == ([1] if kind == "i" else [1.5]), (
            f"backend {backend.name!r}: astype([1.5] float64, {name!r}) gave {a.tolist()} of "
            f"dtype {a.dtype}"
        )
    a = backend.astype(_put(backend, [1.5]), "float32")
    assert backend.to_numpy(a).dtype == np.float32


@pytest.mark.parametrize(
    "shape, index",
    [
        ((5, 3), np.array([2, 2, 0])),  # rows of a matrix, repeated
        ((3, 4), (np.array([0, 2, 2]), np.array([1, 3, 3]))),
        ((4, 3), (slice(1, 99), 2)),  # out-of-range stop, clipped
        ((3, 4, 2), (slice(None), np.array([3, 3, 0]))),
    ],
)
def test_getitem_follows_numpys_rules(backend, shape, index):
    """``getitem`` gives what numpy's indexing gives."""
    a = _rng.standard_normal(shape)
    idx = tuple(
        backend.from_numpy(i) if isinstance(i, np.ndarray) else i
        for i in (index if isinstance(index, tuple) else (index,))
    )
    got = backend.getitem(_put(backend, a), idx if isinstance(index, tuple) else idx[0])
    _close(backend.to_numpy(got), a[index])


def test_assign_writes_or_refuses_with_type_error(backend):
    """``assign`` writes in place, or refuses with a TypeError."""
    target = _put(backend, [0.0, 0.0])
    try:
        backend.assign(target, _put(backend, [1.0, 2.0]))
    except TypeError:  # immutable arrays: batch_norm then asks for Variables
        assert backend.to_numpy(target).tolist() == [0.0, 0.0]
    else:
        assert backend.to_numpy(target).tolist() == [1.0, 2.0]


def test_shared_scalars_cannot_be_written(backend):
    """With ``cache_scalars``, ``read_only`` gives an array that a write cannot change.

    zerograd shares one array per repeated Python-number operand; a ``forward`` that wrote
    into it would change every later ``x * 3.0``. A backend with mutable arrays and no
    read-only flag must leave ``cache_scalars`` False.
    """
    shared = backend.read_only(backend.asarray(3.0, dtype="float32"))
    assert backend.to_numpy(shared).tolist() == 3.0
    if not backend.cache_scalars:
        return
    assert not backend.writable(shared), (
        f"{backend.name}: cache_scalars is True but read_only() returned an array that "
        f"writable() says can be written; make it read-only or set cache_scalars = False"
    )
    try:
        backend.assign(shared, backend.asarray(4.0, dtype="float32"))
    except (TypeError, ValueError):  # what immutable and read-only arrays raise
        pass
    assert backend.to_numpy(shared).tolist() == 3.0


@pytest.mark.parametrize("op", contract.IN_PLACE_OPS)
def test_compute_into_writes_numpys_result_where_writable(backend, op):
    """Where ``writable`` is true, ``compute_into`` writes numpy's result into ``out``.

    An operand may be ``out`` itself, or a Python float that keeps float32 float32. The
    function ``into_function(op)`` writes the same and returns ``out``.
    """
    x1 = _rng.random((2, 3)).astype(np.float32) + 0.5
    x2 = _rng.random((2, 3)).astype(np.float32) + 0.5
    if not backend.writable(_put(backend, np.zeros((2, 3)), "float32")):
        pytest.skip(f"{backend.name}: arrays are immutable (writable is false), so zerograd "
                    f"never calls compute_into")  # fmt: skip
    cases = [((x1,), None)] if op == "sqrt" else [((x1, x2), None), ((x1, 0.75), None)]
    if op != "sqrt":
        cases.append(((x1, x2), 0))  # out is the first operand
    ufunc = getattr(np, op)
    function = backend.into_function(op)
    for args, alias in cases:
        expected = ufunc(*args)
        for how in ("compute_into", "into_function"):
            arrays = [_put(backend, a.copy(), "float32") if not np.isscalar(a) else a for a in args]
            fresh = _put(backend, np.zeros((2, 3)), "float32")
            target = arrays[alias] if alias is not None else fresh
            if how == "compute_into":
                backend.compute_into(op, *arrays, out=target)
            else:
                assert function(*arrays, out=target) is target, "into_function returns out"
            got = backend.to_numpy(target)
            assert got.dtype == np.float32, f"{how}({op!r}, ...) wrote {got.dtype}"
            before = args[alias] if alias is not None else np.zeros((2, 3), np.float32)
            assert not np.array_equal(got, before), (
                f"backend {backend.name!r}: {how}({op!r}, ..., out=out) left out unchanged: it "
                f"must write its result into out (returning a new array is not enough)"
            )
            np.testing.assert_allclose(got, expected, rtol=1e-6, err_msg=f"{how} {op}{args!r}")
    with pytest.raises(ValueError, match="it takes one of"):
        backend.into_function("power")


def test_flatten_into_lays_arrays_end_to_end(backend):
    """``flatten_into`` makes (or, where ``writable``, fills) one 1-d array of every element.

    The arrays' elements in C order, one array after another, 0-d and empty ones included.
    """
    parts = [
        _rng.random((2, 3)).astype(np.float32),
        np.float32(0.25) * np.ones((), np.float32),
        np.zeros((0, 4), np.float32),
        _rng.random(5).astype(np.float32),
    ]
    expected = np.concatenate([p.ravel() for p in parts])
    arrays = [_put(backend, p.copy(), "float32") for p in parts]
    made = backend.to_numpy(backend.flatten_into(arrays))
    assert made.dtype == np.float32 and made.shape == (12,)
    np.testing.assert_array_equal(made, expected)
    out = _put(backend, np.zeros(12), "float32")
    if backend.writable(out):
        assert backend.flatten_into(arrays, out) is out
        np.testing.assert_array_equal(backend.to_numpy(out), expected)


# -- scatter_add -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "shape, index",
    [
        ((5,), np.array([0, 1, 1, 4, 1])),
        ((4, 3), np.array([2, 2, 0])),
        ((3, 4), (np.array([0, 2, 2]), np.array([1, 3, 3]))),
        ((4, 3), (slice(1, 3),)),
    ],
)
def test_scatter_add_accumulates_repeats_and_returns_new(backend, shape, index):
    """``scatter_add`` matches ``numpy.add.at`` and leaves its input unchanged."""
    base = _rng.standard_normal(shape)
    values_shape = base[index].shape
    values = _rng.standard_normal(values_shape)
    expected = base.copy()
    np.add.at(expected, index, values)
    a = _put(backend, base)
    idx = tuple(
        backend.from_numpy(i) if isinstance(i, np.ndarray) else i
        for i in (index if isinstance(index, tuple) else (index,))
    )
    idx = idx if isinstance(index, tuple) else idx[0]
    out = backend.scatter_add(a, idx, _put(backend, values))
    np.testing.assert_allclose(backend.to_numpy(out), expected, rtol=1e-12)
    np.testing.assert_array_equal(backend.to_numpy(a), base)  # input untouched


# -- broadcasting ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "src, dst", [((3,), (2, 3)), ((1, 3), (4, 3)), ((2, 1, 3), (2, 5, 3)), ((), (2, 2))]
)
def test_broadcast_to_and_sum_to_are_adjoint(backend, src, dst):
    """``broadcast_to`` matches numpy's and ``sum_to`` sums back over the broadcast axes."""
    x = _rng.standard_normal(src)
    b = backend.broadcast_to(_put(backend, x), dst)
    np.testing.assert_allclose(backend.to_numpy(b), np.broadcast_to(x, dst))
    g = _rng.standard_normal(dst)
    s = backend.sum_to(_put(backend, g), src)
    lead = len(dst) - len(src)
    ref = g.sum(axis=tuple(range(lead))) if lead else g
    ref = ref.sum(axis=tuple(i for i, n in enumerate(src) if n == 1), keepdims=True)
    np.testing.assert_allclose(backend.to_numpy(s), ref.reshape(src), rtol=1e-12)


# -- sums ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("axis, keepdims", [(None, False), ((0,), False), ((0, 2), True)])
def test_sum_is_the_librarys_sum_and_divides_where_asked(backend, dtype, axis, keepdims):
    """``sum`` of float32 and float64 data is ``xp.sum``, to the bit.

    Then ``/ divisor`` in that dtype, by the library's division (XLA may multiply by the
    reciprocal instead: one ulp off numpy's quotient).
    """
    x = _put(backend, _rng.standard_normal((5, 3, 4)), dtype)
    if backend.to_numpy(x).dtype != np.dtype(dtype):
        pytest.skip(f"backend {backend.name!r} holds {dtype} data as {x.dtype} (no {dtype} here)")
    assert backend.sum_dtype(x.dtype) is None
    xp = backend.xp
    want = backend.to_numpy(backend.asarray(xp.sum(x, axis=axis, keepdims=keepdims)))
    got = backend.to_numpy(backend.asarray(backend.sum(x, axis, keepdims)))
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.dtype(dtype)
    halved = backend.to_numpy(backend.asarray(backend.sum(x, axis, keepdims, divisor=5)))
    assert halved.dtype == np.dtype(dtype)
    ulp = np.finfo(dtype).eps
    np.testing.assert_allclose(halved, want / np.asarray(5, dtype), rtol=ulp, atol=0)


def test_sum_adds_float16_in_float32_and_rounds_once(backend):
    """``sum`` of float16 adds, and divides, in ``sum_dtype`` (float32), rounded once.

    A column of 10,000 float16 ones is 10,000, where float16 arithmetic stops at 2048, and a
    sum of 70,000 ones divided by 70,000 (``inf`` in float16) is 1. Skipped, saying so, on a
    backend without float16.
    """
    try:
        ones = backend.asarray(np.ones((10000, 3)), dtype="float16")
    except (TypeError, ValueError, AttributeError) as exc:
        pytest.skip(f"backend {backend.name!r} has no float16: {exc}")
    assert backend.sum_dtype(ones.dtype) == backend.resolve_dtype("float32")
    column = backend.sum(ones, (0,))
    assert backend.to_numpy(column).dtype == np.float16
    np.testing.assert_array_equal(backend.to_numpy(column), [10000.0] * 3)
    batch = backend.asarray(np.ones(70000), dtype="float16")
    mean = backend.to_numpy(backend.asarray(backend.sum(batch, None, False, divisor=70000)))
    assert mean.dtype == np.float16 and float(mean) == 1.0
    summed = backend.sum_to(ones, (1, 3))
    np.testing.assert_array_equal(backend.to_numpy(summed), [[10000.0] * 3])


# -- the engine on this backend --------------------------------------------------------------
GRAD_CASES = {
    "add_broadcast": (lambda a, b: a + b, [(2, 3), (3,)]),
    "mul": (lambda a, b: a * b, [(2, 3), (2, 3)]),
    "div": (lambda a, b: a / (b * b + 1.0), [(2, 3), (2, 3)]),
    "tanh_exp": (lambda a: F.tanh(F.exp(a * 0.5)), [(4,)]),
    "sin_cos": (lambda a: F.sin(a) * F.cos(a), [(3,)]),
    "sum_axis": (lambda a: F.sum(a * a, axis=-1, keepdims=True), [(2, 3)]),
    "matmul": (lambda a, b: F.matmul(a, b), [(2, 3), (3, 2)]),
    "batched_matmul": (lambda a, b: a @ b, [(2, 2, 3), (3, 2)]),
    "get_item_repeat": (lambda a: F.get_item(a, np.array([0, 0, 2])) ** 2, [(3, 2)]),
    "reshape_transpose": (lambda a: F.transpose(F.reshape(a, (3, 2)), (1, 0)) ** 2, [(2, 3)]),
    "max": (lambda a: F.max(a, axis=0), [(3, 4)]),
}


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_match_numerical(backend, name, order):
    """Gradients of core functions on this backend match numerical ones."""
    fn, shapes = GRAD_CASES[name]
    xs = []
    for i, s in enumerate(shapes):
        data = _rng.permutation(int(np.prod(s)) or 1).reshape(s) * 0.3 - 0.4 + i * 0.05
        xs.append(_put(backend, data))
    if name == "get_item_repeat":
        idx = backend.from_numpy(np.array([0, 0, 2]))
        fn = lambda a: F.get_item(a, idx) ** 2  # noqa: E731
    check_backward(fn, *xs, order=order)


def test_function_transforms_run_on_this_backend(backend):
    """zerograd.func's transforms run on this backend's arrays, with hand-computed values.

    They use only the backend contract: grad, hessian, jacrev, jvp and vmap (with
    per-sample gradients) give their results on this backend.
    """
    x = _put(backend, [0.5, -1.0, 2.0])
    w = _put(backend, [[1.0, 2.0], [0.5, -1.0], [3.0, 0.25]])

    def f(x):
        return F.sum(F.tanh(x @ w) ** 2) + F.sum(x**3)

    xn, wn = _np(backend, x), _np(backend, w)
    t = np.tanh(xn @ wn)
    g_ref = wn @ (2 * t * (1 - t**2)) + 3 * xn**2
    g = func.grad(f)(x)
    assert backend_of(g) is backend
    np.testing.assert_allclose(_np(backend, g), g_ref, rtol=1e-10)
    h = _np(backend, func.hessian(f)(x))
    d = 2 * (1 - t**2) * (1 - 3 * t**2)  # d^2/du^2 of tanh(u)^2
    np.testing.assert_allclose(h, wn @ np.diag(d) @ wn.T + np.diag(6 * xn), rtol=1e-9)
    np.testing.assert_allclose(_np(backend, func.jacrev(lambda v: v @ w)(x)), wn.T)
    _, tangent = func.jvp(lambda v: v @ w, (x,), (_put(backend, [1.0, 0.0, 0.0]),))
    np.testing.assert_allclose(_np(backend, tangent), wn[0])
    xs = _put(backend, [[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]])
    per_sample = _np(backend, func.vmap(func.grad(f))(xs))
    for i in range(2):
        np.testing.assert_allclose(
            per_sample[i], _np(backend, func.grad(f)(xs[i, ...])), rtol=1e-12
        )


def test_float32_stays_float32_with_python_scalars(backend):
    """float32 Variables stay float32 when combined with Python scalars."""
    x = Variable(_put(backend, [0.5, 1.5], "float32"))
    y = F.sum(F.tanh(2.0 * x + 1) / 3.0 - x**2)
    y.backward()
    assert _np(backend, y).dtype == np.float32
    assert _np(backend, x.grad).dtype == np.float32


def test_backward_ones_and_accumulation(backend):
    """``backward`` adds up the gradients of a variable used twice, on this backend."""
    x = Variable(_put(backend, [1.0, 2.0, 3.0]))
    y = x * x + x  # x used twice: gradients add up
    y.backward()
    np.testing.assert_allclose(_np(backend, x.grad), 2 * np.array([1.0, 2.0, 3.0]) + 1)
    assert backend_of(x.grad.data) is backend


def test_no_grad_records_nothing(backend):
    """Inside ``no_grad`` no graph is recorded."""
    x = Variable(_put(backend, [1.0]))
    with no_grad():
        y = x * 2.0
    assert y.creator is None


def test_mixing_backends_is_a_clear_error(backend):
    """Mixing this backend with another in one operation raises BackendMismatchError."""
    numpy_backend = get_backend("numpy")
    if backend is numpy_backend:
        pytest.skip("the numpy backend has no other backend here to mix with")
    a = Variable(_put(backend, [1.0, 2.0]))
    b = Variable(np.array([1.0, 2.0]))
    with pytest.raises(BackendMismatchError, match=r"different backends .*to_cpu\(\)"):
        _ = a + b


def test_moving_a_variable_to_numpy_and_back(backend):
    """``Variable.to`` moves data and gradient to numpy and back, keeping the values."""
    x = Variable(_put(backend, [1.0, 2.0]))
    (x * x).sum().backward()
    x.to("numpy")
    assert isinstance(x.data, np.ndarray) and isinstance(x.grad.data, np.ndarray)
    x.to(backend.name)
    assert backend_of(x.data) is backend
    np.testing.assert_allclose(_np(backend, x.grad), [2.0, 4.0])
    assert backend_of(as_array_of(np.ones(2), backend)) is backend


def test_a_static_graph_replay_gives_the_eager_bits(backend):
    """``static_graph`` replays a training step on this backend with the eager results.

    The step reads two captured Parameters (one used three times, broadcast), accumulates
    and stores their gradients; between calls the Parameters get new arrays, as an update
    on an immutable backend gives them. Losses and gradients are compared bit for bit.
    """
    values = [_rng.standard_normal((3, 2)), _rng.standard_normal(2)]
    twins = [[Parameter(_put(backend, v, "float32")) for v in values] for _ in range(2)]

    def make(W, b):
        def step(x):
            W.cleargrad()
            b.cleargrad()
            h = F.tanh(F.matmul(x, W) + b)
            loss = F.sum(h * h + h * b + F.exp(h) * b)
            loss.backward()
            return loss

        return step

    eager, static = make(*twins[0]), static_graph(make(*twins[1]))
    for _ in range(6):
        x = _put(backend, _rng.standard_normal((4, 3)), "float32")
        got, want = static(x), eager(x)
        assert _np(backend, got).tobytes() == _np(backend, want).tobytes()
        for p, q in zip(*twins):
            assert _np(backend, q.grad).tobytes() == _np(backend, p.grad).tobytes()
            p.data, q.data = p.data - 0.1 * p.grad.data, q.data - 0.1 * q.grad.data
    assert static.counts == {"eager": 1, "traced": 2, "replayed": 3}
    assert backend_of(got.data) is backend and got.creator is None
