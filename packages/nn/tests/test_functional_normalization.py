"""batch_norm and dropout: train/test behaviour, running statistics, gradients."""

import numpy as np
import pytest

import zerograd
import zerograd_nn.functional as F
from zerograd import Variable, test_mode, using_config
from zerograd.backends import as_numpy
from zerograd.testing import check_backward
from zerograd.testing.kinks import half


def np_batch_norm_train(x, gamma, beta, eps):
    axes = (0,) if x.ndim == 2 else (0, 2, 3)
    shape = (1, -1) if x.ndim == 2 else (1, -1, 1, 1)
    mu = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return gamma.reshape(shape) * (x - mu) / np.sqrt(var + eps) + beta.reshape(shape)


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 2, 3)])
def test_batch_norm_train_values_and_running_stats(rand, arr, to_np, shape):
    x, gamma, beta = rand(*shape) * 2 + 1, rand(3, seed=1), rand(3, seed=2)
    mean, var = arr(np.zeros(3)), arr(np.ones(3))
    y = F.batch_norm(x, gamma, beta, mean, var, decay=0.9, eps=2e-5)
    np.testing.assert_allclose(
        to_np(y), np_batch_norm_train(to_np(x), to_np(gamma), to_np(beta), 2e-5), rtol=1e-10
    )
    axes = (0,) if len(shape) == 2 else (0, 2, 3)
    m = to_np(x).size // 3
    np.testing.assert_allclose(to_np(mean), 0.1 * to_np(x).mean(axis=axes), rtol=1e-10)
    unbiased = to_np(x).var(axis=axes) * m / (m - 1)
    np.testing.assert_allclose(to_np(var), 0.9 + 0.1 * unbiased, rtol=1e-10)


def test_batch_norm_running_stats_in_variables(rand, arr, to_np):
    mean, var = Variable(arr(np.zeros(2))), Variable(arr(np.ones(2)))
    x = rand(6, 2)
    F.batch_norm(x, arr(np.ones(2)), arr(np.zeros(2)), mean, var, decay=0.5)
    np.testing.assert_allclose(to_np(mean), 0.5 * to_np(x).mean(axis=0), rtol=1e-10)


def test_batch_norm_test_mode_uses_running_stats(rand, arr, to_np):
    x, gamma, beta = rand(4, 3, 2, 2), rand(3, seed=1), rand(3, seed=2)
    mean, var = arr([0.5, -1.0, 2.0]), arr([1.0, 4.0, 0.25])
    with test_mode():
        y = F.batch_norm(x, gamma, beta, mean, var, eps=1e-3)
    s = (1, 3, 1, 1)
    ref = (to_np(x) - to_np(mean).reshape(s)) / np.sqrt(to_np(var).reshape(s) + 1e-3)
    ref = ref * to_np(gamma).reshape(s) + to_np(beta).reshape(s)
    np.testing.assert_allclose(to_np(y), ref, rtol=1e-10)
    np.testing.assert_array_equal(to_np(mean), [0.5, -1.0, 2.0])  # untouched in test mode


def test_batch_norm_keeps_float32(rand, arr):
    mean, var = arr(np.zeros(3), "float32"), arr(np.ones(3), "float32")
    g, b = arr(np.ones(3), "float32"), arr(np.zeros(3), "float32")
    y = F.batch_norm(rand(4, 3, dtype="float32"), g, b, mean, var)
    assert (
        as_numpy(y).dtype == np.float32
        and as_numpy(mean).dtype == np.float32
        and as_numpy(var).dtype == np.float32
    )


@pytest.mark.parametrize("shape", [(5, 3), (3, 3, 2, 2)])
@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_grad(rand, arr, shape, order, train):
    def f(x, gamma, beta):
        stats = arr(np.zeros(3)), arr(np.ones(3) * 1.5)
        if train:
            return F.batch_norm(x, gamma, beta, *stats)
        with test_mode():
            return F.batch_norm(x, gamma, beta, *stats)

    check_backward(f, rand(*shape), rand(3, seed=1), rand(3, seed=2), order=order)


def test_batch_norm_shape_errors(rand, arr):
    ones = arr(np.ones(3))
    with pytest.raises(ValueError, match=r"batch_norm: gamma has shape \(4,\) but x"):
        F.batch_norm(rand(2, 3), arr(np.ones(4)), ones, ones, ones)
    with pytest.raises(ValueError, match=r"expected x of shape \(N, C\) or \(N, C, \.\.\.\)"):
        F.batch_norm(rand(3), ones, ones, ones, ones)


