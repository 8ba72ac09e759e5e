"""Real GPU checks: CuPy's results against numpy's (skipped, with the reason, without a GPU)."""

from __future__ import annotations

import importlib

import fusion_steps
import numpy as np
import pytest
from kernel_reference import GEOMETRIES, col2im_reference, im2col_reference

import zerograd
import zerograd.backends as B
import zerograd.functions as F
from zerograd import Variable
from zerograd_cupy import col2im_gpu, im2col_gpu

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cp(gpu_backend):
    return importlib.import_module("cupy")


def test_available_listed_and_enabled(gpu_backend, cp):
    assert gpu_backend.unavailable_reason() == ""
    row = {r.name: r for r in B.list_backends()}["cupy"]
    assert row.available and row.version == cp.__version__
    assert B.gpu_enable is True and B.gpu_backend() is gpu_backend
    assert gpu_backend.owns(cp.ndarray)
    # the backend's array API namespace (array_api_compat.cupy), making CuPy arrays
    xp = B.get_array_module(cp.ones(1))
    assert xp is gpu_backend.xp and type(xp.zeros(2)) is cp.ndarray


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shape, index",
    [
        ((6,), np.array([1, 0, 1, 5, 1, 1])),
        ((4, 3), np.array([3, 3, 0, 3])),
        ((3, 4), (np.array([0, 2, 2, 2]), np.array([1, 3, 3, 3]))),
        ((3, 4), (slice(None), np.array([0, 0, 2]))),
    ],
)
def test_scatter_add_with_repeats_matches_numpy(gpu_backend, cp, dtype, shape, index):
    rng = np.random.default_rng(1)
    base = rng.standard_normal(shape).astype(dtype)
    values = rng.standard_normal(base[index].shape).astype(dtype)
    expected = base.copy()
    np.add.at(expected, index, values)
    a = cp.asarray(base)
    out = gpu_backend.scatter_add(a, index, cp.asarray(values))  # numpy indices are accepted
    assert isinstance(out, cp.ndarray) and out.dtype == dtype
    rtol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(cp.asnumpy(out), expected, rtol=rtol)
    np.testing.assert_array_equal(cp.asnumpy(a), base)  # the input is left as it was


def test_variable_and_grad_round_trip(gpu_backend, cp):
    x = Variable(np.array([[1.0, -2.0], [0.5, 3.0]], dtype=np.float32))
    (F.sum(x**3)).backward()
    grad = x.grad.data.copy()
    x.to_gpu()
    assert isinstance(x.data, cp.ndarray) and isinstance(x.grad.data, cp.ndarray)
    assert x.dtype == np.float32
    x.to_cpu()
    assert isinstance(x.data, np.ndarray) and isinstance(x.grad.data, np.ndarray)
    np.testing.assert_array_equal(x.data, [[1.0, -2.0], [0.5, 3.0]])
    np.testing.assert_array_equal(x.grad.data, grad)


def _small_net(x, w, b):
    h = F.tanh(F.matmul(x, w) + b)
    picked = F.get_item(h, np.array([0, 2, 2, 1]))  # repeated rows: scatter_add in backward
    return F.sum(picked * picked) / 4.0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_backward_on_gpu_matches_cpu(gpu_backend, cp, dtype):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(dtype) for s in ((3, 4), (4, 5), (5,))]
    cpu = [Variable(a.copy()) for a in arrays]
    gpu = [Variable(cp.asarray(a)) for a in arrays]
    y_cpu, y_gpu = _small_net(*cpu), _small_net(*gpu)
    y_cpu.backward()
    y_gpu.backward()
    assert isinstance(y_gpu.data, cp.ndarray) and y_gpu.dtype == dtype
    rtol = 1e-5 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(cp.asnumpy(y_gpu.data), y_cpu.data, rtol=rtol)
    for vc, vg in zip(cpu, gpu):
        assert isinstance(vg.grad.data, cp.ndarray) and vg.grad.dtype == dtype
        np.testing.assert_allclose(cp.asnumpy(vg.grad.data), vc.grad.data, rtol=rtol, atol=1e-7)


