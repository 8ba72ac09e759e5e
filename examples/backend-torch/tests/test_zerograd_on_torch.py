"""zerograd's own behaviour on torch tensors: messages name shapes as tuples, and float64
results are computed in float64 although PyTorch's default float is float32."""

from __future__ import annotations

import numpy as np
import pytest

import zerograd
import zerograd.functions as Fc
from zerograd.backends import as_array_of, as_numpy

pytest.importorskip("zerograd_nn", reason="zerograd-nn is not installed here")
import zerograd_nn.functional as F  # noqa: E402
from zerograd_nn import initializers as I  # noqa: E402


def _t(a, dtype="float64"):
    return as_array_of(np.asarray(a, dtype=dtype), "torch")


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: float(zerograd.Variable(_t([1.0, 2.0]))), r"got shape \(2,\); reduce it"),
        (lambda: Fc.reshape(_t(np.zeros((2, 3))), (4, 2)), r"shape \(2, 3\) \(6 elements\)"),
        (lambda: Fc.max(_t(np.zeros((0, 3))), axis=0), r"max: the input of shape \(0, 3\) has"),
        (lambda: Fc.matmul(_t(np.zeros((2, 3))), _t(np.zeros((2, 3)))), r"shapes \(2, 3\) and"),
        (lambda: F.linear(_t(np.zeros((4, 3))), _t(np.zeros((2, 2)))), r"x of shape \(4, 3\) and"),
        (
            lambda: F.softmax_cross_entropy(_t(np.zeros((0, 3))), _t([], "int64")),
            r"scores x of shape \(0, 3\) hold no rows",
        ),
    ],
)
def test_errors_name_shapes_as_tuples_not_torch_size(backend, call, message):
    with pytest.raises((ValueError, TypeError), match=message) as info:
        call()
    assert "torch.Size" not in str(info.value)


def test_mean_of_nothing_warns_with_a_tuple_shape(backend):
    with pytest.warns(RuntimeWarning, match=r"mean: mean of empty slice \(input of shape \(0,\)\)"):
        assert np.isnan(as_numpy(Fc.mean(_t(np.zeros(0)))))


@pytest.mark.parametrize("shape", [(5, 5), (3, 8), (8, 3)])
def test_orthogonal_float64_is_orthonormal_to_float64_precision(backend, shape):
    backend.seed(0)
    w = as_numpy(I.Orthogonal(scale=2.0)(shape, "float64", backend))
    assert w.dtype == np.float64
    gram = w @ w.T if shape[0] <= shape[1] else w.T @ w
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(shape)), atol=1e-12)