def test_dropout_train_mode(arr, to_np):
    np.random.seed(0)
    x = arr(np.ones((200, 50)), "float32")
    y = F.dropout(x, dropout_ratio=0.3)
    out = to_np(y)
    assert as_numpy(y).dtype == np.float32
    kept = out != 0
    assert 0.65 < kept.mean() < 0.75
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)
    xv = Variable(x)
    y = F.dropout(xv, 0.3)
    F.sum(y).backward()
    np.testing.assert_array_equal(to_np(xv.grad) != 0, to_np(y) != 0)


def test_dropout_test_mode_is_identity(arr, to_np):
    x = arr(np.arange(6.0).reshape(2, 3))
    with test_mode():
        y = F.dropout(x, 0.9)
    np.testing.assert_array_equal(to_np(y), to_np(x))


def test_dropout_bad_ratio(arr):
    with pytest.raises(ValueError, match=r"dropout_ratio must be in \[0, 1\), got 1.0"):
        F.dropout(arr([1.0]), 1.0)


@pytest.mark.parametrize("ratio", [0.99999, 0.999999])
def test_float16_dropout_whose_scale_overflows_drops_to_zero_not_nan(backend, arr, to_np, ratio):
    # 1 / (1 - ratio) is past float16's 65504: the kept elements overflow to inf (PyTorch's
    # float16 mask does too), but the dropped ones are 0; 0 * inf made them nan
    zerograd.seed(3)
    keep = to_np(backend.rand(400_000)) > ratio
    assert 0 < keep.sum() < 20  # the checks below see kept and dropped elements
    zerograd.seed(3)
    x = Variable(half(arr, np.full(400_000, 0.5)))  # (skips where the backend has no float16)
    with pytest.warns(RuntimeWarning, match="overflow"):
        y = F.dropout(x, ratio)
    y.backward()
    for got in (to_np(y), to_np(x.grad)):
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, np.where(keep, np.inf, 0.0).astype(np.float16))
    zerograd.seed(3)  # a scale float16 holds is applied as before: 0.5 / (1 - 0.999)
    y = to_np(F.dropout(arr(np.full(400_000, 0.5), "float16"), 0.999))
    assert set(np.unique(y).tolist()) == {0.0, 500.0}


def test_batch_nrom_is_dezeros_spelling_of_batch_norm():
    assert F.batch_nrom is F.batch_norm
    assert "batch_nrom" in F.__all__


def _seed_where(backend, keep):
    """A seed whose first draw of the backend's generator keeps (or drops) at ratio 0.5."""
    for seed in range(100):
        zerograd.seed(seed)
        if (float(as_numpy(backend.rand())) > 0.5) == keep:
            return seed
    raise AssertionError("no seed in 0..99 gives that draw")


@pytest.mark.parametrize("train", [True, False])
def test_dropout_of_0d_input(backend, arr, to_np, train):
    # dropout draws from the backend's own generator (numpy's global state on numpy, as in
    # DeZero; the cupy backend's Philox stream on the GPU): zerograd.seed seeds them all
    zerograd.seed(_seed_where(backend, keep=True))
    x = Variable(arr(2.0))
    with using_config("train", train):
        y = F.dropout(x, 0.5)
    assert y.shape == ()
    y.backward()
    assert (float(to_np(y)), float(to_np(x.grad))) == ((4.0, 2.0) if train else (2.0, 1.0))
    zerograd.seed(_seed_where(backend, keep=False))
    with using_config("train", True):
        assert float(to_np(F.dropout(arr(2.0), 0.5))) == 0.0


def test_dropout_of_integers_is_not_truncated(backend, arr, to_np):
    zerograd.seed(1)
    mask = to_np(backend.rand(1, 4)) > 0.6
    assert 0 < mask.sum() < 4  # the check below sees kept and dropped elements
    zerograd.seed(1)
    y = F.dropout(arr([[1, 2, 3, 4]], "int64"), 0.6)
    assert as_numpy(y).dtype == np.float64
    np.testing.assert_allclose(to_np(y), np.array([[1, 2, 3, 4]]) * mask / 0.4, rtol=1e-12)