def test_second_order_gradient_on_gpu(gpu_backend, cp):
    x = Variable(cp.asarray([0.3, -1.2]))
    y = F.sum(x**4)
    y.backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    gx.backward()
    np.testing.assert_allclose(cp.asnumpy(x.grad.data), 12 * np.array([0.3, -1.2]) ** 2)


# -- im2col / col2im kernels -------------------------------------------------------------------
@pytest.mark.parametrize("shape, k, s, p", GEOMETRIES)
def test_im2col_and_col2im_match_references(cp, shape, k, s, p):
    rng = np.random.default_rng(3)
    img = rng.standard_normal(shape)
    col = im2col_gpu(cp.asarray(img), k, s, p)
    ref = im2col_reference(img, k, s, p)
    assert col.shape == ref.shape
    np.testing.assert_array_equal(cp.asnumpy(col), ref)
    c = rng.standard_normal(ref.shape)
    back = col2im_gpu(cp.asarray(c), shape, k, s, p)
    np.testing.assert_allclose(cp.asnumpy(back), col2im_reference(c, shape, k, s, p), rtol=1e-12)
    # adjoint: <im2col(x), c> == <x, col2im(c)>
    np.testing.assert_allclose(np.vdot(ref, c), np.vdot(img, cp.asnumpy(back)), rtol=1e-10)


def test_im2col_pad_value_and_float32(cp):
    img = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    col = im2col_gpu(cp.asarray(img), 3, 2, 1, pad_value=-np.inf)
    assert col.dtype == np.float32
    np.testing.assert_array_equal(
        cp.asnumpy(col), im2col_reference(img, 3, 2, 1, pad_value=-np.inf)
    )


def test_kernel_errors_name_the_geometry(cp):
    with pytest.raises(ValueError, match=r"im2col_gpu: a kernel of \(5, 5\).*\(3, 3\)"):
        im2col_gpu(cp.zeros((1, 1, 3, 3)), 5, 1, 0)
    with pytest.raises(ValueError, match=r"col2im_gpu: patches of shape \(1, 1, 2, 2, 2, 2\)"):
        col2im_gpu(cp.zeros((1, 1, 2, 2, 2, 2)), (1, 1, 4, 4), 2, 1, 0)


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "sqrt"])
def test_compute_into_writes_into_out_what_numpy_computes(gpu_backend, cp, op):
    rng = np.random.default_rng(4)
    x1 = rng.random((3, 5)).astype(np.float32) + 0.5
    x2 = rng.random((3, 5)).astype(np.float32) + 0.5
    a, b = cp.asarray(x1), cp.asarray(x2)
    out = cp.empty_like(a)
    operands = () if op == "sqrt" else (b,)
    gpu_backend.compute_into(op, a, *operands, out=out)
    expected = getattr(np, op)(x1, *(() if op == "sqrt" else (x2,)))
    np.testing.assert_allclose(cp.asnumpy(out), expected, rtol=1e-6)
    assert gpu_backend.writable(out) is True


def test_optimizer_steps_in_place_on_gpu_as_on_cpu(gpu_backend, cp):
    from zerograd import Parameter

    optimizers = pytest.importorskip("zerograd_nn.optimizers", reason="needs zerograd-nn")
    Adam = optimizers.Adam
    p_cpu = Parameter(np.array([1.0, -2.0, 0.5], np.float32))
    p_gpu = Parameter(cp.asarray(p_cpu.data))
    data = p_gpu.data
    opts = [Adam(0.1).setup([p]) for p in (p_cpu, p_gpu)]
    for step in range(3):
        g = np.array([0.5, -0.25, 1.0], np.float32) * (step + 1)
        p_cpu.grad, p_gpu.grad = Variable(g), Variable(cp.asarray(g))
        for opt in opts:
            opt.update()
    assert p_gpu.data is data  # written in place through compute_into
    np.testing.assert_allclose(cp.asnumpy(p_gpu.data), p_cpu.data, rtol=1e-6)