LABEL_DTYPES = ["uint8", "int8", "int16", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("dtype", LABEL_DTYPES)
def test_labels_of_any_integer_dtype_give_numpys_loss(backend, dtype):
    # PyTorch reads a uint8 index as a mask (three labels 1 of 3 classes picked the
    # diagonal: a wrong loss, silently), refuses int8 and int16 indices and has no min or
    # max for uint16..uint64 (the labels' range check)
    x = np.random.default_rng(0).standard_normal((3, 3))
    t = np.array([1, 1, 1], dtype)
    ref = zerograd.Variable(x)
    F.softmax_cross_entropy(ref, t.astype(np.int64)).backward()
    for loss in (F.softmax_cross_entropy, F.softmax_cross_entropy_simple):
        v = zerograd.Variable(_t(x))
        y = loss(v, _t(t, dtype))
        y.backward()
        np.testing.assert_allclose(as_numpy(y), as_numpy(loss(x, t)), rtol=1e-12)
        np.testing.assert_allclose(as_numpy(v.grad), ref.grad.data, rtol=1e-12)
    assert float(F.accuracy(_t(x), _t(t, dtype)).data) == float(F.accuracy(x, t).data)
    with pytest.raises(ValueError, match=r"labels must be class ids in 0\.\.2 .*from 1 to 3"):
        F.softmax_cross_entropy(_t(x), _t([1, 3, 1], dtype))


@pytest.mark.parametrize("dtype", LABEL_DTYPES)
def test_ids_of_any_integer_dtype_embed_as_on_numpy(backend, dtype):
    W = np.arange(12.0).reshape(4, 3)
    ids = np.array([[3, 0], [3, 3]], dtype)
    w = zerograd.Variable(_t(W))
    y = F.embed_id(_t(ids, dtype), w)
    F.sum(y * y).backward()
    ref = zerograd.Variable(W)
    F.sum(F.embed_id(ids, ref) ** 2).backward()
    np.testing.assert_array_equal(as_numpy(y), W[ids])
    np.testing.assert_array_equal(as_numpy(w.grad), ref.grad.data)
    with pytest.raises(ValueError, match=r"embed_id: id 4 is out of range"):
        F.embed_id(_t([0, 4], dtype), w)


@pytest.mark.parametrize("dtype", LABEL_DTYPES)
def test_second_order_gradient_with_labels_of_any_integer_dtype(backend, dtype):
    x = np.random.default_rng(1).standard_normal((3, 4))
    grads = []
    for v, t in ((zerograd.Variable(x), np.array([3, 0, 3])), (zerograd.Variable(_t(x)), None)):
        t = _t([3, 0, 3], dtype) if t is None else t
        F.softmax_cross_entropy(v, t).backward(create_graph=True)
        g = v.grad
        v.cleargrad()
        F.sum(g * g).backward()
        grads.append(as_numpy(v.grad))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


@pytest.mark.parametrize(
    "dx, dw", [("float64", "float32"), ("float32", "float64"), ("float16", "float32")]
)
@pytest.mark.parametrize("shapes", [((2, 3), (3, 4)), ((5, 2, 3), (3, 4)), ((3,), (3, 4))])
def test_matmul_of_two_float_dtypes_promotes_as_on_numpy(backend, dx, dw, shapes):
    # PyTorch's @ promotes no dtypes ("expected m1 and m2 to have the same dtype"); the
    # standard's matmul, and numpy's, give the wider one
    rng = np.random.default_rng(0)
    x, w = (rng.standard_normal(s) for s in shapes)
    x, w = x.astype(dx), w.astype(dw)
    results = []
    for make in (np.asarray, lambda a: _t(a, a.dtype)):
        vx, vw = zerograd.Variable(make(x)), zerograd.Variable(make(w))
        for y in (
            Fc.matmul(vx, vw),
            vx @ vw,
            F.linear_simple(vx, vw) if len(shapes[0]) == 2 else vx @ vw,
        ):
            F.sum(y * y).backward(create_graph=True)
        gx = vx.grad
        vx.cleargrad()
        F.sum(gx).backward()  # the double backward's products mix the dtypes too
        results.append([as_numpy(a) for a in (y, gx, vw.grad, vx.grad)])
    for got, ref in zip(*results[::-1]):
        assert got.dtype == ref.dtype == np.result_type(dx, dw)
        np.testing.assert_allclose(got, ref, rtol=1e-6 if ref.dtype == np.float64 else 1e-3)


def test_nonfinite_gradients_are_counted_on_torch(backend):
    # nonfinite_grads read g.size, a method on a tensor: int() of it raised a TypeError
    from zerograd_nn.finite import NonFiniteError, check_finite_grads, nonfinite_grads
    from zerograd_nn.layers import Linear

    layer = Linear(3, in_size=2).to("torch")
    grads = {"W": np.array([[1.0, np.nan, 0.0], [np.inf, 2.0, 3.0]]), "b": np.zeros(3)}
    for name, g in grads.items():
        p = getattr(layer, name)
        p.grad = zerograd.Variable(_t(g, "float32"))
    assert nonfinite_grads(layer) == [("W", 2, 6)]
    with pytest.raises(NonFiniteError, match=r"gradient of 'W' \(shape \(2, 3\)\) holds 2 nan"):
        check_finite_grads(layer)


@pytest.mark.parametrize("dx, dw", [("float16", "float32"), ("float32", "float16")])
def test_linear_of_float16_and_float32_promotes_as_on_numpy(backend, dx, dw):
    # array-api-compat promotes the standard's dtypes in matmul, not float16: a float16
    # batch into a float32 layer failed with "expected m1 and m2 to have the same dtype"
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), rng.standard_normal(2)
    results = []
    for make in (lambda a, d: np.asarray(a, d), _t):
        vx, vw, vb = (zerograd.Variable(make(a, d)) for a, d in ((x, dx), (w, dw), (b, dw)))
        y = F.linear(vx, vw, vb)
        F.sum(y * y).backward()
        results.append([as_numpy(a) for a in (y, vx.grad, vw.grad, vb.grad)])
    for got, ref in zip(*results[::-1]):
        assert got.dtype == ref.dtype
        np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_a_python_int_beyond_the_dtype_acts_as_on_numpy(backend, dtype):
    # PyTorch refuses to make 300 an int8 with a RuntimeError of its own, which zerograd's
    # numpy-2 rules (divide by it, compare with it exactly) did not recognise
    a = np.array([0, 5, 100], dtype)
    # integer division gives PyTorch's default float (float32), as x / 2 does there
    quotient = as_numpy(zerograd.Variable(_t(a, dtype)) / 2).dtype
    for op in (lambda x: x / 300, lambda x: 300 / (x + 1), lambda x: x < 300, lambda x: x >= -1):
        got, ref = op(zerograd.Variable(_t(a, dtype))), op(zerograd.Variable(a))
        got, ref = as_numpy(got), as_numpy(ref)
        np.testing.assert_allclose(got, ref, rtol=1e-6)
        assert got.dtype == (quotient if ref.dtype.kind == "f" else ref.dtype)
    x = zerograd.Variable(_t(a, dtype))
    with pytest.raises(OverflowError, match=rf"Python integer 300 out of bounds for {dtype}"):
        x + 300
    assert x.creator is None