def test_dropout_on_numpy_draws_from_numpys_global_state_as_dezero_does():
    np.random.seed(0)
    assert np.random.RandomState(0).rand() > 0.5  # seed 0 keeps a single element
    assert float(F.dropout(np.array(2.0), 0.5).data) == 4.0
    np.random.seed(1)
    assert np.random.RandomState(1).rand() < 0.5  # seed 1 drops it
    assert float(F.dropout(np.array(2.0), 0.5).data) == 0.0


def test_dropout_ratio_must_be_a_number(arr):
    with pytest.raises(
        TypeError, match=r"^dropout: dropout_ratio must be a real number, got '0.5'"
    ):
        F.dropout(arr([1.0]), "0.5")
    with pytest.raises(ValueError, match=r"^dropout: dropout_ratio must be a number, not nan"):
        F.dropout(arr([1.0]), float("nan"))
    with pytest.raises(TypeError, match=r"^dropout: x must be a numeric array, a Variable"):
        F.dropout(None)


def test_batch_norm_argument_types(rand, arr, to_np):
    x, ones, zeros = rand(4, 3), arr(np.ones(3)), arr(np.zeros(3))
    with pytest.raises(TypeError, match=r"^batch_norm: gamma must be a numeric array"):
        F.batch_norm(x, None, zeros, arr(np.zeros(3)), arr(np.ones(3)))
    with pytest.raises(TypeError, match=r"^batch_norm: mean must be an array or a Variable"):
        F.batch_norm(x, ones, zeros, [0.0, 0.0, 0.0], arr(np.ones(3)))
    with pytest.raises(TypeError, match=r"^batch_norm: decay must be a real number, got 'a'"):
        F.batch_norm(x, ones, zeros, arr(np.zeros(3)), arr(np.ones(3)), decay="a")
    with test_mode():  # gamma and beta as lists
        y = F.batch_norm(x, [1.0, 1.0, 1.0], [0.0, 0.0, 0.0], zeros, ones)
    np.testing.assert_allclose(to_np(y), to_np(x) / np.sqrt(1 + 2e-5), rtol=1e-12)


def test_batch_norm_refuses_an_empty_training_batch_and_keeps_the_statistics(arr, to_np):
    mean, var = arr(np.array([0.5, 1.0])), arr(np.array([2.0, 3.0]))
    with pytest.raises(ValueError, match=r"^batch_norm: x of shape \(0, 2\) is an empty batch"):
        F.batch_norm(arr(np.zeros((0, 2))), arr(np.ones(2)), arr(np.zeros(2)), mean, var)
    assert to_np(mean).tolist() == [0.5, 1.0] and to_np(var).tolist() == [2.0, 3.0]
    with test_mode():
        assert F.batch_norm(
            arr(np.zeros((0, 2))), arr(np.ones(2)), arr(np.zeros(2)), mean, var
        ).shape == (0, 2)


def test_batch_norm_of_integers_computes_in_float(arr, to_np):
    x = np.array([[1, 2], [3, 6]])
    mean, var = arr(np.zeros(2)), arr(np.ones(2))
    y = F.batch_norm(arr(x, "int64"), arr(np.ones(2)), arr(np.zeros(2)), mean, var)
    ref = (x - x.mean(0)) / np.sqrt(x.var(0) + 2e-5)
    assert as_numpy(y).dtype == np.float64
    np.testing.assert_allclose(to_np(y), ref, rtol=1e-12)


def test_batch_norm_read_only_running_var_changes_nothing(rand, arr, to_np, backend):
    if backend.name != "numpy":
        pytest.skip(f"read-only arrays are a numpy feature; backend {backend.name!r} under test")
    mean, var = np.array([0.5, 1.0, 2.0]), np.array([2.0, 3.0, 4.0])
    var.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        F.batch_norm(rand(4, 3), np.ones(3), np.zeros(3), mean, var)
    assert mean.tolist() == [0.5, 1.0, 2.0] and var.tolist() == [2.0, 3.0, 4.0]