def test_seed_repeats_the_draws_and_zerograd_seed_reaches_it(gpu_backend, cp):
    def draws():
        return [
            cp.asnumpy(a)
            for a in (gpu_backend.randn(3, 4), gpu_backend.rand(5), gpu_backend.permutation(8))
        ]

    gpu_backend.seed(11)
    first = draws()
    gpu_backend.seed(11)
    for a, b in zip(draws(), first):
        np.testing.assert_array_equal(a, b)
    assert sorted(first[2].tolist()) == list(range(8)) and first[2].dtype == np.int64
    zerograd.seed(11)  # seeds every available backend, this one included
    np.testing.assert_array_equal(cp.asnumpy(gpu_backend.randn(3, 4)), first[0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_draws_are_the_reference_philox_draws(gpu_backend, cp, dtype):
    from philox_reference import keys, normal, uniform

    seed = 2**40 + 3
    gpu_backend.seed(seed)
    u = gpu_backend.rand(7, 143, dtype=dtype)  # 1,001 values: offsets 0 .. 1000
    z = gpu_backend.randn(1000, dtype=dtype)  # offsets 1001 ..
    p = gpu_backend.permutation(50)
    assert u.dtype == dtype and z.dtype == dtype and u.shape == (7, 143)
    np.testing.assert_array_equal(cp.asnumpy(u).ravel(), uniform(seed, 0, 1001, dtype))
    tol = 1e-6 if dtype == "float32" else 1e-12  # CUDA's log/cos against numpy's
    np.testing.assert_allclose(cp.asnumpy(z), normal(seed, 1001, 1000, dtype), rtol=tol, atol=tol)
    np.testing.assert_array_equal(cp.asnumpy(p), np.argsort(keys(seed, 2001, 50), kind="stable"))
    assert gpu_backend.random_state().tolist() == [seed, 2051]


def test_random_state_round_trip_repeats_the_draws(gpu_backend, cp):
    gpu_backend.seed(1)
    gpu_backend.rand(10)
    state = gpu_backend.random_state()
    a = cp.asnumpy(gpu_backend.randn(4, 4, dtype="float32"))
    gpu_backend.rand(3)
    gpu_backend.set_random_state(state)
    np.testing.assert_array_equal(cp.asnumpy(gpu_backend.randn(4, 4, dtype="float32")), a)


@pytest.fixture(scope="module")
def nn_kernels(gpu_backend):
    """zerograd-nn's kernels for CuPy arrays (zerograd_cupy.nn_kernels, which needs zerograd-nn)."""
    module = pytest.importorskip("zerograd_cupy.nn_kernels", reason="needs zerograd-nn installed")
    return module.CupyKernels(gpu_backend)


@pytest.fixture(scope="module")
def generic(gpu_backend):
    """zerograd-nn's generic kernels on the same GPU arrays: the reference of the CUDA ones."""
    kernels = pytest.importorskip("zerograd_nn.kernels", reason="needs zerograd-nn installed")
    return kernels.Kernels(gpu_backend)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("c", [1, 10, 128, 129, 4097])
def test_softmax_and_cross_entropy_kernels_match_the_generic_path(
    nn_kernels, generic, cp, dtype, c
):
    """One launch each where rows are short (c <= 128 / 4096), the generic calls beyond;
    both agree with zerograd-nn's generic kernels run on the same GPU arrays."""
    rng = np.random.default_rng(3)
    x = cp.asarray((rng.standard_normal((33, c)) * 4).astype(dtype))
    rtol = 2e-6 if dtype == "float32" else 1e-13
    for lab in ("int64", "int32"):
        t = cp.asarray(rng.integers(0, c, 33).astype(lab))
        got = nn_kernels.cross_entropy_rows(x, t)
        want = generic.cross_entropy_rows(x, t)
        assert got.shape == (33,) and got.dtype == dtype
        np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(want), rtol=rtol, atol=1e-6)
    got, want = nn_kernels.softmax(x, 1), generic.softmax(x, 1)
    assert got.shape == x.shape and got.dtype == dtype
    np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(want), rtol=rtol, atol=1e-30)


def test_softmax_kernel_on_the_last_axis_of_3d_and_generic_on_another(nn_kernels, generic, cp):
    x = cp.asarray(np.random.default_rng(4).standard_normal((2, 3, 5)))
    for axis in (2, 1):
        got, want = nn_kernels.softmax(x, axis), generic.softmax(x, axis)
        np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(want), rtol=1e-13)
    xt = x.transpose(0, 2, 1)  # not contiguous: the kernel gets a contiguous copy
    got, want = nn_kernels.softmax(xt, 2), generic.softmax(xt, 2)
    np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(want), rtol=1e-13)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("c", [1, 10, 128, 129])
def test_cross_entropy_grad_kernel_matches_the_generic_path(nn_kernels, generic, cp, dtype, c):
    """One launch for rows up to 128 long, the generic calls beyond; both agree."""
    rng = np.random.default_rng(6)
    x = cp.asarray((rng.standard_normal((33, c)) * 4).astype(dtype))
    t = cp.asarray(rng.integers(0, c, 33))
    scale = cp.asarray(0.03, dtype=dtype)
    got, want = nn_kernels.cross_entropy_grad(x, t, scale), generic.cross_entropy_grad(x, t, scale)
    assert got.shape == x.shape and got.dtype == dtype
    rtol = 2e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(want), rtol=rtol, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_and_sigmoid_grad_kernels_give_the_generic_bits(nn_kernels, generic, cp, dtype):
    rng = np.random.default_rng(7)
    y = cp.asarray(np.maximum(rng.standard_normal((5, 7)), 0).astype(dtype))
    gy = cp.asarray(rng.standard_normal((5, 7)).astype(dtype))
    for name in ("relu_grad", "sigmoid_grad"):
        got, want = getattr(nn_kernels, name)(y, gy), getattr(generic, name)(y, gy)
        assert got.dtype == dtype
        assert cp.asnumpy(got).tobytes() == cp.asnumpy(want).tobytes(), name


def test_cross_entropy_kernel_gives_nan_for_a_label_out_of_range(nn_kernels, cp):
    x = cp.asarray(np.random.default_rng(5).standard_normal((3, 4)))
    got = cp.asnumpy(nn_kernels.cross_entropy_rows(x, cp.asarray([0, 4, -1])))
    assert np.isfinite(got[0]) and np.isnan(got[1]) and np.isnan(got[2])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shape, ids",
    [
        ((7, 3), np.random.default_rng(3).integers(0, 4, 2000)),  # long runs of each row
        ((6, 2, 4), np.array([[5, 0, 5], [-1, 2, 0]])),  # 2-D ids, a negative one
        ((50,), np.random.default_rng(4).integers(-50, 50, 300)),
    ],
)
def test_scatter_add_of_rows_is_numpy_bit_for_bit_on_every_run(gpu_backend, cp, dtype, shape, ids):
    # cupy.add.at's atomics sum a repeated row in any order; the sorted kernel in numpy's
    rng = np.random.default_rng(0)
    base = rng.standard_normal(shape).astype(dtype)
    values = (rng.standard_normal(ids.shape + shape[1:]) * 1e3).astype(dtype)
    want = base.copy()
    np.add.at(want, ids, values)
    for index in (cp.asarray(ids), ids, (cp.asarray(ids),)):  # a device, host or 1-tuple index
        for _ in range(3):
            got = cp.asnumpy(gpu_backend.scatter_add(cp.asarray(base), index, cp.asarray(values)))
            assert got.tobytes() == want.tobytes()