@pytest.mark.parametrize("which", ["mean", "var"])
def test_batch_norm_read_only_running_statistics_are_refused_in_words_of_its_own(
    rand, backend, which
):
    # numpy's own "assignment destination is read-only" came from inside the update; a
    # broadcast view (stride 0) is read-only too
    if backend.name != "numpy":
        pytest.skip(f"read-only arrays are a numpy feature; backend {backend.name!r} under test")
    stats = {"mean": np.array([0.5, 1.0, 2.0]), "var": np.array([2.0, 3.0, 4.0])}
    before = {k: v.copy() for k, v in stats.items()}
    stats[which] = np.broadcast_to(before[which][:1], (3,))
    with pytest.raises(
        ValueError,
        match=rf"^batch_norm: the running {which} is a read-only array \(a broadcast view, or "
        rf"flags\.writeable False\), which train mode updates in place; give a writable copy "
        rf"\({which}\.copy\(\)\), or use test mode\. Nothing was changed\.$",
    ):
        F.batch_norm(rand(4, 3), np.ones(3), np.zeros(3), stats["mean"], stats["var"])
    other = "var" if which == "mean" else "mean"
    np.testing.assert_array_equal(stats[other], before[other])
    with test_mode():  # nothing is written there: read-only statistics are fine
        y = F.batch_norm(np.ones((2, 3)), np.ones(3), np.zeros(3), stats["mean"], stats["var"])
    m, v = (np.broadcast_to(before[k][:1], (3,)) if k == which else before[k] for k in stats)
    np.testing.assert_allclose(y.data, np.broadcast_to((1 - m) / np.sqrt(v + 2e-5), (2, 3)))


def test_batch_norm_refuses_one_array_as_both_running_statistics(rand, arr, to_np):
    # the variance's update overwrote the mean's: the array ended holding the variance
    stats = arr(np.array([0.5, 1.0, 2.0]))
    with pytest.raises(ValueError, match=r"^batch_norm: mean and var are one object, which"):
        F.batch_norm(rand(4, 3), arr(np.ones(3)), arr(np.zeros(3)), stats, stats)
    assert to_np(stats).tolist() == [0.5, 1.0, 2.0]


@pytest.mark.parametrize("kw, shown", [({"eps": -1.0}, "eps=-1.0"), ({"decay": 2}, "decay=2.0")])
def test_batch_norm_refuses_out_of_range_eps_and_decay_and_changes_nothing(kw, shown):
    x = np.arange(6.0).reshape(2, 3)
    mean, var = np.zeros(3), np.ones(3)
    with pytest.raises(
        ValueError, match=rf"^batch_norm: decay must be in \[0, 1\] and eps > 0, .*{shown}"
    ):
        F.batch_norm(x, np.ones(3), np.zeros(3), mean, var, **kw)
    np.testing.assert_array_equal(mean, np.zeros(3))
    np.testing.assert_array_equal(var, np.ones(3))


@pytest.mark.parametrize("which", ["mean", "var"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_batch_norm_refuses_non_float_running_statistics_and_changes_nothing(
    arr, to_np, which, dtype
):
    x = arr(np.array([[0.0, 1.0, 2.0], [2.0, 3.0, 6.0]]))
    stats = {"mean": arr(np.zeros(3)), "var": arr(np.ones(3))}
    stats[which] = arr(np.array([0, 0, 1]), dtype)  # an update would truncate 1.2 to 1
    before = {k: to_np(v).copy() for k, v in stats.items()}
    with pytest.raises(
        TypeError,
        match=rf"^batch_norm: the running {which} has dtype \S*{dtype}\S*, but the running "
        rf"statistics are updated with fractional values, which it would truncate; give "
        rf"floating-point arrays \(e\.g\. {which}\.astype\('float32'\)\)\. Nothing was changed\.$",
    ):
        F.batch_norm(x, arr(np.ones(3)), arr(np.zeros(3)), stats["mean"], stats["var"])
    for k, v in stats.items():
        got = to_np(v)
        assert got.dtype == before[k].dtype and np.array_equal(got, before[k])
    as_variable = Variable(arr(np.array([0, 0, 1]), dtype))
    with pytest.raises(TypeError, match=rf"^batch_norm: the running {which} has dtype"):
        F.batch_norm(x, arr(np.ones(3)), arr(np.zeros(3)), **{**stats, which: as_variable})
    assert to_np(as_variable.data).tolist() == [0, 0, 1]
    with test_mode(), pytest.raises(TypeError, match=rf"^batch_norm: the running {which} has"):
        F.batch_norm(x, arr(np.ones(3)), arr(np.zeros(3)), stats["mean"], stats["var"])