_MASK = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 1], [0, 1, 0]], dtype=bool)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shape, index",
    [
        ((3, 4), (np.array([0, 2, 2, 2, 0]), np.array([1, 3, 3, 3, 1]))),  # arrays in a tuple
        ((5, 6), (slice(None), np.random.default_rng(5).integers(0, 6, 40))),  # mixed
        ((4, 3), [3, 3, 0, 3, -1]),  # a list
        ((4, 3), _MASK),  # a mask picks each element once
        ((6, 5), (slice(1, 4), 2)),  # basic: added in place
    ],
)
def test_scatter_add_of_any_index_is_numpy_bit_for_bit(gpu_backend, cp, dtype, shape, index):
    rng = np.random.default_rng(1)
    base = rng.standard_normal(shape).astype(dtype)
    values = (rng.standard_normal(base[index].shape) * 1e3).astype(dtype)
    want = base.copy()
    np.add.at(want, index, values)
    items = index if type(index) is tuple else (index,)
    on_device = tuple(cp.asarray(i) if isinstance(i, (np.ndarray, list)) else i for i in items)
    for idx in (index, on_device):
        for _ in range(3):
            got = gpu_backend.scatter_add(cp.asarray(base), idx, cp.asarray(values))
            assert cp.asnumpy(got).tobytes() == want.tobytes()


def test_scatter_add_of_rows_broadcasts_and_refuses_an_index_out_of_range(gpu_backend, cp):
    a = cp.zeros((3, 2), dtype=cp.float32)
    got = gpu_backend.scatter_add(a, cp.asarray([2, 0, 2]), cp.float32(1.5))
    np.testing.assert_array_equal(cp.asnumpy(got), [[1.5, 1.5], [0, 0], [3.0, 3.0]])
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 3"):
        gpu_backend.scatter_add(a, cp.asarray([0, 3]), cp.ones((2, 2), cp.float32))
    with pytest.raises(IndexError, match="out of bounds"):
        gpu_backend.scatter_add(a, cp.asarray([-4]), cp.ones((1, 2), cp.float32))
    assert not cp.asnumpy(a).any()  # the input is left as it was


def test_gradient_of_repeated_rows_is_the_cpus_bit_for_bit(gpu_backend, cp):
    rng = np.random.default_rng(6)
    table = rng.standard_normal((5, 8)).astype(np.float32)
    ids = rng.integers(0, 5, 400)
    gy = rng.standard_normal((400, 8)).astype(np.float32)
    grads = []
    for arr in (np.asarray, cp.asarray):
        w = Variable(arr(table))
        F.sum(F.get_item(w, arr(ids)) * arr(gy)).backward()  # each picked row's gradient: gy
        grads.append(cp.asnumpy(w.grad.data) if arr is cp.asarray else w.grad.data)
    assert grads[0].tobytes() == grads[1].tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_replay_runs_its_chains_as_fused_kernels_with_the_eager_bits(
    gpu_backend, cp, dtype, monkeypatch
):
    start = np.linspace(-2.0, 2.0, 12).reshape(4, 3).astype(dtype)
    eager = fusion_steps.make(zerograd.Parameter(cp.asarray(start)))
    fused = zerograd.static_graph(fusion_steps.make(zerograd.Parameter(cp.asarray(start))))
    rng = np.random.default_rng(3)
    for _ in range(5):
        x = cp.asarray(rng.standard_normal((4, 3)).astype(dtype))
        for got, want in zip(fused(x), eager(x)):
            assert cp.asnumpy(got.data).tobytes() == cp.asnumpy(want.data).tobytes()
    assert fused.counts["replayed"] == 2
    monkeypatch.setattr(gpu_backend, "fuse", lambda chain, dtype: None)
    unfused = zerograd.static_graph(fusion_steps.make(zerograd.Parameter(cp.asarray(start))))
    for _ in range(3):
        unfused(x)
    # the chains its CPU twin finds (test_cupy_fusion_cpu.py)
    saved = fusion_steps.kernel_calls(unfused) - fusion_steps.kernel_calls(fused)
    assert saved == fusion_steps.SAVED
